"""int8 storage of a drafter's weights (`weight_storage.py`): a stored int8 drafter loads within half
a quantization step of the original, drafts like it, stays lossless, gives `quantize_decoder` its
stored integers back, and corrupt files fail with a D3DError; `d3d export --format d3d` writes one."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from d3d.cli import main
from d3d.errors import D3DError
from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import autoregressive_decode, speculative_decode
from d3d.inference.sampling import SamplingConfig
from d3d.models.decoder import load_decoder
from d3d.models.drafter import (
    CONFIG_NAME, DRAFT_VOCAB_KEY, WEIGHTS_NAME, Drafter, load_drafter_body, read_weights,
)
from d3d.models.quantize import Int8Linear, quantize_decoder
from d3d.models.weight_storage import SCALE_SUFFIX, STORAGE_KEY, is_projection, read_tensors
from d3d.training.export import EXPORT_KEY, MEASURED_BEFORE
from tests.helpers import MASK_ID, prompt
from tests.helpers import run_decode as run

NAME = "model.layers.0.mlp.down_proj.weight"  # a projection weight every test drafter stores
FUSED_PARTS = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}


def trained_drafter(model_dir, target, share: bool = True) -> Drafter:
    """A drafter on layers 1 and 3 whose weights differ from the base's, as training would leave them."""
    drafter = Drafter.from_base(model_dir, [1, 3], 4, MASK_ID, "fp", target=target if share else None)
    with torch.no_grad():
        for p in drafter.model.model.layers.parameters():
            p.add_(0.01 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    return drafter


def draft(drafter: Drafter, committed: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return drafter.draft_logits(drafter.new_cache(), committed)


def data_bytes(drafter_dir) -> int:
    """Bytes of the tensors in a drafter's weights file (its size less the safetensors header)."""
    return sum(t.numel() * t.element_size() for t in read_tensors(drafter_dir / WEIGHTS_NAME)[0].values())


def stored_int8(tensors: dict, module_name: str) -> torch.Tensor:
    """The stored int8 rows [out, in] of a runtime projection (a fused one's parts concatenated)."""
    prefix, _, name = module_name.rpartition(".")
    return torch.cat([tensors[f"{prefix}.{part}.weight"] for part in FUSED_PARTS.get(name, (name,))])


@pytest.mark.parametrize("share", [True, False])
def test_round_trip_is_within_half_a_step_and_norms_exact(tiny_qwen3_dir, tmp_path, share):
    target = load_decoder(tiny_qwen3_dir)
    drafter = trained_drafter(tiny_qwen3_dir, target, share)
    drafter.set_draft_vocab(torch.arange(5, 97, 3))
    drafter.save_pretrained(tmp_path / "dense")
    drafter.save_pretrained(tmp_path / "bf16", dtype=torch.bfloat16)
    drafter.save_pretrained(tmp_path / "int8", storage="int8")
    tensors, metadata = read_tensors(tmp_path / "int8" / WEIGHTS_NAME)
    assert metadata[STORAGE_KEY] == "int8-per-channel"
    original = {k: v for k, v in drafter.model.state_dict().items() if k in tensors}
    loaded = read_weights(tmp_path / "int8" / WEIGHTS_NAME)
    assert tensors[DRAFT_VOCAB_KEY].dtype == torch.int64
    assert torch.equal(loaded.pop(DRAFT_VOCAB_KEY), drafter.draft_vocab)
    assert loaded.keys() == original.keys() and len(original) == 23 + (0 if share else 2)  # + embeddings, head
    projections = [k for k, v in original.items() if is_projection(k, v)]
    assert len(projections) == 14  # q, k, v, o, gate, up, down in each of 2 layers
    for name, want in original.items():
        if name in projections:
            assert tensors[name].dtype == torch.int8
            half_step = want.abs().amax(1, keepdim=True) / 127 / 2
            assert ((loaded[name] - want).abs() <= half_step * (1 + 1e-6)).all(), name
        else:  # norms (and an unshared drafter's embeddings and head) stored dense, exactly
            assert torch.equal(loaded[name], want), name
    saved = sum(original[k].numel() * 3 - 4 * original[k].shape[0] for k in projections)  # float32 -> int8 + scales
    assert data_bytes(tmp_path / "dense") - data_bytes(tmp_path / "int8") == saved
    sizes = {kind: (tmp_path / kind / WEIGHTS_NAME).stat().st_size for kind in ("dense", "bf16", "int8")}
    if share:  # only projections and norms: int8 is about a quarter of float32 and half of bfloat16
        assert sizes["int8"] < 0.3 * sizes["dense"] and sizes["int8"] < 0.6 * sizes["bf16"]


def test_old_files_without_the_storage_field_load_unchanged(tiny_llama_dir, tmp_path):
    target = load_decoder(tiny_llama_dir)
    trained_drafter(tiny_llama_dir, target).save_pretrained(tmp_path / "d")
    tensors, _ = read_tensors(tmp_path / "d" / WEIGHTS_NAME)
    save_file(tensors, str(tmp_path / "d" / WEIGHTS_NAME), metadata={"format": "pt"})  # as written before int8 storage
    loaded = read_weights(tmp_path / "d" / WEIGHTS_NAME)
    assert loaded.keys() == tensors.keys() and all(torch.equal(loaded[k], tensors[k]) for k in tensors)


def test_int8_stored_drafter_drafts_like_the_dense_one_and_stays_lossless(target_dir, tmp_path):
    target = load_decoder(target_dir)
    drafter = trained_drafter(target_dir, target)
    drafter.save_pretrained(tmp_path / "int8", storage="int8")
    stored = Drafter.from_pretrained(tmp_path / "int8", target=target)
    assert stored.model.layer_ids == [1, 3] and stored.config == drafter.config
    for seed in range(3):
        want, got = draft(drafter, prompt(seed, 9)), draft(stored, prompt(seed, 9))
        assert not torch.equal(got, want)  # the weights really were rounded
        variation = (got.softmax(-1) - want.softmax(-1)).abs().sum(-1) / 2  # [1, B-1] per drafted position
        assert variation.max() < 0.02  # about 0.007 at most on these tiny models (their weights are scaled up)
        plain, _ = run(autoregressive_decode, target, prompt(seed))
        spec, _ = run(speculative_decode, target, DrafterSource(stored, SamplingConfig()), prompt(seed))
        assert spec == plain


def test_layer_subsets_read_int8_storage_too(tiny_llama_dir, tmp_path):
    target = load_decoder(tiny_llama_dir)
    trained_drafter(tiny_llama_dir, target).save_pretrained(tmp_path / "int8", storage="int8")
    whole = Drafter.from_pretrained(tmp_path / "int8", target=target)
    body, _ = load_drafter_body(tmp_path / "int8", keep=[3])
    assert torch.equal(body.model.layers[0].mlp.down_proj.weight, whole.model.model.layers[1].mlp.down_proj.weight)


def test_draft_vocab_keeps_int8_storage(tiny_llama_dir, tmp_path):
    from d3d.training.draft_vocab import write_draft_vocab

    target = load_decoder(tiny_llama_dir)
    trained_drafter(tiny_llama_dir, target).save_pretrained(tmp_path / "int8", storage="int8")
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "prompt_ids": [5, 6], "response_ids": [10 + i, 20, 21]}) + "\n"
                            for i in range(8)))
    write_draft_vocab(tmp_path / "int8", tmp_path / "small", [str(data)], 6)
    tensors, metadata = read_tensors(tmp_path / "small" / WEIGHTS_NAME)
    assert metadata[STORAGE_KEY] == "int8-per-channel" and tensors[NAME].dtype == torch.int8
    small = Drafter.from_pretrained(tmp_path / "small", target=target)
    whole = Drafter.from_pretrained(tmp_path / "int8", target=target)
    assert small.draft_vocab is not None
    assert torch.equal(small.model.model.layers[0].mlp.down_proj.weight, whole.model.model.layers[0].mlp.down_proj.weight)


