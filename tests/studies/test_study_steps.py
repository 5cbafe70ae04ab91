"""A study file's `steps` (studies/study_steps.py): checked with the rest of the file (every problem with its
line), made as generation steps with their output datasets, written back byte for byte, and run by
`run_steps --study` (eagerly here: no broker) into a chain of questions the study's `questions` then names."""

import io
import textwrap

import pytest
from django.core.management import CommandError, call_command

from datasets.chains.medic_templates import ensure_medic_recipes, recipe_name
from datasets.models import Dataset, PromptRecipe, Question, QuestionStep
from studies.study_files import export_study, load_study_text
from studies.study_yaml import StudyFileError
from tests.factories import AnswerSourceFactory, DatasetFactory, QuestionFactory
from tests.llm_server import FakeLLM

ASK, RESTYLE = recipe_name("desire to question", "mistral"), recipe_name("restyle", "mistral")
CHAIN = f"""\
format: 1
name: Chained study
steps:
- name: Ask
  source: Maker
  recipe: {ASK}
  input_dataset: Desires
  input_levels: {{step: desire}}
  output: Chained questions
  expansions:
  - {{style: standard}}
  phrases:
    extra_string: {{factor: style, cases: {{standard: ''}}, default: ', who {{style}},'}}
  output_levels: {{step: question}}
- name: Restyle
  source: Maker
  recipe: {RESTYLE}
  after: Ask
  start: after
  output: Chained restyled
  expansions:
  - {{style: writes concisely}}
  - {{style: writes with no capitalization}}
  phrases:
    extra_string: {{factor: style, cases: {{standard: ''}}, default: ' in the style of someone who {{style}},'}}
  samples: 2
  seed: 3
questions:
- dataset: Chained restyled
"""


def problems_of(text: str) -> list[str]:
    with pytest.raises(StudyFileError) as raised:
        load_study_text(textwrap.dedent(text))
    return [str(problem) for problem in raised.value.problems]


@pytest.fixture
def desires(db):
    ensure_medic_recipes(PromptRecipe)  # import_medic makes them with MEDIC's data
    dataset = DatasetFactory(name="Desires")
    for n, topic in enumerate(["cold symptoms while pregnant", "sleep problems on antidepressants"]):
        QuestionFactory(dataset=dataset, external_id=f"d{n}", text=topic, levels={"step": "desire"})
    return dataset


def test_steps_load_with_their_outputs_and_export_byte_for_byte(desires):
    AnswerSourceFactory(name="Maker", base_url="http://127.0.0.1:9/v1", model_name="maker")
    loaded = load_study_text(CHAIN)
    assert "dataset Chained questions" in loaded.created and "dataset Chained restyled" in loaded.created
    ask, restyle = QuestionStep.objects.get(name="Ask"), QuestionStep.objects.get(name="Restyle")
    assert (ask.input_dataset, ask.output.name, ask.expansions) == (
        desires,
        "Chained questions",
        [{"style": "standard"}],
    )
    assert (restyle.after, restyle.start, restyle.samples, restyle.seed) == (ask, "after", 2, 3)
    assert restyle.phrases["extra_string"]["default"] == " in the style of someone who {style},"
    exported = export_study(loaded.study)
    assert "- name: Restyle\n  description: ''\n  source: Maker\n" in exported  # the defaults written out
    assert load_study_text(exported).outcome == "unchanged"
    assert export_study(load_study_text(exported).study) == exported


def test_every_problem_of_a_step_is_reported_with_its_line(desires):
    AnswerSourceFactory(name="No endpoint")
    AnswerSourceFactory(name="Maker", base_url="http://127.0.0.1:9/v1")
    text = CHAIN.replace("source: Maker", "source: No endpoint", 1).replace("after: Ask", "after: Later")
    text = text.replace("recipe: " + RESTYLE, "recipe: No such recipe")
    text = text.replace("  output: Chained restyled", "  output: Chained questions")
    problems = problems_of(text)
    assert "line 5, steps[0].source: 'No endpoint' has no endpoint (base URL): a step's source is a model to ask" in (
        problems
    )
    assert problems[1:] == [
        "line 17, steps[1].recipe: no prompt recipe named 'No such recipe'",
        "line 18, steps[1].after: no earlier step named 'Later' in this file",
        "line 20, steps[1].output: 'Chained questions' is the output of an earlier step: each step has its own",
        "line 29, questions[0].dataset: no dataset named 'Chained restyled'",  # no step of the file makes it now
    ]
    assert not Dataset.objects.filter(name__startswith="Chained").exists()  # nothing was created


@pytest.fixture
def eager_celery():
    """No broker: the lanes dispatched at commit run here (as the command does without a worker)."""
    from config.celery import app

    saved = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = saved


@pytest.mark.django_db(transaction=True)
def test_run_steps_makes_the_chain_and_a_second_run_queues_nothing(eager_celery):
    ensure_medic_recipes(PromptRecipe)
    desires = DatasetFactory(name="Desires")
    for n, topic in enumerate(["cold symptoms while pregnant", "sleep problems on antidepressants"]):
        QuestionFactory(dataset=desires, external_id=f"d{n}", text=topic, levels={"step": "desire"})
    with FakeLLM() as server:
        AnswerSourceFactory(name="Maker", base_url=server.base_url, model_name="maker", concurrency=2)
        study = load_study_text(CHAIN).study
        out = io.StringIO()
        call_command("run_steps", "--study", str(study.pk), "--wait", "--poll", "0.05", "--timeout", "60", stdout=out)
        again = io.StringIO()
        call_command("run_steps", "--study", str(study.pk), stdout=again)
    assert Question.objects.filter(dataset__name="Chained questions").count() == 2
    restyled = Question.objects.filter(dataset__name="Chained restyled")
    assert restyled.count() == 2 * 2 * 2
    assert {q.base.dataset.name for q in restyled} == {"Chained questions"}
    assert "step Restyle: 8 questions made (8 usable, 0 flagged), 0 duplicates" in out.getvalue()
    assert again.getvalue() == "step Ask: 0 calls queued\nstep Restyle: 0 calls queued\n"


def test_run_steps_says_what_is_missing(desires):
    with pytest.raises(CommandError, match="Name the steps"):
        call_command("run_steps")
    with pytest.raises(CommandError, match="No generation step named 'Nope'"):
        call_command("run_steps", "--step", "Nope")
