"""`manage.py generate_answers`: start, wait, retry failed questions, resume; refused and unknown names.

The command runs in autocommit, as it does from a shell: these tests commit for real (transactional), so the
lanes a job dispatches at commit run inline with eager Celery, and the job finishes before --wait looks.
"""

import types
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from datasets.generation import answer_kind, jobs
from datasets.management.commands import generate_answers
from datasets.models import Answer, GenerationJob
from engine.models import Call
from tests.factories import AnswerSourceFactory, DatasetFactory, QuestionFactory
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _eager_celery():
    """No broker, as by default here: an integration test earlier in the session may have set the app on one."""
    from config.celery import app

    saved = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = saved


@pytest.fixture(autouse=True)
def _bounded_waiting(monkeypatch):
    """--wait polls once a second until the job finishes; here a job left unfinished fails the test instead."""
    polls = []

    def sleep(seconds):
        polls.append(seconds)
        if len(polls) > 20:
            pytest.fail("generate_answers --wait kept waiting for a job that should have finished")

    monkeypatch.setattr(generate_answers, "time", types.SimpleNamespace(sleep=sleep))


@pytest.fixture
def dataset():
    dataset = DatasetFactory(name="Sample")
    for n in range(4):
        QuestionFactory(dataset=dataset, external_id=f"q{n}", text=f"Question {n}: is this dose right?")
    return dataset


def model_source(base_url, **fields):
    defaults = {"name": "Fake GPT", "base_url": base_url, "model_name": "fake-model", "concurrency": 2,
                "request_timeout_seconds": 5}  # fmt: skip
    return AnswerSourceFactory(**{**defaults, **fields})


