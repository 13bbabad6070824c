"""Weight-only int8 (`quantize.py`), the fused projections and the Precision setting (`precision.py`)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from d3d.errors import D3DError
from d3d.models.attention import Rows
from d3d.models.decoder import build_from_state, load_decoder
from d3d.models.precision import REFINE_TOP, Precision, parse_precision
from d3d.models.quantize import Int8Linear, quantize_decoder


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_int8_linear_computes_with_its_dequantized_weights(dtype):
    g = torch.Generator().manual_seed(0)
    dense = torch.nn.Linear(64, 48, bias=True).to(dtype)
    x = torch.randn(5, 64, generator=g).to(dtype)
    q = Int8Linear.from_linear(dense)
    assert q.qweight.dtype == torch.int8 and q.qweight.abs().max() == 127
    dequantized = q.qweight.float() * q.scale.float()[:, None]
    want = F.linear(x.float(), dequantized, dense.bias.float())
    tol = 1e-5 if dtype == torch.float32 else 0.1
    torch.testing.assert_close(q(x).float(), want, atol=tol, rtol=tol)
    # per-channel symmetric rounding: each weight within half a step of its channel's scale (plus, in
    # bfloat16, the scale's own rounding: up to 127 * 2^-8 steps)
    half_step = 0.5 if dtype == torch.float32 else 0.5 + 127 * 2**-8
    assert ((dequantized - dense.weight.float()).abs() <= q.scale.float()[:, None] * half_step + 1e-6).all()


def test_state_dict_keeps_checkpoint_names_with_fused_projections(tiny_qwen3_dir):
    model = load_decoder(tiny_qwen3_dir)
    attn, mlp = model.model.layers[0].self_attn, model.model.layers[0].mlp
    assert hasattr(attn, "qkv_proj") and not hasattr(attn, "q_proj") and hasattr(mlp, "gate_up_proj")
    state = model.state_dict()
    names = {k.split(".", 3)[3] for k in state if k.startswith("model.layers.0.")}
    assert {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
            "mlp.gate_proj.weight", "mlp.up_proj.weight"} <= names
    assert not any("qkv_proj" in n or "gate_up_proj" in n for n in names)
    rebuilt = build_from_state(model.config, model.layer_ids, dict(state))
    ids = torch.randint(0, 97, (1, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(rebuilt(Rows.clean(ids, 0)), model(Rows.clean(ids, 0)))


def test_quantized_decoder_is_int8_everywhere_but_the_embeddings(tiny_llama_dir):
    model = quantize_decoder(load_decoder(tiny_llama_dir), "int8")
    dense = load_decoder(tiny_llama_dir)
    layer = model.model.layers[0]
    for module in (layer.self_attn.qkv_proj, layer.self_attn.o_proj, layer.mlp.gate_up_proj, layer.mlp.down_proj,
                   model.lm_head):
        assert isinstance(module, Int8Linear)
    assert model.weights == "int8" and isinstance(model.model.embed_tokens, torch.nn.Embedding)
    ids = torch.randint(0, 97, (1, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        got, want = model(Rows.clean(ids, 0)), dense(Rows.clean(ids, 0))
    assert not torch.equal(got, want)  # other weights...
    assert (got.argmax(-1) == want.argmax(-1)).float().mean() > 0.8  # ...close to the dense ones


def test_precision_names_and_presets():
    bf16 = torch.bfloat16
    assert parse_precision("auto", bf16) == Precision.all() == parse_precision(None, bf16)
    assert parse_precision("auto", torch.float32) == Precision() == parse_precision("none", bf16)
    assert parse_precision("fp32-residual,exact-logits", bf16) == Precision(residual_fp32=True, refine_top=REFINE_TOP)
    assert parse_precision("fixed-key-span", torch.float32) == Precision(fixed_key_span=True)
    assert Precision.all().describe() == "exact-logits,fp32-residual,fp32-attention,fixed-key-span"
    with pytest.raises(D3DError, match="unknown precision switch 'fp16-everything'"):
        parse_precision("fp32-residual,fp16-everything", bf16)


def test_environment_overrides_only_auto(monkeypatch):
    monkeypatch.setenv("D3D_FIXED_KEY_SPAN", "0")
    assert parse_precision("auto", torch.bfloat16) == Precision(True, True, False, REFINE_TOP)
    assert parse_precision("all", torch.bfloat16).fixed_key_span
    monkeypatch.setenv("D3D_PRECISION_FIXES", "0")
    assert parse_precision("auto", torch.bfloat16) == Precision()


def test_float32_attention_keeps_a_float32_cache(tiny_llama_dir):
    model = load_decoder(tiny_llama_dir, dtype=torch.bfloat16)
    assert model.new_cache().keys.dtype == torch.bfloat16
    model.precision = Precision(attention_fp32=True)
    assert model.new_cache().keys.dtype == torch.float32
