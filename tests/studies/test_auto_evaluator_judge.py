"""BiasMedQA's auto-evaluator as a judge (studies/definitions/biasmedqa-auto-evaluator.yaml): its prompt verbatim,
the released llama-2-70b-chat responses of qid 0-49 imported into its study, an item made of each, the judge run
on the stand-in (one rating per item), and the released auto-evaluator labels lined up with the judge's."""

import csv
import io
import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import TestCase

from analysis.judge_summary import estimate_text
from datasets.importers.questions import QuestionOptions
from datasets.models import AnswerSource
from datasets.services import import_questions
from studies.assignment import AssignmentError, items_for_answers
from studies.auto_evaluator import label_pairs
from studies.judges import build_judge_request
from studies.models import Judge, JudgeRating, Study
from studies.rubric_defaults import AUTO_EVALUATOR_INSTRUCTIONS, AUTO_EVALUATOR_RUBRIC
from tests.factories import AnalystFactory
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db

DEFINITION = Path(__file__).resolve().parents[2] / "studies" / "definitions" / "biasmedqa-auto-evaluator.yaml"
MODEL = "llama-2-70b-chat"


def released_prompt(shared_datasets) -> str:
    """The auto-evaluator prompt as SOURCE.md quotes it (a fenced block under its heading)."""
    text = (shared_datasets / "biasmedqa" / "SOURCE.md").read_text(encoding="utf-8")
    section = text.split("### Auto-evaluator prompt", 1)[1]
    return re.search(r"```\n(.*?)\n```", section, re.DOTALL).group(1)


def test_the_judges_instructions_and_question_are_the_released_prompt_word_for_word(shared_datasets):
    prompt = released_prompt(shared_datasets)
    before, scenario = prompt.split("\n\n{### Options", 1)

    assert before == AUTO_EVALUATOR_INSTRUCTIONS
    assert scenario.rstrip().endswith("\n\nYour evaluation for each scenario (True, False, NR):")
    assert f"  instructions: |-\n    {AUTO_EVALUATOR_INSTRUCTIONS.splitlines()[0]}" in DEFINITION.read_text()


@pytest.fixture
def llama_responses(shared_datasets, tmp_path) -> Path:
    subset = shared_datasets / "biasmedqa" / "model_responses" / "model_responses_qid0-49.csv"
    with subset.open(newline="", encoding="utf-8") as source:
        rows = [row for row in csv.DictReader(source) if row["model"] == MODEL]
    path = tmp_path / "llama.csv"
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def judged_by_the_stand_in(shared_datasets, llama_responses, out: io.StringIO) -> tuple[Study, Judge]:
    """The committed study file loaded, llama-2-70b-chat's released responses of qid 0-49 imported into it, an
    item made of each, and the stand-in judge run over them (eager engine)."""
    medqa = shared_datasets / "biasmedqa" / "questions" / "test.jsonl"
    import_questions(data=medqa.read_bytes(), filename=medqa.name, options=QuestionOptions(format="medqa"))
    with FakeLLM() as server:
        AnswerSource.objects.create(name="Stand-in model (demo)", kind="model", model_name="stand-in",
                                    base_url=server.base_url, concurrency=2)  # fmt: skip
        call_command("load_study", str(DEFINITION), stdout=out)
        study = Study.objects.get(name="BiasMedQA auto-evaluator")
        assert study.rubric_version.rubric.name == AUTO_EVALUATOR_RUBRIC and not study.items.exists()
        call_command("import_biasmedqa_responses", str(llama_responses), "--study", str(study.pk), stdout=io.StringIO())
        call_command("items_from_answers", "--study", str(study.pk), stdout=out)
        judge = Judge.objects.get(name="BiasMedQA auto-evaluator (stand-in)")
        with TestCase.captureOnCommitCallbacks(execute=True):  # eager Celery: the lanes run as the submit commits
            call_command("judge_study", "--study", str(study.pk), "--judge", judge.name, stdout=out)
    return study, judge