def run(*args) -> str:
    out = StringIO()
    call_command("generate_answers", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_a_job_is_started_and_waited_for(dataset):
    with FakeLLM() as server:
        source = model_source(server.base_url)
        output = run("--dataset", "Sample", "--source", "Fake GPT", "--wait")

    job = GenerationJob.objects.get()
    assert f"Job {job.id}: 4 questions to answer, 0 already present" in output
    assert f"Job page: /datasets/generation/{job.id}/" in output
    assert "4/4 answered, 0 failed" in output and f"Job {job.id} finished: 4 answered" in output
    assert job.status == GenerationJob.Status.DONE
    assert Answer.objects.filter(source=source).count() == 4 and len(server.requests) == 4


def test_running_it_again_asks_nothing_and_counts_what_is_there(dataset):
    with FakeLLM() as server:
        model_source(server.base_url)
        run("--dataset", "Sample", "--source", "Fake GPT")
        QuestionFactory(dataset=dataset, external_id="new", text="A question added since")
        output = run("--dataset", "Sample", "--source", "Fake GPT", "--wait")

    assert ": 1 questions to answer, 4 already present" in output
    assert len(server.requests) == 5 and Answer.objects.count() == 5


def test_without_wait_it_prints_no_progress_lines(dataset):
    with FakeLLM() as server:
        model_source(server.base_url)
        output = run("--dataset", "Sample", "--source", "Fake GPT")

    assert "4 questions to answer" in output and "answered," not in output and "finished:" not in output


def test_failures_end_with_an_error_saying_how_to_retry_and_retry_failed_answers_them(dataset):
    with FakeLLM(failures=100, failure_status=401) as server:
        model_source(server.base_url)
        with pytest.raises(CommandError) as failed:
            run("--dataset", "Sample", "--source", "Fake GPT", "--wait")
        job = GenerationJob.objects.get()
        assert str(failed.value).startswith("4 questions failed")
        assert f"generate_answers --retry-failed {job.id} --wait" in str(failed.value)
        assert jobs.job_progress(job).failed == 4

        server.failures = 0  # the cause is fixed
        output = run("--retry-failed", str(job.id), "--wait")

    assert f"Job {job.id}: 4 failed questions queued again" in output
    assert "4/4 answered, 0 failed" in output
    job.refresh_from_db()
    assert job.status == GenerationJob.Status.DONE and Answer.objects.count() == 4


def test_resume_sends_a_jobs_lost_lanes_and_waits(dataset):
    with FakeLLM() as server:
        source = model_source(server.base_url)
        # A job whose queued lanes were lost (a broker restart, say): its calls exist, nothing is running them.
        job = GenerationJob.objects.create(dataset=dataset, source=source, parameters=source.generation_settings(),
                                           settings_hash="lost")  # fmt: skip
        Call.objects.bulk_create(
            Call(kind=answer_kind.KIND, endpoint=source.endpoint, batch=answer_kind.batch_of(job.id),
                 subject=answer_kind.subject_for(job.id, question.id))
            for question in dataset.questions.all()
        )  # fmt: skip
        output = run("--resume", str(job.id), "--wait")
        finished = run("--resume", str(job.id))

    assert f"Job {job.id}: lanes sent to the workers again" in output and "4/4 answered, 0 failed" in output
    assert f"Job {job.id} has finished (finished): nothing to resume" in finished
    assert len(server.requests) == 4


def test_a_cancelled_job_cannot_be_retried():
    source = model_source("http://127.0.0.1:9/v1")
    job = GenerationJob.objects.create(dataset=DatasetFactory(), source=source, parameters={}, settings_hash="x")
    jobs.cancel_job(job)
    with pytest.raises(CommandError, match="cancelled; start a new one"):
        run("--retry-failed", str(job.id))


def test_unknown_names_list_what_there_is(dataset):
    model_source("http://127.0.0.1:9/v1")
    AnswerSourceFactory(name="Physicians", kind="physician")
    with pytest.raises(CommandError, match=r"No dataset named 'Nope'\. Datasets: 'Sample'\."):
        run("--dataset", "Nope", "--source", "Fake GPT")
    with pytest.raises(
        CommandError, match=r"No answer source named 'Nope'\. Model sources with an endpoint: 'Fake GPT' "
    ):
        run("--dataset", "Sample", "--source", "Nope")
    with pytest.raises(CommandError, match="No generation job 999999"):
        run("--retry-failed", "999999")
    assert not GenerationJob.objects.exists()


def test_a_refused_job_is_a_command_error(dataset):
    AnswerSourceFactory(name="Physicians", kind="physician")
    with pytest.raises(CommandError, match="Physicians is not a model source"):
        run("--dataset", "Sample", "--source", "Physicians")
    assert not GenerationJob.objects.exists()


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--dataset", "Sample"],
        ["--source", "Fake GPT", "--retry-failed", "1"],
        ["--resume", "1", "--retry-failed", "1"],
    ],
)
def test_options_must_name_one_thing_to_do(args):
    with pytest.raises(CommandError, match="Give"):
        run(*args)


def test_a_job_under_a_named_recipe_sends_the_recipes_request_and_an_unknown_recipe_is_refused(dataset):
    from datasets.models import PromptRecipe

    recipe = PromptRecipe.objects.create(
        name="Plain completion", mode=PromptRecipe.Mode.COMPLETION, item_template="Q: {question}\nA:",
        max_tokens=20, stop=["##"],
    )  # fmt: skip
    with FakeLLM() as server:
        AnswerSourceFactory(name="Stand-in", base_url=server.base_url, model_name="stand-in", concurrency=1)
        with pytest.raises(CommandError, match="No prompt recipe named 'Nope'. Recipes: 'Plain completion'"):
            call_command("generate_answers", dataset="Sample", source="Stand-in", recipe="Nope", stdout=StringIO())
        call_command("generate_answers", dataset="Sample", source="Stand-in", recipe="Plain completion", wait=True,
                     stdout=StringIO())  # fmt: skip
    job = GenerationJob.objects.get()
    assert job.recipe == recipe and job.status == GenerationJob.Status.DONE
    assert sorted(body["prompt"] for body in server.requests) == [f"Q: Question {n}: is this dose right?\nA:"
                                                                  for n in range(4)]  # fmt: skip
    assert all(body["stop"] == ["##"] and body["max_tokens"] == 20 for body in server.requests)
    assert Answer.objects.count() == 4
