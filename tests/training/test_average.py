"""`d3d average`: the weighted average of drafters of one architecture, and its refusals."""

from __future__ import annotations

import json

import pytest
import torch

from d3d.cli import main
from d3d.errors import D3DError
from d3d.models import hub
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter, read_weights
from d3d.training.average import AVERAGE_KEY, average_drafters, normalized_weights
from tests.conftest import save_tiny_model, save_tiny_tokenizer
from tests.helpers import MASK_ID, prompt

BS = 6


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_tokenizer(save_tiny_model(tmp_path_factory.mktemp("llama"), "llama"))


def save_drafter(model_dir, path, seed, layers=(0, 2, 3), vocab=None, storage="dense"):
    """A drafter from the tiny target whose layer weights are moved by a seed-dependent perturbation."""
    target = load_decoder(model_dir)
    fingerprint = hub.tokenizer_fingerprint(hub.load_tokenizer(model_dir))
    drafter = Drafter.from_base(model_dir, list(layers), BS, MASK_ID, fingerprint, target=target)
    if vocab is not None:
        drafter.set_draft_vocab(vocab)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in drafter.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=gen))
    drafter.save_pretrained(path, storage=storage)
    return path


def test_the_average_is_the_weighted_interpolation_tensor_by_tensor(model_dir, tmp_path):
    a, b = save_drafter(model_dir, tmp_path / "a", 1), save_drafter(model_dir, tmp_path / "b", 2)
    report = average_drafters([str(a), str(b)], str(tmp_path / "ab"), [1.0, 3.0])
    assert report.weights == [0.25, 0.75]
    wa, wb, got = (read_weights(p / "model.safetensors") for p in (a, b, tmp_path / "ab"))
    assert got.keys() == wa.keys() and report.tensors == len(wa)
    for key in wa:
        assert not torch.equal(wa[key], wb[key]), key  # the perturbation moved every tensor
        torch.testing.assert_close(got[key], 0.25 * wa[key] + 0.75 * wb[key], rtol=0, atol=1e-7)
    meta = json.loads((tmp_path / "ab" / "drafter_config.json").read_text())
    assert meta[AVERAGE_KEY]["weights"] == [0.25, 0.75]


def test_weight_one_reproduces_a_drafters_draft_exactly(model_dir, tmp_path):
    a, b = save_drafter(model_dir, tmp_path / "a", 1), save_drafter(model_dir, tmp_path / "b", 2)
    average_drafters([str(a), str(b)], str(tmp_path / "only_b"), [0.0, 1.0])
    target = load_decoder(model_dir)
    want, got = (Drafter.from_pretrained(p, target=target) for p in (b, tmp_path / "only_b"))
    other = Drafter.from_pretrained(a, target=target)
    prefix = prompt(3, 9)
    with torch.no_grad():
        logits = [d.draft_logits(d.new_cache(64), prefix) for d in (want, got, other)]
    assert torch.equal(logits[0], logits[1])
    assert not torch.equal(logits[0], logits[2])


def test_int8_stored_drafters_are_averaged_from_their_dequantized_weights(model_dir, tmp_path):
    a = save_drafter(model_dir, tmp_path / "a", 1, storage="int8")
    b = save_drafter(model_dir, tmp_path / "b", 1)  # the same weights, stored dense
    average_drafters([str(a), str(b)], str(tmp_path / "ab"))
    wa, wb, got = (read_weights(p / "model.safetensors") for p in (a, b, tmp_path / "ab"))
    for key in wa:
        torch.testing.assert_close(got[key], 0.5 * wa[key] + 0.5 * wb[key], rtol=0, atol=1e-7)


def test_drafters_of_different_shapes_or_vocabularies_are_refused(model_dir, tmp_path):
    a = save_drafter(model_dir, tmp_path / "a", 1)
    other_layers = save_drafter(model_dir, tmp_path / "layers", 2, layers=(0, 1))
    with pytest.raises(D3DError, match="different model configs|differ in drafter settings"):
        average_drafters([str(a), str(other_layers)], str(tmp_path / "x"))
    v1 = save_drafter(model_dir, tmp_path / "v1", 1, vocab=torch.arange(5, 97, 3))
    v2 = save_drafter(model_dir, tmp_path / "v2", 2, vocab=torch.arange(6, 98, 3))
    with pytest.raises(D3DError, match="drafting vocabulary"):
        average_drafters([str(v1), str(v2)], str(tmp_path / "y"))
    with pytest.raises(D3DError, match="one of the averaged drafters"):
        average_drafters([str(a), str(a)], str(a))
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


@pytest.mark.parametrize("weights, message", [
    ([1.0], "one weight per"), ([1.0, -1.0], "non-negative"), ([0.0, 0.0], "positive sum"),
    ([float("nan"), 1.0], "non-negative"), ([float("inf"), 1.0], "finite")])
def test_bad_weights_are_refused(weights, message):
    with pytest.raises(D3DError, match=message):
        normalized_weights(2, weights)
    with pytest.raises(D3DError, match="at least two"):
        normalized_weights(1, None)


def test_cli_writes_the_average_and_refuses_bad_input_in_one_line(model_dir, tmp_path, capsys):
    a, b = save_drafter(model_dir, tmp_path / "a", 1), save_drafter(model_dir, tmp_path / "b", 2)
    assert main(["average", "--drafter", str(a), "--drafter", str(b), "--out", str(tmp_path / "ab")]) == 0
    assert "tensors averaged (0.500 x" in capsys.readouterr().out
    assert main(["average", "--drafter", str(a), "--drafter", str(b), "--out", str(tmp_path / "ab")]) == 2
    err = capsys.readouterr().err
    assert "not an empty directory" in err and "Traceback" not in err
    assert main(["average", "--drafter", str(a), "--drafter", str(b), "--weights", "1,x", "--out",
                 str(tmp_path / "c")]) == 2
    assert "comma-separated numbers" in capsys.readouterr().err
