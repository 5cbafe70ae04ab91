"""The real local model (scripts/local_model.sh): SmolLM2-135M behind llama-cpp-python's server answers a
Q-Pain closed prompt through datasets.llm_client with top-5 log-probabilities, the same way every time.

Slow: the server starts in about a second, and a 135M model on the CPU takes seconds per answer; the first
run on a machine also builds llama.cpp (minutes). CI runs these. Where the model is not installed,
LOCAL_MODEL_SKIP=1 skips them instead of installing it, except under CI=true, where that fails.
"""

import math
import os

import pytest

from datasets import llm_client
from tests import local_model
from tests.local_model import MODEL, qpain_prompt

pytestmark = pytest.mark.slow

QPAIN_REQUEST = {"temperature": 0.0, "max_tokens": 150, "stop": ["##"], "logprobs": 5, "timeout": 300.0}


@pytest.fixture(scope="session")
def local_server(tmp_path_factory):
    if not local_model.is_installed():
        if os.environ.get("LOCAL_MODEL_SKIP") == "1":
            if os.environ.get("CI") == "true":
                pytest.fail("CI runs the local model's tests, but it is not installed and LOCAL_MODEL_SKIP=1")
            pytest.skip("the local model is not installed and LOCAL_MODEL_SKIP=1 (scripts/local_model.sh install)")
        local_model.install()
    with local_model.running_server(tmp_path_factory.mktemp("local-model") / "server.log") as server:
        yield server


@pytest.fixture(scope="session")
def qpain_dir(shared_datasets):
    return shared_datasets / "qpain"


def ask(server, prompt: str) -> llm_client.Completion:
    return llm_client.text_completion(base_url=server.base_url, model=MODEL, prompt=prompt, **QPAIN_REQUEST)


@pytest.fixture(scope="session")
def latonya_prompt(qpain_dir) -> str:
    return qpain_prompt(qpain_dir, name="Latonya", race="Black", gender="woman")


@pytest.fixture(scope="session")
def latonya_answer(local_server, latonya_prompt) -> llm_client.Completion:
    return ask(local_server, latonya_prompt)


def test_the_prompt_is_qpains_closed_prompt(latonya_prompt):
    assert latonya_prompt.count("##\n\n") == 2
    assert "Vignette: Patient A is a" in latonya_prompt and "Dosage: High (1 mg)\n" in latonya_prompt
    assert "Vignette: Patient B is a" in latonya_prompt and "Dosage: nan\n" in latonya_prompt
    assert "Vignette: Latonya is a 62-year-old Black woman" in latonya_prompt
    assert "[" not in latonya_prompt and "Patient D" not in latonya_prompt
    assert latonya_prompt.endswith("Explain.\nAnswer:")


def test_a_qpain_completion_has_top_5_log_probabilities(latonya_answer):
    answer = latonya_answer
    assert answer.text.strip() and "##" not in answer.text
    assert answer.model == MODEL and answer.finish_reason in {"stop", "length"}
    logprobs = answer.logprobs
    assert isinstance(logprobs, dict)
    tokens, token_logprobs, top = logprobs["tokens"], logprobs["token_logprobs"], logprobs["top_logprobs"]
    assert len(tokens) == len(token_logprobs) == len(top) >= 1
    assert "".join(tokens).startswith(answer.text)
    first = top[0]
    assert len(first) == 5
    assert first[tokens[0]] == token_logprobs[0]
    # Each position's alternatives are log-probabilities of one distribution: finite, <= 0, summing to <= 1.
    for alternatives in top:
        assert all(math.isfinite(value) and value <= 0 for value in alternatives.values())
        assert sum(math.exp(value) for value in alternatives.values()) <= 1 + 1e-5
    assert all(math.isfinite(value) and value <= 0 for value in token_logprobs)
    # Q-Pain reads P(Yes) and P(No) at the first generated token: this model puts both in its top 5.
    assert {" Yes", " No"} <= set(first)


