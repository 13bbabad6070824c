"""Packed bfloat16 weights (`d3d/models/packed.py`): the same logits bit for bit, the same decoding."""

from __future__ import annotations

import copy

import pytest
import torch

from d3d.cli import EXIT_BAD_INPUT, main
from d3d.errors import D3DError
from d3d.inference.engine import GenerationConfig
from d3d.inference.pipeline import Pipeline
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from d3d.models.packed import PackedLinear, pack_decoder, packing_available
from d3d.models.quantize import quantize_decoder, resolve_weights

needs_packing = pytest.mark.skipif(not packing_available(torch.bfloat16, "cpu"),
                                   reason="this CPU has no native bfloat16 for oneDNN")


@needs_packing
def test_packed_passes_equal_dense_passes_bit_for_bit(target_dir):
    """Passes of 1, 7 and 19 rows after a cached prefix, and an uncached 40-row pass: equal logits."""
    dense = load_decoder(target_dir, dtype=torch.bfloat16)
    packed = pack_decoder(load_decoder(target_dir, dtype=torch.bfloat16))
    assert isinstance(packed.model.layers[0].mlp.down_proj, PackedLinear) and isinstance(packed.lm_head, PackedLinear)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, dense.spec.vocab_size, (1, 40), generator=gen)
    batch = torch.randint(0, dense.spec.vocab_size, (3, 9), generator=gen)  # batched generation's shape
    with torch.inference_mode():
        assert torch.equal(packed(Rows.clean(ids, 0)), dense(Rows.clean(ids, 0)))
        assert torch.equal(packed(Rows.clean(batch, 0)), dense(Rows.clean(batch, 0)))
        caches = dense.new_cache(1, 64), packed.new_cache(1, 64)
        for model, cache in zip((dense, packed), caches):
            model(Rows.clean(ids[:, :12], 0), cache)
        for rows in (1, 7, 19):
            new = ids[:, 12 : 12 + rows]
            got = [model(Rows.clean(new, 12), cache) for model, cache in zip((dense, packed), caches)]
            assert torch.equal(got[0], got[1]), rows
            for cache in caches:
                cache.crop(12)


@needs_packing
def test_packed_drafter_with_a_drafting_vocabulary_drafts_the_same_logits(tiny_llama_dir):
    targets = [load_decoder(tiny_llama_dir, dtype=torch.bfloat16) for _ in range(2)]
    pack_decoder(targets[1])
    drafters = [Drafter.from_base(tiny_llama_dir, [0, 1], 4, 96, "", target=t, dtype=torch.bfloat16) for t in targets]
    quantize_decoder(drafters[1].model, "packed", head=False)
    assert drafters[1].model.lm_head is targets[1].lm_head  # the shared head is the target's packed one
    vocab_size = targets[0].spec.vocab_size
    ids = torch.randint(0, vocab_size, (1, 30), generator=torch.Generator().manual_seed(1))
    for vocab in (None, torch.arange(5, vocab_size, 3)):
        logits = []
        for drafter in drafters:
            drafter.set_draft_vocab(vocab)
            with torch.inference_mode():
                logits.append(drafter.draft_logits(drafter.new_cache(), ids))
        assert torch.equal(logits[0], logits[1])
    assert isinstance(drafters[1]._head_rows[1], PackedLinear)


@needs_packing
def test_packed_greedy_sync_equals_dense_plain_decoding(tiny_chat_model_dir):
    packed = Pipeline.load(str(tiny_chat_model_dir), drafter="untrained", block_size=4, dtype="bfloat16", weights="packed")
    dense = Pipeline.load(str(tiny_chat_model_dir), drafter="untrained", block_size=4, dtype="bfloat16")
    assert packed.target.weights == "packed" and packed.drafter.weights == "packed"
    assert isinstance(packed.drafter.drafter.model.model.layers[0].self_attn.qkv_proj, PackedLinear)
    cfg = GenerationConfig(max_new_tokens=24)
    try:
        for words in ("w10 w11 w12", "w40 w9"):
            ids = dense.target.encode_chat(words)
            ar, _ = dense.generate(ids, "ar", cfg)
            for mode in ("ar", "sync", "async"):
                assert packed.generate(ids, mode, cfg)[0] == ar, mode
    finally:
        packed.close()
        dense.close()


@needs_packing
def test_a_packed_layer_falls_back_where_the_packed_copy_cannot_serve(tiny_llama_dir):
    """After `.to(float32)` (the bench's exact copy) and under autograd it computes F.linear."""
    layer = PackedLinear(torch.nn.Linear(16, 8, bias=True).to(torch.bfloat16))
    x = torch.randn(3, 16)
    with torch.no_grad():
        assert torch.equal(layer(x.bfloat16()), torch.nn.functional.linear(x.bfloat16(), layer.weight, layer.bias))
    out = layer(x.bfloat16().requires_grad_())
    out.sum().backward()  # the fallback keeps the graph
    assert layer.weight.grad is not None
    layer.float()
    with torch.no_grad():
        assert torch.equal(layer(x), torch.nn.functional.linear(x, layer.weight, layer.bias))


@needs_packing
def test_a_packed_model_deep_copies_into_an_exact_float32_model(tiny_llama_dir):
    """The bench's near-tie check copies the target and computes it in float32 (`bench.exact_target`)."""
    packed = pack_decoder(load_decoder(tiny_llama_dir, dtype=torch.bfloat16))
    exact = copy.deepcopy(packed).to(torch.float32)
    want = load_decoder(tiny_llama_dir, dtype=torch.bfloat16).to(torch.float32)
    ids = torch.arange(3, 20).view(1, -1)
    with torch.inference_mode():
        assert torch.equal(exact(Rows.clean(ids, 0)), want(Rows.clean(ids, 0)))
        assert exact.lm_head.weight.dtype == torch.float32 and packed.lm_head.weight.dtype == torch.bfloat16
        assert torch.equal(packed(Rows.clean(ids, 0)), pack_decoder(load_decoder(tiny_llama_dir, dtype=torch.bfloat16))(Rows.clean(ids, 0)))


def test_packed_weights_in_float32_are_a_clear_error(tiny_chat_model_dir, capsys):
    with pytest.raises(D3DError, match="packed weights need bfloat16"):
        pack_decoder(load_decoder(tiny_chat_model_dir, dtype=torch.float32))
    code = main(["generate", "--prompt", "w9", "--target", str(tiny_chat_model_dir), "--dtype", "float32",
                 "--weights", "packed", "--max-new-tokens", "2"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "packed weights need bfloat16" in err and err.count("\n") == 1


def test_auto_weights_mean_packed_only_where_packing_runs_and_nothing_compiles():
    packs = packing_available(torch.bfloat16, "cpu")
    assert resolve_weights("auto", torch.bfloat16, "cpu") == ("packed" if packs else "dense")
    assert resolve_weights("auto", torch.bfloat16, "cpu", compiled=True) == "dense"
    assert resolve_weights("auto", torch.float32, "cpu") == "dense"
    assert resolve_weights("int8", torch.float32, "cpu", compiled=True) == "int8"
