"""Answers' sentence embeddings, computed once and stored (DESIGN.md, ContextSRH: "embedding cache").

An original answer is read beside each of its context answers (up to 10): its vector is computed the first time
and read back after that. Rows are written once (unique per answer and model, conflicts ignored) and never
updated: the model is deterministic, so a concurrent run's row holds the same vector.
"""

from collections.abc import Mapping

import numpy as np

from . import embeddings
from .models import AnswerEmbedding
from .scorers import Embedding

EMBEDDERS = {embeddings.MODEL_ID: embeddings.embed_texts}


def vectors_for(texts: Mapping[int, str], *, model: str = embeddings.MODEL_ID) -> dict[int, Embedding]:
    """Per answer id (`texts`: answer id -> its text), its embedding by `model`: the stored one, else computed
    with the other missing ones in one batch and stored. A blank text has none (there is nothing to embed)."""
    if model not in EMBEDDERS:
        raise ValueError(f"no embedding model {model!r}; known: {', '.join(EMBEDDERS)}")
    wanted = {answer_id: text for answer_id, text in texts.items() if text.strip()}
    stored = AnswerEmbedding.objects.filter(answer_id__in=wanted, model=model).values_list(
        "answer_id", "vector", "tokens"
    )
    found = {answer_id: Embedding(_vector(vector), tokens) for answer_id, vector, tokens in stored}
    missing = [answer_id for answer_id in wanted if answer_id not in found]
    if not missing:
        return found
    distinct = list(dict.fromkeys(wanted[answer_id] for answer_id in missing))  # equal texts embedded once
    embedded = EMBEDDERS[model](distinct)
    by_text = {text: Embedding(embedded.vectors[i], embedded.tokens[i]) for i, text in enumerate(distinct)}
    new = {answer_id: by_text[wanted[answer_id]] for answer_id in missing}
    AnswerEmbedding.objects.bulk_create(
        [
            AnswerEmbedding(answer_id=answer_id, model=model, vector=_bytes(e.vector), tokens=e.tokens)
            for answer_id, e in new.items()
        ],
        ignore_conflicts=True,
    )
    return {**found, **new}


def _bytes(vector: np.ndarray) -> bytes:
    return vector.astype("<f4").tobytes()


def _vector(stored: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(stored), dtype="<f4").astype(np.float32)
