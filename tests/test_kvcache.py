"""KV-cache calculator against hand derivations (Figure 2: tests/test_figure2.py)."""

import pytest

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
