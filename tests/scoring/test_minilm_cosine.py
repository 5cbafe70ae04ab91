"""minilm_cosine v1: context answers against their source's answer to the base question, embedded through the
cache (scoring/embedding_cache.py), on real MEDIC texts; the Celery task on a real worker."""

import time

import numpy as np
import pytest
from django.core.management import call_command

from datasets.models import Answer
from scoring import embedding_cache, embeddings
from scoring.models import AnswerEmbedding, Score
from scoring.services import score_missing
from scoring.tasks import score_answers_task
from tests.factories import AnswerFactory, AnswerSourceFactory, DatasetFactory, QuestionFactory
from tests.scoring import medic_texts

CONTEXTS = 10  # ContextSRH: up to 10 context variants per original question


def _direct(text: str) -> np.ndarray:
    """The same ONNX model run on the text alone, pooled in float64: no batching, no cache."""
    model = embeddings.model()
    ids = np.array([model.tokenizer.encode(text).ids], dtype=np.int64)
    inputs = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    pooled = model.session.run(None, inputs)[0][0].astype(np.float64).mean(axis=0)
    return pooled / np.linalg.norm(pooled)


def _whole_length(text: str) -> int:
    tokenizer = embeddings.load_tokenizer()
    tokenizer.no_truncation()
    return len(tokenizer.encode(text).ids)


def _study(originals: int, texts: list[str], source=None):
    """`originals` base questions with CONTEXTS variants each, all answered by one source with MEDIC's texts."""
    dataset = DatasetFactory()
    source = source or AnswerSourceFactory()
    answers, cycle = {}, iter(texts)
    for b in range(originals):
        base = QuestionFactory(dataset=dataset, external_id=f"b{b}")
        answers[f"b{b}"] = AnswerFactory(question=base, source=source, text=next(cycle))
        for c in range(CONTEXTS):
            variant = QuestionFactory(dataset=dataset, external_id=f"b{b}-{c}", base=base, levels={"age": str(c)})
            answers[f"b{b}-{c}"] = AnswerFactory(question=variant, source=source, text=next(cycle))
    return answers


def _restyled() -> list[str]:
    return [restyled for _, restyled in medic_texts.restyled_pairs()[::7]]


@pytest.mark.django_db
def test_stored_similarities_equal_the_models_own_cosine_of_each_text_alone():
    answers = _study(3, medic_texts.answers() + _restyled())
    counts = score_missing(scorer="minilm_cosine", answers=Answer.objects.all(), batch_size=7)

    assert (counts["scored"], counts["measured"], counts["missing"]) == (33, 30, 3)  # 3 originals: no base
    truncated = 0
    for key, answer in answers.items():
        score = Score.objects.get(answer=answer, scorer="minilm_cosine", version=1)
        if "-" not in key:
            assert (score.outcome, score.value) == ("missing", {"reason": "the question has no base question"})
            continue
        reference = answers[key.split("-")[0]]
        assert score.outcome == "measured"
        assert score.number == pytest.approx(float(_direct(answer.text) @ _direct(reference.text)), abs=1e-5)
        tokens, reference_tokens = _whole_length(answer.text), _whole_length(reference.text)
        truncated += max(tokens, reference_tokens) > 256
        assert score.value == {
            "model": embeddings.MODEL_ID,
            "tokens": tokens,
            "reference_tokens": reference_tokens,
            "truncated": max(tokens, reference_tokens) > 256,
            "reference_answer": reference.pk,
        }
    assert 0 < truncated < 30  # both kinds are checked


