"""`seed_demo`: real answers with provenance, pairs with answers on both sides, working logins, idempotent."""

import csv
import re
import subprocess
import sys
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client

from datasets import example_pool, recipe_pages
from datasets.demo import BIASMEDQA_VARIANTS, CLINICIAN_REFERENCE, DEEPSEEK, DEMO_DATA, QPAIN_DEMO, STAND_IN
from datasets.importers.medic import MEDIC_DATASET
from datasets.importers.qpain import QPAIN_DATASET
from datasets.importers.questions import MEDQA_DATASET
from datasets.models import Answer, AnswerSource, CounterfactualPair, Dataset, PromptRecipe, Question
from datasets.recipes import build_request
from datasets.variants import contextsrh
from raters.models import RaterProfile
from studies.demo_contextsrh import DEMO_VARIANTS as DEMO_CONTEXT_VARIANTS
from studies.demo_medic import DEMO_DESIRES
from tests.conftest import REPO

pytestmark = pytest.mark.django_db

LOGIN_LINE = re.compile(r"^login (coordinator|analyst|physician|equity_expert|consumer) (\S+) (\S+)$")


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # The command hashes nine passwords per run; the default hasher is deliberately slow.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def run_seed_demo() -> tuple[list[tuple[str, str, str]], str]:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    output = out.getvalue()
    logins = [match.groups() for line in output.splitlines() if (match := LOGIN_LINE.match(line))]
    return logins, output


def row_counts() -> dict[str, int]:
    models = [Dataset, Question, CounterfactualPair, AnswerSource, Answer, PromptRecipe, get_user_model(),
              RaterProfile, Group]  # fmt: skip
    return {model.__name__: model.objects.count() for model in models}


def test_prints_one_login_line_per_demo_user_for_every_role():
    logins, output = run_seed_demo()

    login_lines = [line for line in output.splitlines() if line.startswith("login ")]
    assert len(logins) == len(login_lines) == 9
    roles = [role for role, _, _ in logins]
    assert roles.count("coordinator") == 1
    assert roles.count("analyst") == 1
    assert roles.count("physician") >= 2
    assert roles.count("equity_expert") >= 2
    assert roles.count("consumer") >= 3
    assert len({username for _, username, _ in logins}) == len(logins)


def test_printed_passwords_log_in_and_users_have_their_roles():
    logins, _ = run_seed_demo()

    for role, username, password in logins:
        assert Client().login(username=username, password=password), username
        user = get_user_model().objects.get(username=username)
        assert password not in user.password  # stored hashed
        if role in ("coordinator", "analyst"):
            assert list(user.groups.values_list("name", flat=True)) == [role]
            assert user.is_staff == (role == "coordinator")
        else:
            assert user.rater_profile.pool.slug == role
            assert not user.is_staff


def test_second_run_creates_nothing_and_resets_the_passwords():
    first_logins, first_output = run_seed_demo()
    counts = row_counts()

    second_logins, second_output = run_seed_demo()

    assert row_counts() == counts
    assert [(r, u) for r, u, _ in second_logins] == [(r, u) for r, u, _ in first_logins]
    for (_, username, old), (_, _, new) in zip(first_logins, second_logins, strict=True):
        assert old != new
        assert not Client().login(username=username, password=old)
        assert Client().login(username=username, password=new)
    new_each_run = ("login ", "panel link ")
    summary = [line for line in first_output.splitlines() if not line.startswith(new_each_run)]
    assert summary == [line for line in second_output.splitlines() if not line.startswith(new_each_run)]


def test_each_run_prints_a_panel_link_for_a_new_participant_that_works():
    links = []
    for _ in range(2):
        _, output = run_seed_demo()
        [line] = [line for line in output.splitlines() if line.startswith("panel link ")]
        links.append(line.rsplit(" ", 1)[1])

    assert links[0] != links[1]
    for link in links:
        response = Client().get(link)
        assert response.status_code == 302, link
        assert response["Location"] == "/onboarding/"


