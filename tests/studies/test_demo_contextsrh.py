"""The demo's small ContextSRH study (studies/demo_contextsrh.py), run end to end in this process against the stand-in
as scripts/demo.sh starts it: 8 questions and their 64 context variants, answered by two sources, every context
answer compared with its source's answer without context, the answers without context rated by two experts
(simulated); the requests of an original and its variants differ by the context sentence only; the page shows
Table 1; the committed contextsrh.yaml is the same design at full size."""

import json

import pytest
from django.urls import reverse

from analysis.services import contextsrh_report
from datasets.demo import STAND_IN_PORT, seed_demo
from datasets.models import Answer, Question
from scoring.models import AnswerEmbedding, Score
from studies.contextsrh_definition import DEFINITION, definition_text
from studies.demo_contextsrh import DEMO_QUESTIONS, DEMO_VARIANTS, STUDY_NAME, run_contextsrh, seed_contextsrh
from studies.models import Rating
from tests.factories import AnalystFactory
from tests.llm_server import FakeLLM

pytestmark = pytest.mark.django_db


def test_the_committed_contextsrh_file_is_the_design_at_full_size():
    assert DEFINITION.read_text(encoding="utf-8") == definition_text()


def _without_content(body: dict) -> str:
    """A chat request with its user message's text left out: everything a comparison must keep equal."""
    kept = {**body, "messages": [{**m, "content": None} for m in body["messages"]]}
    return json.dumps(kept, sort_keys=True)


def test_the_demo_contextsrh_study_runs_end_to_end_on_the_stand_in(client):
    seed_demo()
    demo = seed_contextsrh(run=False)  # no stand-in yet: made, not run
    study = demo.study
    assert (demo.ran, study.name, study.items.count()) == (False, STUDY_NAME, 0)
    assert Question.objects.filter(dataset__name="ContextSRH (context variants, contextsrh v1)").count() == 1518
    variants = Question.objects.filter(dataset__name=DEMO_VARIANTS).select_related("base")
    assert variants.count() == 64

    with FakeLLM(port=STAND_IN_PORT) as fake:
        run_contextsrh(study)
        again = seed_contextsrh(run=False)  # a second seed adds nothing
    assert again.study == study

    # Science: per source, an original's request and each of its variants' requests are the same request but for the
    # question, and the variant's question is the original's with the context sentence appended after one space.
    by_text = {(body["model"], body["messages"][-1]["content"]): body for body in fake.requests if "messages" in body}
    for variant in variants:
        sentence = variant.metadata["context"]
        assert variant.text == f"{variant.base.text.rstrip()} {sentence}"
        for model in ("stand-in-answer-a", "stand-in-answer-b"):
            original, context = by_text[(model, variant.base.text)], by_text[(model, variant.text)]
            assert _without_content(original) == _without_content(context)
            assert original["temperature"] == 0 and "max_tokens" in original

    answers = Answer.objects.filter(study_links__study=study)
    assert answers.count() == 2 * (8 + 64)
    scores = Score.objects.filter(answer__in=answers, scorer="minilm_cosine")
    assert scores.filter(outcome="measured").count() == 2 * 64
    assert AnswerEmbedding.objects.filter(answer__in=answers).count() == 2 * (8 + 64)  # each answer embedded once
    assert study.items.count() == 2 * 8 and all(item.is_attention_check for item in study.items.all())
    assert Rating.objects.filter(assignment__item__study=study).count() == 2 * 15  # each rates all 16 but one

    report = contextsrh_report(study)
    similarity = report.similarity.set_index(["source", "attribute", "group"])
    source = "Stand-in answerer A (demo)"
    # The stand-in strays further from its answer without context the further the group is from the one it
    # favours (25-year-olds, women, Massachusetts).
    assert similarity.loc[(source, "age", "25"), "avg_similarity"] > similarity.loc[(source, "age", "70"),
                                                                                     "avg_similarity"]  # fmt: skip
    assert similarity.loc[(source, "sex", "female"), "pct_win"] == 100
    assert similarity.loc[(source, "location", "Massachusetts"), "pct_win"] == 100
    assert set(report.group_tests["test"]) == {"friedman", "wilcoxon"}
    agreement = report.agreement.set_index(["source", "attribute"])
    assert agreement["n_failed_gate"].sum() >= 1 and agreement["n_not_applicable"].sum() >= 1

    client.force_login(AnalystFactory())
    page = client.get(reverse("analysis:contextsrh", args=[study.pk])).content.decode()
    assert 'data-table1="age"' in page and 'data-table1="sex"' in page and 'data-table1="location"' in page
    assert "Friedman&#x27;s test" in page or "Friedman's test" in page
    assert DEMO_QUESTIONS in study.definition["questions"][0]["dataset"]
