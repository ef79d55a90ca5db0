"""KV-cache memory calculator: weights + K/V cache of a decoder model on one GPU.

Parameters are computed from the model's published config (not typed in); the test checks the sum
against the published parameter count. KV cache per token = 2 (K and V) · layers · kv_heads ·
head_dim · bytes. Worked number (Llama-3-8B, fp16): 2·32·8·128·2 B = 131,072 B = 128 KiB per token;
weights 8,030,261,248 · 2 B = 16,060,522,496 B = 14.96 GiB, so on a 16 GiB GPU only 1.04 GiB is left
for the cache: 8,539 tokens at batch 1, before activations and the CUDA context (device memory in GiB,
as lecture 8 writes it).

A model with a sliding window (Mistral-7B: each layer attends the last 4,096 tokens) keeps only the
window in its rolling-buffer cache, so its cache stops growing there: at 32,768 tokens Mistral-7B holds
4,096 · 128 KiB = 512 MiB, not 4 GiB. No model's curve goes past its `max_position_embeddings`
(Llama-2: 4,096 tokens).

>>> m = load_model("llama-3-8b")
>>> m.kv_bytes_per_token(), m.weight_bytes(), max_context(m, 16 * 2**30)
(131072, 16060522496, 8539)
>>> load_model("mistral-7b").cache_tokens(32768) * load_model("mistral-7b").kv_bytes_per_token() // 2**20
512
>>> w = m.decode_workload(32768)
>>> w.seq_len, w.heads, w.kv_heads, w.group, w.query_len
(32768, 32, 8, 4, 1)
"""

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import pandas as pd

from . import presets
from .units import dtype_bytes
from .workload import MAX_BATCH_HEADS, MAX_SEQ_LEN, Workload, check_nonnegative_int, check_positive_int

WEIGHT_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 1.0, "int4": 0.5}


@dataclass(frozen=True)
class Model:
    key: str
    name: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int
    published_params: float
    sliding_window: int | None = None  # tokens each layer attends (and caches); None: the whole context

    @property
    def params(self) -> int:
        """Llama-style count: embeddings (+ untied LM head), per layer q, k, v, o projections, a
        SwiGLU MLP (3 matrices) and two RMSNorm weights, plus the final norm."""
        h, layers = self.hidden_size, self.num_hidden_layers
        attention = (
            h * self.num_attention_heads * self.head_dim * 2
            + 2 * h * self.num_key_value_heads * self.head_dim
        )
        per_layer = attention + 3 * h * self.intermediate_size + 2 * h
        embeddings = self.vocab_size * h * (1 if self.tie_word_embeddings else 2)
        return embeddings + layers * per_layer + h

    def cache_tokens(self, context: int) -> int:
        """Tokens held in the KV cache after `context` tokens: all of them, or the sliding window."""
        return context if self.sliding_window is None else min(context, self.sliding_window)

    def decode_workload(self, cache_len: int, batch: int = 1, dtype: str = "fp16") -> Workload:
        """One layer's decode step: one new token per sequence against `cache_len` cached tokens
        (`cache_tokens` of them: a sliding window caps what is read)."""
        return Workload(
            self.cache_tokens(check_positive_int("cache_len", cache_len)),
            self.head_dim,
            batch=batch,
            heads=self.num_attention_heads,
            kv_heads=self.num_key_value_heads,
            dtype=dtype,
            query_len=1,
        )

    def kv_bytes_per_token(self, kv_dtype: str = "fp16") -> int:
        return 2 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim * dtype_bytes(kv_dtype)

    def weight_bytes(self, weight_dtype: str = "fp16") -> int:
        if weight_dtype not in WEIGHT_BYTES:
            raise ValueError(f"weight_dtype must be one of {', '.join(WEIGHT_BYTES)}, got {weight_dtype!r}")
        return int(self.params * WEIGHT_BYTES[weight_dtype])


def model_keys() -> list[str]:
    return presets.keys("models")


def load_model(key: str) -> Model:
    """The Model preset `key` (e.g. 'llama-3-8b'); ValueError naming `model` and the keys if unknown."""
    return _load(presets.checked_key("models", key, "model"))


@cache
def _load(key: str) -> Model:
    raw = presets.read("models", key, "model")
    return Model(**{k: raw[k] for k in Model.__dataclass_fields__ if k in raw})


def max_context(
    model: Model,
    gpu_bytes: int,
    batch: int = 1,
    weight_dtype: str = "fp16",
    kv_dtype: str = "fp16",
    reserve_bytes: int = 0,
) -> int:
    """Most KV-cache tokens per sequence that fit beside the weights; 0 if the weights alone do not
    fit. `reserve_bytes` (≥ 0) sets aside memory for activations and the CUDA context. A memory limit
    only: compare with `model.max_position_embeddings` and, for a sliding-window model, with
    `model.sliding_window` (its cache never holds more)."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a Model (e.g. load_model('llama-3-8b')), got {model!r}")
    gpu_bytes = check_positive_int("gpu_bytes", gpu_bytes)
    batch = check_positive_int("batch", batch)
    if isinstance(reserve_bytes, bool) or not isinstance(reserve_bytes, int) or reserve_bytes < 0:
        raise ValueError(f"reserve_bytes must be an integer ≥ 0, got {reserve_bytes!r}")
    free = gpu_bytes - reserve_bytes - model.weight_bytes(weight_dtype)
    return max(0, free // (batch * model.kv_bytes_per_token(kv_dtype)))


def memory_table(
    model: Model, contexts: Iterable[int], batch: int = 1, weight_dtype: str = "fp16", kv_dtype: str = "fp16"
) -> pd.DataFrame:
    """Weights and KV cache in bytes for each context length (a DataFrame); the cache holds
    `model.cache_tokens(n)` tokens (capped at a sliding window). A context beyond the model's
    `max_position_embeddings` is refused (ValueError naming `contexts`)."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a Model (e.g. load_model('llama-3-8b')), got {model!r}")
    weights = model.weight_bytes(weight_dtype)
    per_token = model.kv_bytes_per_token(kv_dtype)
    batch = check_positive_int("batch", batch, MAX_BATCH_HEADS)
    if isinstance(contexts, (str, bytes)):
        raise ValueError(f"contexts must be positive integers (token counts), got {contexts!r}")
    contexts = [check_nonnegative_int("contexts", n, MAX_SEQ_LEN) for n in contexts]  # no -1, NaN, 0.5
    if not contexts:
        raise ValueError("contexts is empty: give at least one context length")
    beyond = [n for n in contexts if n > model.max_position_embeddings]
    if beyond:
        raise ValueError(
            f"contexts: {beyond[0]:,} tokens exceeds {model.name}'s max_position_embeddings "
            f"({model.max_position_embeddings:,})"
        )
    rows = [
        {
            "context": n,
            "cached_tokens": model.cache_tokens(n),
            "weights_bytes": weights,
            "kv_cache_bytes": batch * model.cache_tokens(n) * per_token,
            "total_bytes": weights + batch * model.cache_tokens(n) * per_token,
        }
        for n in contexts
    ]
    return pd.DataFrame(rows)