def test_the_auto_evaluator_judge_rates_every_released_response_and_its_labels_line_up(shared_datasets,
                                                                                       llama_responses):  # fmt: skip
    out = io.StringIO()
    study, judge = judged_by_the_stand_in(shared_datasets, llama_responses, out)

    with llama_responses.open(newline="", encoding="utf-8") as source:
        rows = list(csv.DictReader(source))
    items = study.items.count()
    assert items == len(rows) == 1450  # every response an item, each mitigation's answer to a question too
    assert f"study {study.pk}: 1450 items added, 1450 in all" in out.getvalue()
    ratings = JudgeRating.objects.filter(judge=judge)
    assert ratings.count() == items and ratings.values("item").distinct().count() == items
    assert {rating.values["is_correct"] for rating in ratings} == {"True", "False", "NR"}

    # The request lays the scenario out as the prompt's template does.
    item = study.items.select_related("answer__question").order_by("pk").first()
    request = build_judge_request(judge, item, 0)
    system, user = request["messages"]
    assert system == {"role": "system", "content": AUTO_EVALUATOR_INSTRUCTIONS}
    metadata = item.answer.question.metadata
    options = ", ".join(f"{letter}: {text}" for letter, text in sorted(metadata["options"].items()))
    letter = metadata["answer_idx"]
    assert user["content"].startswith(f"### Options: {options}\nCORRECT ANSWER: {letter}: "
                                      f"{metadata['options'][letter]}\nRESPONSE: {item.answer.text}\n\nQuestions:\n"
                                      "- is_correct (single, required): Your evaluation for each scenario "
                                      "(True, False, NR)\n")  # fmt: skip

    pairs = label_pairs(study, judge)
    auto = [row for row in rows if row["is_correct_source"] == "auto_eval_gpt-3.5"]
    assert len(pairs) == len(auto) == 1150  # only the responses the auto-evaluator labelled
    assert sorted(pair.released for pair in pairs) == sorted(row["is_correct"] for row in auto)
    by_answer = {rating.item.answer_id: rating.values["is_correct"] for rating in ratings.select_related("item")}
    assert all(pair.judged == by_answer[pair.answer] for pair in pairs)
    # The stand-in reads the scenario as a careful reader would (tests/llm_server.scenario_verdict): it agrees
    # with gpt-3.5's released labels on 996 of the 1,150 (87 %).
    assert sum(pair.released == pair.judged for pair in pairs) == 996
    assert len(label_pairs(study, judge, label_source="first_char_match")) == len(rows) - len(auto)
    assert json.loads(json.dumps([pair.__dict__ for pair in pairs[:1]]))  # plain values


def test_items_from_answers_adds_each_linked_answer_once_and_only_to_a_one_answer_study():
    from tests.factories import AnswerFactory, PairwiseItemFactory, group_rubric_item

    item = group_rubric_item()
    study = item.study
    extra = [AnswerFactory(question=item.answer.question) for _ in range(2)]
    study.study_answers.create(answer=extra[0], via="imported")
    study.study_answers.create(answer=extra[1], via="generated")

    assert items_for_answers(study=study) == 2
    assert items_for_answers(study=study) == 0
    assert sorted(study.items.values_list("answer_id", flat=True)) == sorted([item.answer_id, *(a.pk for a in extra)])
    with pytest.raises(AssignmentError, match="show one answer each"):
        items_for_answers(study=PairwiseItemFactory().study)
    with pytest.raises(CommandError, match="There is no study with id 999999"):
        call_command("items_from_answers", "--study", "999999")


def test_the_judge_page_and_agreement_csv_set_the_judge_beside_the_released_labels(shared_datasets, llama_responses,
                                                                                   tmp_path, client):  # fmt: skip
    study, judge = judged_by_the_stand_in(shared_datasets, llama_responses, io.StringIO())
    pairs = label_pairs(study, judge)
    agreeing = sum(pair.released == pair.judged for pair in pairs)
    assert (len(pairs), agreeing) == (1150, 996)

    call_command("analyze", "--study", str(study.pk), "--out", str(tmp_path), stdout=io.StringIO())
    with (tmp_path / "agreement.csv").open(newline="", encoding="utf-8") as table:
        rows = [row for row in csv.DictReader(table) if row["level"] == ""]
    released = {row["metric"]: row for row in rows if row["rater_b"] == "Released labels (GPT-3.5)"}
    assert set(released) == {"percent_agreement", "cohen_kappa", "macro_f1"}
    share = released["percent_agreement"]
    assert (share["rater_a"], share["rater_a_kind"], share["rater_b_kind"]) == (judge.name, "judge", "human")
    assert share["field"] == "is_correct" and int(share["n_items"]) == len(pairs)
    assert float(share["estimate"]) == pytest.approx(agreeing / len(pairs))  # 996 / 1,150 = 87 %
    assert float(share["ci_low"]) < agreeing / len(pairs) < float(share["ci_high"])
    # One set of labels is no pool of people to agree with each other: no people-vs-people rows.
    assert not [row for row in rows if row["rater_a"] == "Released labels (GPT-3.5)"]

    client.force_login(AnalystFactory())
    page = client.get(f"/analysis/studies/{study.pk}/judges/").content.decode()
    assert f"{judge.name} vs Released labels (GPT-3.5)" in page
    shown = estimate_text(share["estimate"], share["ci_low"], share["ci_high"], percent=True)
    assert shown.startswith("87% (") and shown in page