def test_int8_runtime_weights_recover_the_stored_integers(tiny_qwen3_dir, tmp_path):
    trained_drafter(tiny_qwen3_dir, load_decoder(tiny_qwen3_dir)).save_pretrained(tmp_path / "int8", storage="int8")
    tensors, _ = read_tensors(tmp_path / "int8" / WEIGHTS_NAME)
    # float32 holds q * scale exactly enough to give q back; bfloat16 rounds q * scale and the row
    # maximum to 8 significant bits, which can move a value across a rounding boundary: at most 1.
    for dtype, most in [(torch.float32, 0), (torch.bfloat16, 1)]:
        drafter = Drafter.from_pretrained(tmp_path / "int8", target=load_decoder(tiny_qwen3_dir, dtype=dtype))
        quantize_decoder(drafter.model, "int8", head=False)
        layers = [(n, m) for n, m in drafter.model.named_modules() if isinstance(m, Int8Linear)]
        assert len(layers) == 8  # qkv, o, gate_up, down in each of 2 layers
        for name, layer in layers:
            diff = (layer.qweight.int() - stored_int8(tensors, name).int()).abs().max().item()
            assert diff <= most, (dtype, name, diff)


def corrupt(path, edit) -> None:
    """Rewrite a drafter's weights file with `edit(tensors)` applied to its stored tensors."""
    tensors, metadata = read_tensors(path / WEIGHTS_NAME)
    edit(tensors)
    save_file(tensors, str(path / WEIGHTS_NAME), metadata=metadata)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.pop(NAME + SCALE_SUFFIX), f"int8 weight {NAME} has no scale"),
    (lambda t: t.update({NAME + SCALE_SUFFIX: t[NAME + SCALE_SUFFIX][:-1].clone()}), f"int8 weight {NAME} .* per row"),
    (lambda t: t.update({NAME + SCALE_SUFFIX: t[NAME + SCALE_SUFFIX].half()}), None),  # a float16 scale is fine
    (lambda t: t.update({NAME: t[NAME].float()}), f"scale {NAME}{SCALE_SUFFIX} belongs to no int8 weight"),
    (lambda t: t.pop(NAME), f"scale {NAME}{SCALE_SUFFIX} belongs to no int8 weight"),
])
def test_corrupt_int8_files_raise_a_clear_error(tiny_llama_dir, tmp_path, edit, message):
    target = load_decoder(tiny_llama_dir)
    trained_drafter(tiny_llama_dir, target).save_pretrained(tmp_path / "d", storage="int8")
    corrupt(tmp_path / "d", edit)
    if message is None:
        Drafter.from_pretrained(tmp_path / "d", target=target)
        return
    with pytest.raises(D3DError, match=f"{WEIGHTS_NAME}: {message}"):
        Drafter.from_pretrained(tmp_path / "d", target=target)


