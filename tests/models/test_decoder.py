"""The native runtime matches transformers and implements the mixed-pass mask exactly."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder


@pytest.fixture(params=["tiny_llama_dir", "tiny_qwen3_dir"])
def model_dir(request):
    return request.getfixturevalue(request.param)


def test_logits_match_transformers(model_dir):
    ref = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    ours = load_decoder(model_dir)
    ids = torch.randint(0, 97, (2, 23), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = ref(ids).logits
        got = ours(Rows.clean(ids, 0))
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_incremental_decode_with_cache_matches_full_pass(model_dir):
    ours = load_decoder(model_dir)
    ids = torch.randint(0, 97, (1, 30), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = ours(Rows.clean(ids, 0))
        cache = ours.new_cache(capacity=4)  # forces growth
        parts = [ours(Rows.clean(ids[:, :10], 0), cache)]
        for t in range(10, 30, 5):
            parts.append(ours(Rows.clean(ids[:, t : t + 5], t), cache))
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-4, rtol=1e-4)


def test_crop_then_recompute_is_exact(model_dir):
    ours = load_decoder(model_dir)
    ids = torch.randint(0, 97, (1, 20), generator=torch.Generator().manual_seed(3))
    other = torch.randint(0, 97, (1, 6), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        cache = ours.new_cache()
        ours(Rows.clean(ids[:, :14], 0), cache)
        ours(Rows.clean(other, 14), cache)  # a rejected speculative block
        cache.crop(14)
        got = ours(Rows.clean(ids[:, 14:], 14), cache)
        want = ours(Rows.clean(ids, 0))[:, 14:]
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_left_padded_batch_matches_single_sequences(model_dir):
    ours = load_decoder(model_dir)
    g = torch.Generator().manual_seed(5)
    a, b = torch.randint(0, 97, (1, 12), generator=g), torch.randint(0, 97, (1, 7), generator=g)
    pad = 5
    batch = torch.cat([a, torch.cat([torch.zeros(1, pad, dtype=torch.long), b], 1)])
    valid = torch.ones_like(batch, dtype=torch.bool)
    valid[1, :pad] = False
    start = torch.tensor([0, -pad])
    with torch.no_grad():
        cache = ours.new_cache(batch=2)
        out = ours(Rows.clean(batch, start, valid=valid), cache)
        nxt = torch.tensor([[3], [4]])
        out2 = ours(Rows.clean(nxt, torch.tensor([12, 7])), cache)
        ref_a = ours(Rows.clean(torch.cat([a, nxt[:1]], 1), 0))
        ref_b = ours(Rows.clean(torch.cat([b, nxt[1:]], 1), 0))
    torch.testing.assert_close(out[0], ref_a[0, :12], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(out[1, pad:], ref_b[0, :7], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(out2[0, 0], ref_a[0, 12], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(out2[1, 0], ref_b[0, 7], atol=1e-4, rtol=1e-4)


def test_dropping_rows_from_a_padded_batch_keeps_the_rest_exact(model_dir):
    """`KVCache.keep_rows`: the kept rows continue exactly as they would have in the full batch."""
    ours = load_decoder(model_dir)
    g = torch.Generator().manual_seed(6)
    prompts = [torch.randint(0, 97, (n,), generator=g) for n in (9, 4, 7)]
    width = 9
    batch = torch.stack([torch.cat([torch.zeros(width - len(p), dtype=torch.long), p]) for p in prompts])
    valid = torch.stack([torch.arange(width) >= width - len(p) for p in prompts])
    start = torch.tensor([len(p) - width for p in prompts])
    nxt = torch.tensor([[3], [4], [5]])
    with torch.no_grad():
        cache = ours.new_cache(batch=3)
        ours(Rows.clean(batch, start, valid=valid), cache)
        full = ours(Rows.clean(nxt, torch.tensor([9, 4, 7])), cache)
        cache.crop(width)
        cache.keep_rows([0, 2])
        assert cache.batch == 2
        kept = ours(Rows.clean(nxt[[0, 2]], torch.tensor([9, 7])), cache)
        with pytest.raises(ValueError, match="ascending"):
            cache.keep_rows([1, 0])
    torch.testing.assert_close(kept, full[[0, 2]], atol=1e-5, rtol=1e-5)


def test_block_rows_see_only_prefix_before_anchor_and_own_block(tiny_llama_dir):
    """Two blocks packed with clean rows give the logits of each block run alone on its prefix."""
    ours = load_decoder(tiny_llama_dir).double()
    g = torch.Generator().manual_seed(6)
    seq = torch.randint(0, 97, (1, 20), generator=g)
    mask_id, bs = 96, 4
    anchors = [9, 11]  # closer together than the block size
    blocks = torch.stack([torch.tensor([seq[0, a]] + [mask_id] * (bs - 1)) for a in anchors])[None]
    with torch.no_grad():
        packed = ours(Rows.with_blocks(Rows.clean(seq, 0), blocks, torch.tensor([anchors])))
        for k, a in enumerate(anchors):
            alone_ids = torch.cat([seq[:, :a], blocks[:, k]], 1)
            # alone: prefix causal, block bidirectional, via a cache so the block is never cached
            cache = ours.new_cache()
            ours(Rows.clean(seq[:, :a], 0), cache)
            alone = ours(Rows.with_blocks(Rows.clean(seq[:, :0], a), blocks[:, k : k + 1], torch.tensor([[a]])), cache)
            got = packed[:, 20 + k * bs : 20 + (k + 1) * bs]
            torch.testing.assert_close(got, alone, atol=1e-9, rtol=1e-9)
            assert cache.length == a  # block rows were not cached
            del alone_ids
        # Changing a clean token at/after an anchor must not change that block's logits.
        seq2 = seq.clone()
        seq2[0, 9:] = (seq2[0, 9:] + 1) % 96
        packed2 = ours(Rows.with_blocks(Rows.clean(seq2, 0), blocks, torch.tensor([anchors])))
    torch.testing.assert_close(packed2[:, 20:24], packed[:, 20:24], atol=1e-9, rtol=1e-9)
    # ...while the clean rows themselves did change (the test can fail).
    assert not torch.allclose(packed2[:, 10:20], packed[:, 10:20])


def save_windowed_model(path, kind: str):
    """A tiny Mistral (every layer windowed) or Qwen2 (layers 2.. windowed) with a 6-token window."""
    from transformers import MistralConfig, Qwen2Config

    from tests.conftest import TINY

    torch.manual_seed(0)
    if kind == "mistral":
        config = MistralConfig(**TINY, sliding_window=6, tie_word_embeddings=True)
    else:
        config = Qwen2Config(**TINY, use_sliding_window=True, sliding_window=6, max_window_layers=2)
    AutoModelForCausalLM.from_config(config).save_pretrained(path)
    return path


@pytest.mark.parametrize("kind", ["mistral", "qwen2"])
def test_sliding_window_matches_transformers(tmp_path, kind):
    d = save_windowed_model(tmp_path, kind)
    ref = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()
    ours = load_decoder(d)
    assert (kind == "mistral") == (set(ours.windows) == {6})
    ids = torch.randint(0, 97, (1, 24), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        want = ref(ids).logits
        full = ours(Rows.clean(ids, 0))
        cache = ours.new_cache()
        steps = [ours(Rows.clean(ids[:, :5], 0), cache)]  # within the window: the unmasked fast paths
        steps += [ours(Rows.clean(ids[:, t : t + 1], t), cache) for t in range(5, 16)]  # decode steps
        steps.append(ours(Rows.clean(ids[:, 16:], 16), cache))  # a verification-like chunk
    torch.testing.assert_close(full, want, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(torch.cat(steps, 1), want, atol=1e-4, rtol=1e-4)
    nowindow = load_decoder(d)
    nowindow.windows = (None,) * len(nowindow.windows)
    with torch.no_grad():
        assert not torch.allclose(nowindow(Rows.clean(ids, 0))[:, 8:], want[:, 8:], atol=1e-3)  # the window matters


def test_precision_switches_keep_the_model_the_same(tiny_llama_dir):
    """Each Precision switch changes rounding only: in float64 every pass (prefill, steps, a k-row
    pass after a crop that leaves stale columns behind) gives the same logits with and without it."""
    from d3d.models.attention import Rows
    from d3d.models.decoder import Precision

    plain = load_decoder(tiny_llama_dir, dtype=torch.float64)
    fixed = load_decoder(tiny_llama_dir, dtype=torch.float64)
    fixed.precision = Precision(residual_fp32=True, attention_fp32=True, fixed_key_span=True)
    ids = torch.randint(0, 90, (1, 12), generator=torch.Generator().manual_seed(0))

    def passes(model):
        cache = model.new_cache(1, 40)
        out = [model(Rows.clean(ids[:, :6], 0), cache)]
        out += [model(Rows.clean(ids[:, i:i + 1], i), cache) for i in range(6, 9)]
        cache.crop(7)  # columns 7, 8 stay in the buffer, stale
        out.append(model(Rows.clean(ids[:, 7:12], 7), cache))
        return out

    for a, b in zip(passes(plain), passes(fixed)):
        assert torch.allclose(a.double(), b.double(), atol=1e-5), (a - b).abs().max()


def test_low_precision_top_logits_are_recomputed_in_float32(tiny_llama_dir):
    from d3d.models.attention import Rows
    from d3d.models.decoder import Precision

    model = load_decoder(tiny_llama_dir, dtype=torch.bfloat16)
    model.precision = Precision(refine_top=4)
    ids = torch.randint(0, 90, (1, 9), generator=torch.Generator().manual_seed(1))
    logits = model(Rows.clean(ids, 0))
    hidden = model.hidden_states(Rows.clean(ids, 0), out_dtype=torch.float32)
    exact = hidden @ model.lm_head.weight.float().T
    top = logits.topk(4, -1).indices
    assert logits.dtype == torch.float32
    assert torch.allclose(logits.gather(-1, top), exact.gather(-1, top), atol=1e-4)
