"""The arithmetic claims of the two popular FlashAttention posts, checked against the model.

Each `claim_<letter>()` returns a pandas DataFrame of the numbers behind one claim, computed with
simlib (`count`, `roofline`, the presets in data/hardware) or, for the measured claims (e) and (h),
read from the H200 measurements in data/measurements/current/ (`readers`). `verdicts.py` turns
them, and the paper's numbers (`paper.py`), into one judged row per claim. Nothing here is typed in
by hand except the claims themselves and the stated model configurations (assumptions, not results).

Hand check of (a): 4096² = 16,777,216 scores per head (16.8 M); 4000² = 16,000,000.
"""

import json
import math

import pandas as pd

from simlib import count
from simlib.hardware import DATA_DIR, load_preset
from simlib.kvcache import load_model, max_context
from simlib.roofline import roofline
from simlib.units import STAT_BYTES, dtype_bytes
from simlib.workload import Workload

from . import readers
from .numbers import fit_loglog_slope

HOLDS = "holds"
CONDITIONS = "holds with conditions"
FAILS = "does not hold"
NO_MEASUREMENT = "no recorded measurement yet"

GIB = 2**30
HARDWARE_DIR = DATA_DIR / "hardware"

#: The two model shapes of claims (c) and (g). Llama-2-7B comes from data/models (its published
#: config); GPT-2 medium is not in data/models, so its shape is stated here: 24 layers, 16 heads of
#: dimension 64 (d_model 1024; Radford et al. 2019, and the paper's Figure 2 workload in data/papers.json).
GPT2 = "GPT-2-medium-like"
LLAMA_KEY = "llama-2-7b"
GPT2_CONFIG = {"layers": 24, "heads": 16, "head_dim": 64, "source": "stated in evidence/claims.py"}


def _llama():
    return load_model(LLAMA_KEY)


LLAMA = "Llama-2-7B"


def model_configs():
    """{name: {layers, heads, head_dim, source}} for the GPT-2-medium-like and Llama-2-7B shapes."""
    llama = _llama()
    return {
        GPT2: dict(GPT2_CONFIG),
        LLAMA: {
            "layers": llama.num_hidden_layers,
            "heads": llama.num_attention_heads,
            "head_dim": llama.head_dim,
            "source": f"data/models/{LLAMA_KEY}.json",
        },
    }


#: What the posts say, in their words as far as a table allows.
CLAIMS = {
    "a": "About 16 million attention scores for a 4K-token sequence",
    "b": "N² quadruples when the sequence length N doubles",
    "c": "The fp16 N×N attention matrix takes gigabytes",
    "d": "Standard attention needs O(N²) HBM reads/writes, FlashAttention O(N)",
    "e": "2–4× wall-clock speed-up for long sequences",
    "f": "About 10× smaller memory footprint",
    "g": "An 8K context runs out of memory on an 80 GB A100 with standard attention",
    "h": "Diminishing returns below about 256 tokens",
    "i": "SRAM is orders of magnitude faster than HBM",
    "j": "The math takes microseconds, the memory traffic takes milliseconds",
    "k": "20–40 MB of SRAM in total",
    "l": "40–80 GB of HBM",
    "m": "Millions of trips to HBM",
    "n": "16 million intermediate values vs essentially none",
    "o": "Up to 3× faster for GPT-2 at 1K tokens",
    "p": "2.4× faster on long-range arena at 4K tokens",
    "q": "35–40 % less energy per training run",
    "r": "A 16 GB GPU is exhausted by one long conversation",
    "s": "FlashAttention only writes the final output back to HBM once",
    "t": "Variable-length inputs: you'll need to pad them",
    "u": "The price is a bit of extra computation",
    "v": "Context lengths pushing toward 16K or 32K",
    "w": "A 3B model on one RTX 4090",
    "x": "Works best on Ampere onward",
    "y": "Released in May 2022 from Stanford",
    "z": "Mathematically identical to standard attention",
}
#: Claims that no public number can decide: listed, never judged (data/papers.json, "unverified").
UNVERIFIABLE = "cannot be checked"

DEFAULT_GPU = "h200"
DEFAULT_HEAD_DIM = 64


def _sram(gpu):
    return load_preset(gpu).sram_bytes


def result_on(algorithm, workload, gpu=DEFAULT_GPU):
    """`count()` with the schedule's default tiles for the preset's per-block shared memory (naive: no tiles)."""
    if algorithm == "naive":
        return count("naive", workload)
    return count(algorithm, workload, sram_bytes=_sram(gpu))