def test_unknown_storage_is_refused_when_saving_and_loading(tiny_llama_dir, tmp_path):
    target = load_decoder(tiny_llama_dir)
    drafter = trained_drafter(tiny_llama_dir, target)
    with pytest.raises(D3DError, match="unknown weight storage 'int4' .*dense, int8"):
        drafter.save_pretrained(tmp_path / "d", storage="int4")
    assert not (tmp_path / "d").exists()
    drafter.save_pretrained(tmp_path / "d")
    tensors, _ = read_tensors(tmp_path / "d" / WEIGHTS_NAME)
    save_file(tensors, str(tmp_path / "d" / WEIGHTS_NAME), metadata={"format": "pt", STORAGE_KEY: "int4-grouped"})
    with pytest.raises(D3DError, match="stores its weights as 'int4-grouped'"):
        Drafter.from_pretrained(tmp_path / "d", target=target)


def test_export_d3d_int8_end_to_end(tiny_llama_dir, tmp_path, capsys):
    target = load_decoder(tiny_llama_dir)
    drafter = trained_drafter(tiny_llama_dir, target)
    drafter.save_pretrained(tmp_path / "src")
    (tmp_path / "src" / "acceptance.json").write_text(json.dumps({"tau_sim": 2.5, "data": "a.jsonl,b.jsonl"}))
    args = ["export", "--format", "d3d", "--drafter", str(tmp_path / "src"), "--dtype", "float32"]
    assert main([*args, "--storage", "int8", "--out", str(tmp_path / "int8")]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'int8'}: model.safetensors" in out and "int8 storage" in out and " MB" in out
    assert f"d3d eval-drafter --drafter {tmp_path / 'int8'} --data a.jsonl b.jsonl --save" in out
    tensors, _ = read_tensors(tmp_path / "int8" / WEIGHTS_NAME)
    assert tensors[NAME].dtype == torch.int8
    meta = json.loads((tmp_path / "int8" / CONFIG_NAME).read_text())
    assert meta[EXPORT_KEY] == {"drafter": str(tmp_path / "src"), "storage": "int8", "dtype": "float32"}
    assert meta["drafter"] == json.loads((tmp_path / "src" / CONFIG_NAME).read_text())["drafter"]
    table = json.loads((tmp_path / "int8" / "acceptance.json").read_text())
    assert table["tau_sim"] == 2.5 and table[MEASURED_BEFORE]["storage"] == "int8"
    exported = Drafter.from_pretrained(tmp_path / "int8", target=target)
    direct = tmp_path / "direct"
    drafter.save_pretrained(direct, storage="int8")  # the export writes what save_pretrained writes
    saved = Drafter.from_pretrained(direct, target=target)
    assert torch.equal(draft(exported, prompt(1, 9)), draft(saved, prompt(1, 9)))
    # dense float32 -> float32: the same weights, so the table is copied as it is; the earlier export is replaced
    assert main([*args, "--out", str(tmp_path / "int8")]) == 0
    assert "acceptance.json copied: the weights are the source's" in capsys.readouterr().out
    assert MEASURED_BEFORE not in json.loads((tmp_path / "int8" / "acceptance.json").read_text())


def test_export_refuses_int8_for_vllm_and_a_target_for_d3d(tiny_llama_dir, tmp_path, capsys):
    trained_drafter(tiny_llama_dir, load_decoder(tiny_llama_dir)).save_pretrained(tmp_path / "src")
    base = ["export", "--drafter", str(tmp_path / "src"), "--out", str(tmp_path / "out")]
    assert main([*base, "--format", "vllm", "--storage", "int8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--storage int8" in err and "--format d3d" in err
    assert main([*base, "--format", "d3d", "--target", str(tiny_llama_dir)]) == 2
    assert "needs no target" in capsys.readouterr().err and not (tmp_path / "out").exists()
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    assert main([*base[:-1], str(tmp_path / "busy"), "--format", "d3d"]) == 2
    assert "not empty" in capsys.readouterr().err