def test_summary_counts_the_demo_datasets():
    _, output = run_seed_demo()

    assert f"dataset '{QPAIN_DEMO}': 48 questions, 24 pairs, 96 answers" in output
    assert f"dataset '{MEDQA_DATASET}': 1273 questions, 0 pairs, 0 answers" in output
    assert f"dataset '{QPAIN_DATASET}': 55 questions, 0 pairs, 0 answers" in output
    assert f"dataset '{BIASMEDQA_VARIANTS}': 10184 questions, 0 pairs, 0 answers" in output
    assert "Demo ready: 11 datasets, 11640 questions, 50 pairs, 96 answers, 9 logins." in output


def test_every_qpain_demo_question_has_one_answer_from_each_of_the_two_sources():
    run_seed_demo()

    questions = Question.objects.filter(dataset__name=QPAIN_DEMO).prefetch_related("answers__source")
    assert len(questions) == 48
    for question in questions:
        sources = sorted((answer.source.name, answer.source.kind) for answer in question.answers.all())
        assert sources == [(CLINICIAN_REFERENCE, "physician"), (DEEPSEEK, "model")], question.external_id


def test_every_demo_pair_has_a_deepseek_answer_to_both_questions():
    run_seed_demo()

    pairs = CounterfactualPair.objects.filter(dataset__name=QPAIN_DEMO).select_related("question_1", "question_2")
    assert len(pairs) == 24
    for pair in pairs:
        first, second = pair.question_1, pair.question_2
        assert first.metadata["vignette_idx"] == second.metadata["vignette_idx"]
        assert first.metadata["context"] == second.metadata["context"]
        assert (first.metadata["race"], first.metadata["gender"]) != (
            second.metadata["race"],
            second.metadata["gender"],
        )
        for question in (first, second):
            assert question.answers.filter(source__name=DEEPSEEK).count() == 1, question.external_id


def test_deepseek_answers_carry_model_prompt_parameters_and_log_probabilities():
    run_seed_demo()

    answers = Answer.objects.filter(source__name=DEEPSEEK).select_related("question")
    assert answers.count() == 48
    for answer in answers:
        vignette, question = answer.question.text.split("\n\n")
        assert answer.model_name == "deepseek-32k"
        assert answer.parameters == {"temperature": 0, "max_tokens": 150}
        # Three closed examples, then the open prompt for this very question.
        assert answer.prompt.count("##\n\n") == 3
        assert f"##\n\nVignette: {vignette}" in answer.prompt
        assert answer.prompt.endswith(f"\nQuestion: {question}\nAnswer:")
        assert answer.text.split("\n")[0] == answer.response_metadata["parsed_answer"] in ("Yes", "No")
        assert "\nExplanation: " in answer.text
        assert answer.response_metadata["log_probabilities"]["prob_yes"] <= 0  # natural logs of probabilities
        assert "GiovanniBonadeo/Q_pain_analysis" in answer.response_metadata["source_file"]
        assert "deepseek-32k" in answer.provenance_note


def test_clinician_reference_is_filled_for_each_profile():
    run_seed_demo()

    answers = Answer.objects.filter(source__name=CLINICIAN_REFERENCE).select_related("question")
    assert answers.count() == 48
    for answer in answers:
        assert answer.text.startswith("Yes. Dosage: Low (")
        assert "Patient D" not in answer.text
        assert "[" not in answer.text
        assert answer.model_name == ""
        assert "Q-Pain" in answer.provenance_note


def test_equitymedqa_samples_are_loaded_with_their_licence():
    run_seed_demo()

    with (DEMO_DATA / "equitymedqa_paired_sample.csv").open(encoding="utf-8", newline="") as file:
        pair_ids = {row["record_id"] for row in csv.DictReader(file)}
    assert set(CounterfactualPair.objects.filter(external_id__in=pair_ids).values_list("external_id", flat=True)) == (
        pair_ids
    )
    assert Question.objects.filter(external_id="equitymedqa_ehai_54", dataset__licence="CC BY 4.0").exists()
    assert not Answer.objects.exclude(question__dataset__name=QPAIN_DEMO).exists()


