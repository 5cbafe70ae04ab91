"""A NumPy float64 forward pass of all-MiniLM-L6-v2's original fp32 weights (BERT: 6 layers, 12 heads, 384
dimensions, exact GELU), mean pooling and L2 normalisation: sentence-transformers' pipeline without PyTorch.
The reference the int8 ONNX model is checked against (DESIGN.md, ContextSRH, "Why int8")."""

import functools
import zipfile

import numpy as np
from safetensors.numpy import load
from scipy.special import erf

from scoring import embeddings

LAYERS, HEADS, WIDTH = 6, 12, 384


@functools.cache
def weights() -> dict[str, np.ndarray]:
    with zipfile.ZipFile(embeddings.model_zip_path()) as archive:
        name = next(n for n in archive.namelist() if n.endswith("model.safetensors"))
        tensors = load(archive.read(name))
    return {key: value.astype(np.float64) for key, value in tensors.items() if "position_ids" not in key}


def _layer_norm(x, w, name):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + 1e-12) * w[f"{name}.weight"] + w[f"{name}.bias"]


def _linear(x, w, name):
    return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]


def embed_ids(ids: list[int]) -> np.ndarray:
    """The unit sentence vector (float64) of one text's word-piece ids."""
    w, n, head = weights(), len(ids), WIDTH // HEADS
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm(x, w, "embeddings.LayerNorm")
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        q, k, v = (
            _linear(x, w, p + f"attention.self.{part}").reshape(n, HEADS, head).transpose(1, 0, 2)
            for part in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(head)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        attended = (scores @ v).transpose(1, 0, 2).reshape(n, WIDTH)
        x = _layer_norm(_linear(attended, w, p + "attention.output.dense") + x, w, p + "attention.output.LayerNorm")
        hidden = _linear(x, w, p + "intermediate.dense")
        hidden = 0.5 * hidden * (1 + erf(hidden / np.sqrt(2)))
        x = _layer_norm(_linear(hidden, w, p + "output.dense") + x, w, p + "output.LayerNorm")
    pooled = x.mean(axis=0)  # one text, no padding: every position counts
    return pooled / np.linalg.norm(pooled)


def embed(texts: list[str]) -> np.ndarray:
    tokenizer = embeddings.load_tokenizer()
    return np.array([embed_ids(tokenizer.encode(text).ids) for text in texts])