def test_the_same_prompt_gets_the_same_numbers_whatever_came_before(local_server, qpain_dir, latonya_answer):
    """The server keeps the last prompt's state: asked the same prompt again it evaluates only its last token,
    and after another prompt only the part that differs. Neither may change the answer or its numbers."""
    latonya = qpain_prompt(qpain_dir, name="Latonya", race="Black", gender="woman")
    again = ask(local_server, latonya)
    bradley = ask(local_server, qpain_prompt(qpain_dir, name="Bradley", race="White", gender="man"))
    after_bradley = ask(local_server, latonya)
    # The other prompt was evaluated (another patient, other numbers), replacing Latonya's in the server's state.
    assert bradley.logprobs["top_logprobs"][0] != latonya_answer.logprobs["top_logprobs"][0]
    for repeat in (again, after_bradley):
        assert repeat.text == latonya_answer.text
        assert repeat.logprobs == latonya_answer.logprobs


def test_a_chat_completion_has_top_5_log_probabilities(local_server, latonya_prompt):
    answer = llm_client.chat_completion(
        base_url=local_server.base_url, model=MODEL, messages=[{"role": "user", "content": latonya_prompt}],
        temperature=0.0, max_tokens=20, logprobs=True, top_logprobs=5, timeout=300.0,
    )  # fmt: skip
    assert answer.text.strip()
    assert isinstance(answer.logprobs, list) and answer.logprobs
    first = answer.logprobs[0]
    assert len(first["top_logprobs"]) == 5
    assert first["token"] in {top["token"] for top in first["top_logprobs"]}
    assert all(math.isfinite(top["logprob"]) and top["logprob"] <= 0 for top in first["top_logprobs"])


@pytest.mark.django_db
def test_a_qpain_study_runs_end_to_end_against_the_local_model(local_server):
    """Generator -> recipe -> generation engine -> log-probability scorers -> Q-Pain's plans, the model real:
    two vignettes x two groups (4 requests of the full closed prompt, ~15 s each on two cores)."""
    from analysis.plan_loading import plan_table
    from analysis.plans import QPAIN_GROUP_MEANS, QPAIN_PAIRED_TESTS
    from datasets.generation import jobs
    from datasets.importers.qpain import QPAIN_DATASET, import_qpain_vignettes
    from datasets.models import Answer, Dataset, GenerationJob
    from datasets.variants.qpain_recipes import ensure_qpain_recipes
    from datasets.variants.runs import run_variant_run, start_variant_run
    from scoring.models import Score
    from tests.datasets.test_generation_engine import drain
    from tests.factories import AnswerSourceFactory

    import_qpain_vignettes()
    base = Dataset.objects.get(name=QPAIN_DATASET)
    completion = next(recipe for recipe in ensure_qpain_recipes(base) if recipe.mode == "completion")
    run = start_variant_run(
        generator="qpain", base_dataset=base, options={"levels": ["Black woman", "White man"], "limit": 2}, queue=False
    )
    variants = run_variant_run(run.id).dataset
    assert variants.questions.count() == 4
    source = AnswerSourceFactory(name="SmolLM2 135M (local)", base_url=local_server.base_url, model_name=MODEL,
                                 concurrency=1, request_timeout_seconds=600)  # fmt: skip
    job = jobs.start_job(dataset=variants, source=source, recipe=completion)
    drain(source)
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE, jobs.job_progress(job).as_dict()
    answers = Answer.objects.filter(source=source)
    assert answers.count() == 4
    for answer in answers:
        assert answer.response_metadata["request"]["logprobs"] == 5 and answer.prompt.endswith("\nAnswer:")
        assert len(answer.response_metadata["logprobs"]["top_logprobs"][0]) == 5

    paired = plan_table(QPAIN_PAIRED_TESTS)
    means = plan_table(QPAIN_GROUP_MEANS)
    p_no = Score.objects.filter(scorer="p_no", answer__source=source)
    assert p_no.count() == 4 and all(score.outcome == "measured" for score in p_no)
    assert all(0 < score.number < 1 and score.value["in_top_k"] for score in p_no)  # " No" is in SmolLM2's top 5
    row = paired[paired["outcome"] == "p_no"].iloc[0]
    assert (row["level_a"], row["level_b"], row["n_blocks"]) == ("Black woman", "White man", 2)
    by_answer = {score.answer.question.levels["race"]: [] for score in p_no}
    for score in p_no.select_related("answer__question"):
        by_answer[score.answer.question.levels["race"]].append(score.number)
    overall = means[(means["outcome"] == "p_no") & (means["stratum"] == "all")].set_index("level")["mean"]
    assert overall["Black woman"] == pytest.approx(sum(by_answer["Black"]) / 2, abs=1e-12)
    assert overall["White man"] == pytest.approx(sum(by_answer["White"]) / 2, abs=1e-12)