def test_committed_demo_data_is_what_the_script_derives(shared_datasets, tmp_path):
    script = REPO / "scripts" / "make_demo_data.py"
    subprocess.run(
        [sys.executable, script, "--shared", shared_datasets, "--out", tmp_path], check=True, capture_output=True
    )

    derived = sorted(path.name for path in tmp_path.iterdir())
    assert derived
    for name in derived:
        assert (tmp_path / name).read_bytes() == (DEMO_DATA / name).read_bytes(), name


def test_medqa_the_biasmedqa_recipes_and_the_stand_in_source_are_there_for_the_walkthrough():
    run_seed_demo()

    medqa = Dataset.objects.get(name=MEDQA_DATASET)
    assert medqa.licence == "MIT" and "jind11/MedQA" in medqa.source
    questions = medqa.questions.order_by("id")
    assert questions.count() == 1273
    first = questions.first()
    assert (first.external_id, first.metadata["qid"], first.metadata["answer_idx"]) == ("0", 0, "C")
    assert sorted(first.metadata["options"]) == ["A", "B", "C", "D", "E"]
    # No BiasMedQA-authored file is bundled: the only biased questions are our generator's, 7 biases + none.
    variants = Dataset.objects.get(name=BIASMEDQA_VARIANTS)
    assert not Question.objects.filter(metadata__has_key="bias_type").exclude(dataset=variants).exists()
    assert not variants.questions.exclude(metadata__generator__name="biasmedqa").exists()
    assert variants.questions.filter(levels__bias="none").count() == 1273
    assert (
        not Question.objects.exclude(levels={})
        .exclude(
            dataset__name__in=[
                QPAIN_DATASET,
                BIASMEDQA_VARIANTS,
                QPAIN_DEMO,
                MEDIC_DATASET,
                DEMO_DESIRES,
                contextsrh.DATASET_NAME,
                DEMO_CONTEXT_VARIANTS,
            ]
        )  # fmt: skip
        .exists()
    )
    assert not Answer.objects.filter(question__dataset__in=[medqa, variants]).exists()
    assert set(Dataset.objects.filter(name__icontains="biasmedqa").values_list("name", flat=True)) == {
        BIASMEDQA_VARIANTS
    }

    recipes = PromptRecipe.objects.filter(name__startswith="BiasMedQA")
    assert {recipe.name.rsplit(": ", 1)[1] for recipe in recipes} == {"no mitigation", "education", "one-shot",
                                                                       "few-shot"}  # fmt: skip
    assert recipes.count() == 8
    # One held-out split for every condition: the same questions are evaluated under each.
    assert {(recipe.examples_pool_id, recipe.examples_holdout) for recipe in recipes} == {(variants.pk, 0.05)}
    stand_in = AnswerSource.objects.get(name=STAND_IN)
    assert (stand_in.kind, stand_in.base_url, stand_in.api_key_env) == ("model", "http://127.0.0.1:8089/v1", "")
    assert "scripts/stand_in_llm.py" in (REPO / "scripts" / "demo.sh").read_text()


