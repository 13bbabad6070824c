"""`d3d grow`: a deeper drafter that drafts exactly as the original, trains from there, and its refusals."""

from __future__ import annotations

import json

import pytest
import torch

from d3d.cli import main
from d3d.errors import D3DError
from d3d.models import hub
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter, read_drafter_config, read_weights
from d3d.training.grow import GROW_KEY, grow_drafter, grown_layers
from tests.conftest import TINY, save_tiny_model, save_tiny_tokenizer
from tests.helpers import MASK_ID, prompt

BS = 6


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_tokenizer(save_tiny_model(tmp_path_factory.mktemp("llama"), "llama"))


def save_drafter(model_dir, path, layers=(0, 3), storage="dense", vocab=None):
    """A drafter from the tiny target, its layers moved away from the target's by a fixed perturbation."""
    target = load_decoder(model_dir)
    fingerprint = hub.tokenizer_fingerprint(hub.load_tokenizer(model_dir))
    drafter = Drafter.from_base(model_dir, list(layers), BS, MASK_ID, fingerprint, target=target)
    if vocab is not None:
        drafter.set_draft_vocab(vocab)
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for p in drafter.parameters():
            if p.requires_grad:
                p.add_(0.05 * torch.randn(p.shape, generator=gen))
    drafter.save_pretrained(path, storage=storage)
    return path


def block_logits(model_dir, paths, dtype=torch.float32):
    """Each drafter's logits for one block after the same prefix, and the loaded drafters."""
    target = load_decoder(model_dir, dtype=dtype)
    drafters = [Drafter.from_pretrained(p, target=target) for p in paths]
    prefix = prompt(3, 9)
    with torch.no_grad():
        return [d.draft_logits(d.new_cache(64), prefix) for d in drafters], drafters


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_the_grown_drafter_drafts_bit_for_bit_as_the_original(model_dir, tmp_path, dtype):
    src = save_drafter(model_dir, tmp_path / "src", vocab=torch.arange(0, 40))
    report = grow_drafter(str(src), [1, 2], str(tmp_path / "grown"))
    assert report.layers_before == [0, 3] and report.layers == [0, 1, 2, 3] and report.added == [1, 2]
    (want, got), (original, grown) = block_logits(model_dir, [src, tmp_path / "grown"], dtype)
    assert len(grown.model.model.layers) == 4
    assert torch.equal(want, got)
    assert torch.equal(grown.draft_vocab, original.draft_vocab)  # the drafting vocabulary is carried over


def test_new_layers_are_the_targets_with_their_residual_writes_zeroed(model_dir, tmp_path):
    src = save_drafter(model_dir, tmp_path / "src")
    grow_drafter(str(src), [2], str(tmp_path / "grown"))
    before, after = read_weights(src / "model.safetensors"), read_weights(tmp_path / "grown" / "model.safetensors")
    target = load_decoder(model_dir).state_dict()
    for name, value in after.items():
        if not name.startswith("model.layers."):
            assert torch.equal(value, before[name]), name
            continue
        j, rest = int(name.split(".")[2]), name.split(".", 3)[3]
        if j == 0:
            assert torch.equal(value, before[f"model.layers.0.{rest}"]), name
        elif j == 2:  # the drafter's layer 3 moved to position 2
            assert torch.equal(value, before[f"model.layers.1.{rest}"]), name
        elif rest.startswith(("self_attn.o_proj", "mlp.down_proj")):
            assert value.abs().sum() == 0, name
        else:
            assert torch.equal(value, target[f"model.layers.2.{rest}"]), name
    config, _ = read_drafter_config(tmp_path / "grown")
    assert config.layers == [0, 2, 3] and config.run_block_size == 0
    meta = json.loads((tmp_path / "grown" / "drafter_config.json").read_text())
    assert meta[GROW_KEY]["layers_before"] == [0, 3] and meta[GROW_KEY]["added"] == [2]


def test_an_int8_stored_drafter_grows_from_its_dequantized_weights(model_dir, tmp_path):
    src = save_drafter(model_dir, tmp_path / "src", storage="int8")
    grow_drafter(str(src), [1], str(tmp_path / "grown"))
    (want, got), _ = block_logits(model_dir, [src, tmp_path / "grown"])
    assert torch.equal(want, got)


def test_a_grown_drafter_trains_and_its_new_layers_move(model_dir, tmp_path):
    """Training reaches the new layers: their zeroed projections get a gradient on the first step."""
    from d3d.training.objective import build_drafter_body
    from d3d.training.resolve import resolve_models
    from d3d.training.train_config import TrainConfig

    src = save_drafter(model_dir, tmp_path / "src")
    grow_drafter(str(src), [1], str(tmp_path / "grown"))
    cfg = TrainConfig(target=str(model_dir), init=str(tmp_path / "grown"), data=[], block_size=BS)
    facts = resolve_models(cfg)
    assert facts.layers == [0, 1, 3]
    body = build_drafter_body(cfg, facts)
    new = body.model.layers[1]
    assert new.self_attn.o_proj.weight.abs().sum() == 0 and new.mlp.down_proj.weight.abs().sum() == 0
    body(Rows.clean(prompt(3, 9), 0)).float().pow(2).mean().backward()
    assert new.self_attn.o_proj.weight.grad.abs().sum() > 0
    assert new.mlp.down_proj.weight.grad.abs().sum() > 0


def test_grown_layers_refuse_what_cannot_be_placed():
    assert grown_layers([0, 1, 24, 28, 29], [12, 18], 30) == [0, 1, 12, 18, 24, 28, 29]
    with pytest.raises(D3DError, match="already layers"):
        grown_layers([0, 1, 24], [1], 30)
    with pytest.raises(D3DError, match="do not exist"):
        grown_layers([0, 1, 24], [30], 30)
    with pytest.raises(D3DError, match="twice"):
        grown_layers([0, 1, 24], [5, 5], 30)
    with pytest.raises(D3DError, match="names no layer"):
        grown_layers([0, 1, 24], [], 30)


def test_the_command_writes_a_grown_drafter_and_refuses_bad_input(model_dir, tmp_path, capsys):
    src = save_drafter(model_dir, tmp_path / "src")
    assert main(["grow", "--drafter", str(src), "--add", "1,2", "--out", str(tmp_path / "g")]) == 0
    assert "layers [0, 3] -> [0, 1, 2, 3]" in capsys.readouterr().out
    assert main(["grow", "--drafter", str(src), "--add", "1", "--out", str(tmp_path / "g")]) != 0  # not empty
    assert "not an empty directory" in capsys.readouterr().err
    assert main(["grow", "--drafter", str(src), "--add", "one", "--out", str(tmp_path / "h")]) != 0
    assert "comma-separated layer ids" in capsys.readouterr().err
    other = save_tiny_model(tmp_path / "wide", "llama", hidden_size=48)
    assert main(["grow", "--drafter", str(src), "--add", "1", "--out", str(tmp_path / "i"),
                 "--target", str(other)]) != 0
    assert "differs from the drafter's model" in capsys.readouterr().err


def test_a_target_with_another_tokenizer_is_refused(model_dir, tmp_path):
    """Same shapes, another vocabulary: the added layers would come from a model that reads other ids."""
    src = save_drafter(model_dir, tmp_path / "src")
    other = save_tiny_tokenizer(save_tiny_model(tmp_path / "other", "llama"), vocab_size=TINY["vocab_size"] - 1)
    with pytest.raises(D3DError, match="another tokenizer"):
        grow_drafter(str(src), [1], str(tmp_path / "grown"), target=str(other))
    assert not (tmp_path / "grown").exists()  # refused before anything is written