def _hbm_elements(result, tensor, op="write"):
    table = result.table()
    rows = table[(table.level == "HBM") & (table.op == op) & (table.tensor == tensor)]
    return int(rows.elements.sum())


def hbm_roofline_s(result, hardware):
    """The paper's model of time: max(FLOPs / peak, HBM bytes / HBM bandwidth), no SRAM term."""
    r = roofline(result, hardware)
    return max(r.compute_s, r.level_s["HBM"])


def full_roofline_s(result, hardware):
    """max(FLOPs / peak, every level's bytes / bandwidth): the SRAM term of the teaching kernel binds too."""
    r = roofline(result, hardware)
    return max(r.compute_s, *r.level_s.values())


# ---------------------------------------------------------------------------------------------
# (a) 16 million scores at 4K tokens
# ---------------------------------------------------------------------------------------------


def claim_a(seq_lens=(4096, 4000), head_dim=DEFAULT_HEAD_DIM):
    """Scores per head = elements of S the naive schedule writes to HBM (N²)."""
    rows = []
    for n in seq_lens:
        scores = _hbm_elements(count("naive", Workload(n, head_dim)), "S")
        rows.append({"N (tokens)": n, "scores per head": scores, "millions": scores / 1e6})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# (b) N² quadruples when N doubles
# ---------------------------------------------------------------------------------------------