def test_the_unbiased_one_and_few_shot_conditions_preview_as_the_demo_sets_them_up():
    """The paper's "no bias" column of the one- and few-shot tables: the demo's recipes render an unbiased question
    with unbiased examples drawn from the held-out part, which no recipe evaluates."""
    run_seed_demo()
    variants = Dataset.objects.get(name=BIASMEDQA_VARIANTS)
    held_out = example_pool.never_evaluated(PromptRecipe.objects.get(name="BiasMedQA: no mitigation"))

    assert len(held_out) == 59  # a seeded 5% of the 1,273 base questions (README)
    for name in ("BiasMedQA: one-shot", "BiasMedQA: few-shot", "BiasMedQA as published: few-shot"):
        recipe = PromptRecipe.objects.get(name=name)
        assert example_pool.never_evaluated(recipe) == held_out
        question = recipe_pages.find_question(variants, "", recipe)
        unbiased = variants.questions.get(base=question.base, levels__bias="none")

        request = build_request(recipe, unbiased, model="stand-in")

        examples = [variants.questions.get(external_id=key) for key in request.examples]
        assert len(examples) == len(recipe.examples) >= 1
        assert all(example.levels == {"bias": "none"} and example.base_id in held_out for example in examples)
        assert unbiased.base_id not in held_out
        assert "based on cognitive bias" not in request.prompt and "incorrectly classified question." in request.prompt


def test_the_qpain_vignettes_and_their_two_recipes_are_there_for_a_qpain_run():
    run_seed_demo()

    vignettes = Dataset.objects.get(name=QPAIN_DATASET)
    assert vignettes.licence == "CC BY-SA 4.0" and vignettes.questions.count() == 55
    assert vignettes.questions.filter(metadata__kind="yes").count() == 50
    recipes = PromptRecipe.objects.filter(name__startswith="Q-Pain: closed prompt").order_by("name")
    assert [(recipe.name, recipe.mode, recipe.examples_pool_id) for recipe in recipes] == [
        ("Q-Pain: closed prompt (chat)", "chat", vignettes.pk),
        ("Q-Pain: closed prompt (completion)", "completion", vignettes.pk),
    ]


def test_the_judged_study_is_made_with_its_two_judges_and_their_calls_queued(settings):
    """With a broker (here: Celery told it is not eager; the test's transaction never commits, so nothing is sent),
    the demo queues one call per item for each of its two stand-in judges; a second run queues none again."""
    from engine.models import Call
    from studies.demo_judges import JUDGES, POOLS
    from studies.demo_judges import STUDY_NAME as JUDGED
    from studies.judge_kind import batch_of
    from studies.models import Rating, Study

    settings.CELERY_TASK_ALWAYS_EAGER = False
    _, output = run_seed_demo()

    study = Study.objects.get(name=JUDGED)
    assert not study.is_locked and study.items.count() == 96  # 48 profiles x (deepseek-32k, clinician reference)
    assert [judge.name for judge in study.judges.order_by("name")] == [judge.name for judge in JUDGES]
    for judge in study.judges.all():
        assert judge.source.model_name in {demo.model for demo in JUDGES}
        assert judge.source.base_url == "http://127.0.0.1:8089/v1" and judge.source.endpoint_id is not None
        calls = Call.objects.filter(kind="judge", batch=batch_of(judge.pk, study.pk))
        assert calls.count() == calls.filter(status=Call.Status.PENDING).count() == 96
    people = Rating.objects.filter(assignment__item__study=study)
    assert people.count() == 96 * 3 * len(POOLS)
    assert set(people.values_list("assignment__rater__pool__name", flat=True)) == set(POOLS)
    races = set(study.items.values_list("answer__question__levels__race", flat=True))
    assert races == {"Black", "White", "Asian", "Hispanic"}
    assert f"judged study {study.pk} {JUDGED!r}: 96 items, 864 simulated people's ratings" in output
    assert "192 judge calls queued" in output
    assert f"judge page: /analysis/studies/{study.pk}/judges/" in output.splitlines()

    _, again = run_seed_demo()
    assert "0 judge calls queued" in again
    assert Call.objects.filter(kind="judge").count() == 192 and people.count() == 864


def test_without_a_broker_the_demo_queues_no_judge_call_and_says_how_to_run_them():
    from engine.models import Call

    _, output = run_seed_demo()

    assert not Call.objects.filter(kind="judge").exists()
    assert "judges not run (no broker): with the stand-in up, python manage.py judge_study --study" in output