@pytest.mark.django_db
def test_an_original_answer_read_by_ten_context_answers_is_embedded_once(monkeypatch):
    embedded: list[str] = []
    real = embedding_cache.EMBEDDERS[embeddings.MODEL_ID]

    def counting(texts, **kwargs):
        embedded.extend(texts)
        return real(texts, **kwargs)

    monkeypatch.setitem(embedding_cache.EMBEDDERS, embeddings.MODEL_ID, counting)
    answers = _study(2, _restyled())
    # Pages of 4 split each original's context answers over three pages: it is read from the cache after the first.
    score_missing(scorer="minilm_cosine", answers=Answer.objects.all(), batch_size=4)

    assert len(embedded) == 22 and len(set(embedded)) == 22
    assert AnswerEmbedding.objects.count() == 22
    assert set(AnswerEmbedding.objects.values_list("model", flat=True)) == {embeddings.MODEL_ID}
    stored = AnswerEmbedding.objects.get(answer=answers["b0"])
    assert np.array_equal(np.frombuffer(stored.vector, dtype="<f4"), embeddings.embed([answers["b0"].text])[0])

    # A re-run scores nothing and embeds nothing; a new scorer run over cached answers reads the cache.
    embedded.clear()
    assert score_missing(scorer="minilm_cosine", answers=Answer.objects.all())["scored"] == 0
    Score.objects.all().delete()  # as a new version would: its scores are new, the vectors are not
    assert score_missing(scorer="minilm_cosine", answers=Answer.objects.all())["scored"] == 22
    assert embedded == [] and AnswerEmbedding.objects.count() == 22


@pytest.mark.django_db
def test_equal_texts_tie_and_blank_texts_are_missing_without_a_vector():
    source = AnswerSourceFactory()
    answers = _study(1, ["Use a condom every time.", "Use a condom every time.", "   ", *(["See a doctor."] * 8)],
                     source=source)  # fmt: skip
    blank_base = _study(1, ["", "Rest."] + ["Drink water."] * 9, source=source)
    counts = score_missing(scorer="minilm_cosine", answers=Answer.objects.all())

    def score(answer):
        return Score.objects.get(answer=answer, scorer="minilm_cosine")

    assert score(answers["b0-0"]).outcome == "measured"
    assert score(answers["b0-0"]).number == pytest.approx(1.0, abs=1e-6)  # the same text: a tie at 1
    assert score(answers["b0-2"]).number == score(answers["b0-3"]).number  # equal texts, equal similarities
    empty = score(answers["b0-1"])
    assert (empty.outcome, empty.value["reason"]) == ("missing", "the answer is empty")
    assert score(blank_base["b0-0"]).value == {"reason": "the reference answer is empty",
                                               "reference_answer": blank_base["b0"].pk}  # fmt: skip
    assert counts["measured"] == 9 + 0 and counts["missing"] == 2 + 1 + 10
    # Blank texts have no vector; equal texts have one each, computed once.
    assert not AnswerEmbedding.objects.filter(answer__in=[answers["b0-1"], blank_base["b0"]]).exists()
    assert AnswerEmbedding.objects.filter(answer__in=answers.values()).count() == 10


@pytest.mark.django_db
def test_the_command_queues_the_task_which_scores_like_the_runner(capsys):
    answers = _study(1, _restyled())
    call_command("score_answers", "--scorer", "minilm_cosine", "--queue", "scoring")  # eager here: runs at once

    assert "Queued scorer minilm_cosine on scoring" in capsys.readouterr().out
    assert Score.objects.filter(scorer="minilm_cosine", outcome="measured").count() == 10
    assert Score.objects.get(answer=answers["b0-3"]).value["reference_answer"] == answers["b0"].pk


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_worker_embeds_and_scores(celery_worker):
    answers = _study(1, _restyled())
    score_answers_task.delay("minilm_cosine", dataset=answers["b0"].question.dataset.name)

    deadline = time.monotonic() + 120
    while Score.objects.count() < 11 and time.monotonic() < deadline:
        time.sleep(0.3)
    assert Score.objects.filter(scorer="minilm_cosine", outcome="measured").count() == 10, celery_worker.log_tail()
    assert AnswerEmbedding.objects.count() == 11
    score = Score.objects.get(answer=answers["b0-0"])
    assert score.number == pytest.approx(float(_direct(answers["b0-0"].text) @ _direct(answers["b0"].text)), abs=1e-5)