def claim_b(seq_lens=(1024, 2048, 4096, 8192), head_dim=DEFAULT_HEAD_DIM, gpu=DEFAULT_GPU):
    """Growth when N doubles: scores, FLOPs, naive and FlashAttention-2 HBM traffic."""
    rows = []
    for n in seq_lens:
        small, big = Workload(n, head_dim), Workload(2 * n, head_dim)
        rows.append(
            {
                "N → 2N": f"{n} → {2 * n}",
                "scores ×": _hbm_elements(count("naive", big), "S")
                / _hbm_elements(count("naive", small), "S"),
                "FLOPs ×": big.flops / small.flops,
                "naive HBM bytes ×": count("naive", big).hbm_bytes / count("naive", small).hbm_bytes,
                "fa2 HBM bytes ×": result_on("fa2", big, gpu).hbm_bytes
                / result_on("fa2", small, gpu).hbm_bytes,
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# (c) "gigabytes" for the fp16 N×N matrix
# ---------------------------------------------------------------------------------------------


def min_seq_len_for(target_bytes, dtype="fp16"):
    """Smallest N whose single N×N matrix in `dtype` takes at least `target_bytes`."""
    elem = Workload(1, 1, dtype=dtype).element_bytes
    n = math.isqrt(-(-target_bytes // elem))
    while n * n * elem < target_bytes:
        n += 1
    return n


def nxn_bytes(seq_len, dtype="fp16"):
    """Bytes of one N×N matrix (S or P) for one head, from the workload."""
    return Workload(seq_len, 1, dtype=dtype).matrix_bytes("S")


def claim_c(seq_lens=(2048, 4096, 8192), configs=None, batches=(1, 8), dtype="fp16"):
    """One fp16 N×N matrix per head, per layer (all heads), per layer × batch, all layers × batch."""
    configs = configs or model_configs()
    rows = []
    for name, cfg in configs.items():
        for n in seq_lens:
            for b in batches:
                head = nxn_bytes(n, dtype)
                rows.append(
                    {
                        "model": name,
                        "N": n,
                        "batch": b,
                        "heads": cfg["heads"],
                        "layers": cfg["layers"],
                        "one head (MiB)": head / 2**20,
                        "one layer, all heads (GiB)": head * cfg["heads"] / GIB,
                        "one layer × batch (GiB)": head * cfg["heads"] * b / GIB,
                        "all layers × batch (GiB)": head * cfg["heads"] * b * cfg["layers"] / GIB,
                    }
                )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# (d) O(N²) vs O(N) HBM traffic
# ---------------------------------------------------------------------------------------------


def extra_memory_bytes(algorithm, workload):
    """HBM the algorithm needs beyond Q, K, V, O, per head: S and P (naive), ℓ and m (fa1), L (fa2)."""
    n = workload.seq_len
    if algorithm == "naive":
        return workload.matrix_bytes("S") + workload.matrix_bytes("P")
    return {"fa1": 2 * n * STAT_BYTES, "fa2": n * STAT_BYTES}[algorithm]


#: N = 1K, 2K, … 64K: the sequence lengths of claim (d)'s slopes.
D_SEQ_LENS = tuple(2**k for k in range(10, 17))


def claim_d(seq_lens=D_SEQ_LENS, head_dim=DEFAULT_HEAD_DIM, gpu=DEFAULT_GPU):
    """HBM traffic and extra memory vs N; fitted log–log slopes per algorithm (last rows)."""
    rows = []
    for algorithm in ("naive", "fa1", "fa2"):
        for n in seq_lens:
            w = Workload(n, head_dim)
            r = result_on(algorithm, w, gpu)
            rows.append(
                {
                    "algorithm": algorithm,
                    "N": n,
                    "HBM traffic (bytes)": r.hbm_bytes,
                    "extra memory (bytes)": extra_memory_bytes(algorithm, w),
                }
            )
    return pd.DataFrame(rows)


def slopes_d(detail):
    """Fitted log–log slopes of traffic and extra memory vs N, one row per algorithm."""
    out = []
    for algorithm, g in detail.groupby("algorithm", sort=False):
        out.append(
            {
                "algorithm": algorithm,
                "traffic slope": fit_loglog_slope(g["N"], g["HBM traffic (bytes)"])[0],
                "extra-memory slope": fit_loglog_slope(g["N"], g["extra memory (bytes)"])[0],
            }
        )
    return pd.DataFrame(out)


# ---------------------------------------------------------------------------------------------
# measurements (claims e and h): fixed-schema readers in readers.py
# ---------------------------------------------------------------------------------------------

#: (standard attention, FlashAttention) pairs of one code base each. Teaching kernels
#: (`bench_h200.csv`): the numba naive kernel vs the readable numba FA2 kernel. Optimised
#: (`compare_h200.csv`): cuBLAS matmuls + elementwise softmax vs the optimised numba FA2 kernel;
#: PyTorch's math vs memory-efficient SDPA backends.
TEACHING_PAIRS = (("naive", "tiled"),)
OPTIMISED_PAIRS = (("cupy_naive", "numba_fast"), ("torch_math", "torch_efficient"))


def teaching_speedups(path=None, head_dim=DEFAULT_HEAD_DIM):
    """naive / tiled time of the teaching kernels per N at `head_dim` (`bench_h200.csv`)."""
    s = readers.speedups(readers.bench_times(path), TEACHING_PAIRS)
    return s[s.head_dim == head_dim].reset_index(drop=True)


def optimised_speedups(path=None):
    """Standard / FlashAttention time for each pair of OPTIMISED_PAIRS and shape (`compare_h200.csv`)."""
    return readers.speedups(readers.compare_times(path), OPTIMISED_PAIRS)


# ---------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------
# (e) 2–4× speed-up for long sequences
# ---------------------------------------------------------------------------------------------

LONG_SEQ = 2048  # "long" in the claims: N ≥ 2K
SHORT_SEQ = 256


def model_speedups(seq_lens, head_dim=DEFAULT_HEAD_DIM, gpu=DEFAULT_GPU, dtype="fp16"):
    """Model time naive / FlashAttention per N: the paper's HBM roofline, and the full roofline.

    The full roofline adds the SRAM term of docs/COUNTING.md (the scalar teaching kernel: every
    multiply-add reads two operands from shared memory), which dominates both algorithms.
    """
    hw = load_preset(gpu)
    rows = []
    for n in seq_lens:
        w = Workload(n, head_dim, dtype=dtype)
        rs = {a: result_on(a, w, gpu) for a in ("naive", "fa1", "fa2")}
        hbm_t = {a: hbm_roofline_s(r, hw) for a, r in rs.items()}
        full_t = {a: full_roofline_s(r, hw) for a, r in rs.items()}
        rows.append(
            {
                "N": n,
                "naive HBM bytes / fa1": rs["naive"].hbm_bytes / rs["fa1"].hbm_bytes,
                "naive HBM bytes / fa2": rs["naive"].hbm_bytes / rs["fa2"].hbm_bytes,
                "HBM-roofline speed-up fa1": hbm_t["naive"] / hbm_t["fa1"],
                "HBM-roofline speed-up fa2": hbm_t["naive"] / hbm_t["fa2"],
                "full-roofline speed-up fa1": full_t["naive"] / full_t["fa1"],
                "full-roofline speed-up fa2": full_t["naive"] / full_t["fa2"],
                "naive − fa2 HBM time per head (µs)": (rs["naive"].hbm_bytes - rs["fa2"].hbm_bytes)
                / hw.level("HBM").bandwidth_bytes_per_s
                * 1e6,
            }
        )
    return pd.DataFrame(rows)


def side_by_side_ms(dtype="bf16", head_dim=DEFAULT_HEAD_DIM, path=None):
    """Median forward time (ms) per N (rows) and variant (columns) of the H200 side-by-side run
    (`readers.tc_times` of tc_side_by_side_h200.csv and the cupy run's file), non-causal; a variant
    the run did not time has no column."""
    t = readers.tc_times(path)
    t = t[~t.causal & (t.dtype == dtype) & (t.head_dim == head_dim)]
    return t.pivot_table(index="seq_len", columns="kernel", values="time_ms", aggfunc="min")


def eager16_ms(dtype="bf16", pas="fwd", head_dim=DEFAULT_HEAD_DIM, path=None):
    """Median time (ms) per N (rows) and variant (columns) of the H200 16-bit baseline run
    (`readers.eager16_times` of eager16_h200.csv: eager, eager_hf, attention_ref and SDPA flash on the
    same inputs), non-causal, one dtype, pass ("fwd" or "fwd_bwd") and head dim."""
    t = readers.eager16_times(path)
    t = t[~t.causal & (t.dtype == dtype) & (t["pass"] == pas) & (t.head_dim == head_dim)]
    return t.pivot_table(index="seq_len", columns="kernel", values="time_ms", aggfunc="min")


def claim_e(seq_lens=(2048, 4096, 8192, 16384), head_dim=DEFAULT_HEAD_DIM, gpu=DEFAULT_GPU):
    return model_speedups(seq_lens, head_dim, gpu)


# ---------------------------------------------------------------------------------------------
# (f) ~10× memory footprint
# ---------------------------------------------------------------------------------------------


def claim_f(seq_lens=(512, 1024, 2048, 4096, 8192, 16384), head_dim=DEFAULT_HEAD_DIM):
    """Forward activations in HBM per head: Q, K, V, O plus what each algorithm keeps.

    Standard attention keeps S and P (both N×N), or P only when the softmax overwrites S in place;
    FlashAttention-2 keeps the logsumexp L (N fp32 values).
    """
    rows = []
    for n in seq_lens:
        w = Workload(n, head_dim)
        qkvo = sum(w.matrix_bytes(t) for t in "QKVO")
        fa = qkvo + extra_memory_bytes("fa2", w)
        both = qkvo + extra_memory_bytes("naive", w)
        p_only = qkvo + w.matrix_bytes("P")
        rows.append(
            {
                "N": n,
                "standard, S and P (bytes)": both,
                "standard, P only (bytes)": p_only,
                "FlashAttention-2 (bytes)": fa,
                "ratio, S and P": both / fa,
                "ratio, P only": p_only / fa,
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# (g) 8K OOM on an 80 GB A100
# ---------------------------------------------------------------------------------------------


def claim_g(seq_len=8192, batches=(1, 2, 4, 8), configs=None, gpu="a100-80gb", dtype="fp16"):
    """N×N matrices of standard attention against the GPU's HBM, per stated model and mode.

    - inference: only the layer being computed holds its S and P (2 N×N per head);
    - training: P of every layer is kept for the backward pass, plus S of the current layer.
    Only the N×N matrices are counted: weights, optimiser state and other activations come on
    top, so 'exceeds' means out of memory for certain and 'fits' only that these alone fit.
    """
    configs = configs or model_configs()
    capacity = load_preset(gpu).level("HBM").capacity_bytes
    head = nxn_bytes(seq_len, dtype)
    rows = []
    for name, cfg in configs.items():
        for mode in ("inference", "training"):
            for b in batches:
                per_layer = head * cfg["heads"] * b
                need = 2 * per_layer if mode == "inference" else per_layer * (cfg["layers"] + 1)
                rows.append(
                    {
                        "model": name,
                        "mode": mode,
                        "batch": b,
                        "N": seq_len,
                        "N×N matrices (GiB)": need / GIB,
                        "HBM (GiB)": capacity / GIB,
                        "share of HBM": need / capacity,
                        "N×N alone exceed HBM": bool(need > capacity),
                    }
                )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# (h) diminishing returns under 256 tokens
# ---------------------------------------------------------------------------------------------


def claim_h(seq_lens=(64, 128, 256, 512, 1024, 2048, 4096), head_dim=DEFAULT_HEAD_DIM, gpu=DEFAULT_GPU):
    return model_speedups(seq_lens, head_dim, gpu)


# ---------------------------------------------------------------------------------------------
# (r) a 16 GB GPU exhausted by one long conversation
# ---------------------------------------------------------------------------------------------

#: The prefill chunk of a long conversation: vLLM's chunked-prefill default, max_num_batched_tokens
#: = 512 ("the best ITL on A100 in the initial benchmark": vLLM's chunked-prefill documentation,
#: vllm-project/vllm pull request 4580, May 2024). A stated configuration, not a result.
PREFILL_CHUNK_TOKENS = 512
#: The CUDA context that stands in for the T4's: PyTorch's, after its first cuBLAS product and SDPA
#: call, measured on the H200 (data/measurements/current/cuda_context_h200.json).
CONTEXT_KEY = ("torch", "sdpa")


def activation_buffers(model, tokens, dtype="fp16"):
    """Peak activation bytes of one forward step over `tokens` new tokens (1: a decode step; a chunk:
    chunked prefill), by buffer, in `dtype` (b bytes). Layers run one after another and reuse their
    buffers, so the peak is one layer's largest phase, the SwiGLU MLP: the residual stream x and its
    RMSNorm (T·h each), gate and up (T·I each) and SiLU(gate)·up (T·I); plus the last token's logits,
    V values from the LM head in `dtype` and their fp32 copy for sampling. FlashAttention keeps no
    T×L scores in HBM; the attention phase (x, its norm, q, k, v, the output: T·(4h + 2·H_kv·d_h))
    is smaller than the MLP's whenever 3I > 2h + 2·H_kv·d_h.

    Llama-3-8B decode in fp16: 1·2·(2·4096 + 3·14336) = 102,400 B in the MLP and
    128,256·(2 + 4) = 769,536 B of logits, 871,936 B in all:

    >>> sum(activation_buffers(load_model("llama-3-8b"), 1).values())
    871936
    """
    b = dtype_bytes(dtype)
    h, i = model.hidden_size, model.intermediate_size
    return {
        "residual stream x (T·h)": tokens * h * b,
        "RMSNorm(x) (T·h)": tokens * h * b,
        "gate and up (2·T·I)": 2 * tokens * i * b,
        "SiLU(gate)·up (T·I)": tokens * i * b,
        "last-token logits (V, dtype + fp32)": model.vocab_size * (b + 4),
    }


def usable_bytes(gpu):
    """Device memory CUDA exposes on `gpu`: the preset's `usable_memory_ecc_on_bytes` where its JSON
    records one (the T4 with ECC on, its default: 15,102 MiB of the 16 GiB, data/hardware/t4.json),
    else the HBM level's capacity.

    >>> usable_bytes("t4") // 2**20, usable_bytes("h200") == load_preset("h200").level("HBM").capacity_bytes
    (15102, True)
    """
    raw = json.loads((HARDWARE_DIR / f"{load_preset(gpu).key}.json").read_text())
    return int(raw.get("usable_memory_ecc_on_bytes") or load_preset(gpu).level("HBM").capacity_bytes)


def claim_r(model_key="llama-3-8b", gpu="t4", context_bytes=None, chunk=PREFILL_CHUNK_TOKENS):
    """One conversation's device memory on `gpu` (fp16 weights and KV cache): the tokens that fit
    beside the weights alone, and beside the weights, the CUDA context (`context_bytes`; default the
    H200 measurement CONTEXT_KEY) and the activations' peak (a `chunk`-token prefill chunk or a decode
    step, whichever is larger); the spare bytes at the model's context in both cases; and the context
    below which the conversation would fit with only a decode step's activations."""
    m = load_model(model_key)
    capacity = usable_bytes(gpu)
    if context_bytes is None:
        context_bytes = readers.read_cuda_context()["bytes"][CONTEXT_KEY]
    decode = sum(activation_buffers(m, 1).values())
    prefill = sum(activation_buffers(m, chunk).values())
    reserve = context_bytes + max(decode, prefill)
    limit, kv = m.max_position_embeddings, m.kv_bytes_per_token("fp16")
    spare_weights_only = capacity - m.weight_bytes("fp16") - limit * kv
    return pd.Series(
        {
            "gpu_bytes": capacity,
            "nominal_bytes": load_preset(gpu).level("HBM").capacity_bytes,
            "weight_bytes": m.weight_bytes("fp16"),
            "kv_bytes_per_token": kv,
            "context_bytes": context_bytes,
            "decode_activation_bytes": decode,
            "prefill_activation_bytes": prefill,
            "chunk_tokens": chunk,
            "model_context_tokens": limit,
            "tokens_weights_only": max_context(m, capacity),
            "tokens_all": max_context(m, capacity, reserve_bytes=reserve),
            "tokens_all_int4": max_context(m, capacity, weight_dtype="int4", reserve_bytes=reserve),
            "spare_weights_only": spare_weights_only,
            "spare_all": spare_weights_only - reserve,
            "largest_context_that_fits_decode_only": spare_weights_only - decode,
        },
        name="r",
    )
