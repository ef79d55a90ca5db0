"""KV-cache calculator and flash-decoding time against hand derivations (Figure 2: tests/test_figure2.py)."""

import pytest

from simlib import Hardware, MemoryLevel, Workload, count, load_preset
from simlib.decode_time import split_k_time
from simlib.kvcache import load_model, max_context, memory_table, model_keys


@pytest.mark.parametrize("key", ["llama-2-7b", "llama-3-8b", "mistral-7b", "llama-2-70b"])
def test_parameter_count_from_config_matches_the_published_count(key):
    m = load_model(key)
    assert m.params == pytest.approx(m.published_params, rel=0.001)


def test_at_least_four_models_including_a_70b():
    assert len(model_keys()) >= 4 and any("70b" in k for k in model_keys())


def test_kv_bytes_per_token_by_hand():
    assert load_model("llama-2-7b").kv_bytes_per_token("fp16") == 2 * 32 * 32 * 128 * 2  # MHA: 512 KiB
    assert load_model("llama-3-8b").kv_bytes_per_token("fp16") == 2 * 32 * 8 * 128 * 2  # GQA: 128 KiB
    assert load_model("llama-2-70b").kv_bytes_per_token("fp32") == 2 * 80 * 8 * 128 * 4


def test_max_context_and_weights_that_do_not_fit():
    m = load_model("llama-3-8b")
    free = 16 * 2**30 - 8_030_261_248 * 2
    assert max_context(m, 16 * 2**30) == free // 131072
    assert max_context(m, 16 * 2**30, batch=4) == free // (4 * 131072)
    assert max_context(m, 16 * 10**9) == 0  # 16.06 GB of fp16 weights exceed 16 GB
    assert max_context(m, 16 * 10**9, weight_dtype="int4") == (16 * 10**9 - 8_030_261_248 // 2) // 131072


def test_memory_table_grows_linearly_with_context():
    t = memory_table(load_model("mistral-7b"), [0, 1000, 2000])
    assert list(t["kv_cache_bytes"]) == [0, 1000 * 131072, 2000 * 131072]


# --- sliding window and context limit -------------------------------------------------------------


def test_the_sliding_window_caps_mistrals_cache_and_llama_has_none():
    mistral, llama = load_model("mistral-7b"), load_model("llama-3-8b")
    assert mistral.sliding_window == 4096 and llama.sliding_window is None  # Mistral 7B paper, Table 1
    t = memory_table(mistral, [1024, 4096, 4097, 32768])
    per_token = 2 * 32 * 8 * 128 * 2  # 128 KiB: GQA with 8 KV heads
    assert list(t["kv_cache_bytes"]) == [
        1024 * per_token,
        4096 * per_token,
        4096 * per_token,
        4096 * per_token,
    ]
    assert memory_table(llama, [8192])["kv_cache_bytes"].item() == 8192 * per_token


def test_no_curve_runs_past_the_models_context():
    llama2 = load_model("llama-2-7b")
    assert llama2.max_position_embeddings == 4096  # Llama 2 paper, Table 1: context length 4k
    assert memory_table(llama2, [4096])["kv_cache_bytes"].item() == 4096 * 2 * 32 * 32 * 128 * 2
    with pytest.raises(
        ValueError, match="contexts: 4,097 tokens exceeds Llama-2-7B's max_position_embeddings"
    ):
        memory_table(llama2, [1024, 4097])


def test_a_models_decode_step_reads_its_window_with_its_heads():
    w = load_model("mistral-7b").decode_workload(32768, batch=2)
    assert (w.seq_len, w.head_dim, w.batch, w.heads, w.n_kv_heads, w.nq) == (4096, 128, 2, 32, 8, 1)
    assert load_model("llama-2-7b").decode_workload(4096).group == 1  # MHA: 32 query heads, 32 K/V heads
    with pytest.raises(ValueError, match="cache_len"):
        load_model("llama-2-7b").decode_workload(0)


# --- flash-decoding with waves (simlib.decode_time) -------------------------------------------------

TOY = Hardware(
    "toy",
    "toy GPU: 4 SMs, 1 GB/s",
    {"fp16": 1e15},
    (MemoryLevel("SRAM", 2**16, None, 128, None), MemoryLevel("HBM", 2**30, 1e9, 32)),
    sm_count=4,
    sources={},
)
# Two KV heads (MHA: R = 1 packed row), L = 1024, d = 64, fp16. Per split CTA: Q 64·2 = 128 B,
# K and V 2·⌈1024/s⌉·64·2 B, and O 128 B (s = 1) or a fp32 partial O + logsumexp (64+1)·4 = 260 B.
TOY_WORK = Workload(1024, 64, heads=2, query_len=1)


def _us(seconds):
    return seconds * 1e6


def test_one_split_uses_two_of_four_sms_so_it_takes_twice_the_bytes_time():
    t = split_k_time(TOY_WORK, TOY, 1)
    assert (t.ctas, t.waves, t.cta_bytes) == (2, 1, 128 + 262144 + 128)
    assert _us(t.memory_s) == pytest.approx(2 * 262400 / 1e9 * 1e6)  # 524.8 µs for all bytes
    assert _us(t.time_s) == pytest.approx(262400 * 4 / 1e9 * 1e6)  # one CTA at 1/4 of the bandwidth
    assert t.reduce_s == 0 and t.time_s == pytest.approx(2 * t.memory_s)


def test_two_splits_fill_the_gpu_and_four_cost_a_second_wave_and_a_larger_reduction():
    two, three, four = (split_k_time(TOY_WORK, TOY, s) for s in (2, 3, 4))
    # s = 2: 4 CTAs = 4 SMs, one wave of 128 + 2·512·128 + 260 = 131,460 B at 0.25 GB/s.
    assert (two.ctas, two.waves, two.cta_bytes) == (4, 1, 131460)
    assert _us(two.split_s) == pytest.approx(131460 * 4 / 1e9 * 1e6)  # 525.84 µs
    # combine: 2 rows < k = 8 rows per CTA (d = 64) → 1 CTA reading 2·2·65·4 B, writing 2·64·2 B.
    assert two.reduce_ctas == 1
    assert _us(two.reduce_s) == pytest.approx((2 * 2 * 65 * 4 + 2 * 128) * 4 / 1e9 * 1e6)
    # s = 3: chunks 342, 342, 340; 6 CTAs → 2 waves of the largest, 128 + 2·342·128 + 260 = 87,940 B.
    assert (three.ctas, three.waves, three.cta_bytes) == (6, 2, 87940)
    assert _us(three.split_s) == pytest.approx(2 * 87940 * 4 / 1e9 * 1e6)  # 703.52 µs: a ragged wave
    # s = 4: 8 CTAs, 2 full waves of 128 + 2·256·128 + 260 = 65,924 B; reduction 2·4·65·4 + 256 B.
    assert (four.waves, four.cta_bytes) == (2, 65924)
    assert _us(four.split_s) == pytest.approx(2 * 65924 * 4 / 1e9 * 1e6)  # 527.39 µs
    assert _us(four.reduce_s) == pytest.approx((2 * 4 * 65 * 4 + 256) * 4 / 1e9 * 1e6)
    assert two.time_s < four.time_s < three.time_s < split_k_time(TOY_WORK, TOY, 1).time_s


def test_the_bytes_of_all_ctas_are_the_counted_traffic():
    for s in (1, 2, 3, 4, 7):
        t = split_k_time(TOY_WORK, TOY, s)
        assert t.hbm_bytes == count("decode", TOY_WORK, sram_bytes=2**16, splits=s).hbm_bytes
        assert t.time_s >= t.memory_s


def test_h200_llama3_layer_by_hand():
    """B = 1, H = 32, H_kv = 8 (R = 4 packed rows), L = 32768, d = 128 fp16 on 132 SMs at 4.8 TB/s."""
    h200, w = load_preset("h200"), Workload(32768, 128, heads=32, kv_heads=8, query_len=1)
    share = 4.8e12 / 132
    one, sixteen, sixty_four = (split_k_time(w, h200, s) for s in (1, 16, 64))
    assert one.cta_bytes == 4 * 128 * 2 + 2 * 32768 * 128 * 2 + 4 * 128 * 2
    assert one.time_s == pytest.approx(one.cta_bytes / share)  # 8 busy SMs of 132: 461.4 µs
    assert (sixteen.ctas, sixteen.waves) == (128, 1)
    partials = 4 * 129 * 4  # R·(d+1) fp32 per split
    assert sixteen.split_s == pytest.approx((1024 + 2 * 2048 * 256 + partials) / share)
    # combine: 32 rows, 4 per CTA (d = 128) → 8 CTAs of 4·(s·129·4 + 128·2) B
    assert sixteen.reduce_ctas == 8
    assert sixteen.reduce_s == pytest.approx(4 * (16 * 129 * 4 + 256) / share)
    assert sixty_four.waves == 4  # ⌈512 / 132⌉
    assert sixty_four.time_s == pytest.approx(
        4 * (1024 + 2 * 512 * 256 + partials) / share + 4 * (64 * 129 * 4 + 256) / share
    )
    assert one.time_s > sixteen.time_s < sixty_four.time_s


def test_the_command_line_reports_the_decode_time_with_waves():
    import json
    import subprocess
    import sys

    args = ["count", "--algorithm", "decode", "--seq-len", "32768", "--head-dim", "128", "--heads", "32"]
    args += ["--kv-heads", "8", "--query-len", "1", "--splits", "64", "--gpu", "h200", "--json"]
    out = subprocess.run([sys.executable, "-m", "simlib", *args], capture_output=True, text=True, check=True)
    row = json.loads(out.stdout)
    share = 4.8e12 / 132  # by hand as in test_h200_llama3_layer_by_hand: 4 waves + an 8-CTA combine kernel
    assert (row["decode_ctas"], row["decode_waves"]) == (512, 4)
    assert row["decode_time_with_waves_s"] == pytest.approx(
        4 * (1024 + 2 * 512 * 256 + 4 * 129 * 4) / share + 4 * (64 * 129 * 4 + 256) / share
    )
