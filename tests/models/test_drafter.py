"""Drafter checkpoints round-trip exactly, and bad checkpoints fail with clear errors."""

from __future__ import annotations

import json

import pytest
import torch

from d3d.errors import D3DError
from d3d.inference.async_drafting import InlineBackend, SuccessorDrafter
from d3d.models.decoder import load_decoder
from d3d.models.drafter import ACCEPTANCE_FILE, CONFIG_NAME, WEIGHTS_NAME, Drafter
from tests.helpers import MASK_ID


def draft(drafter: Drafter, committed: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return drafter.draft_logits(drafter.new_cache(), committed)


@pytest.mark.parametrize("share", [True, False])
def test_round_trip_gives_identical_predictions(tiny_qwen3_dir, tmp_path, share):
    target = load_decoder(tiny_qwen3_dir)
    drafter = Drafter.from_base(tiny_qwen3_dir, [1, 3], 4, MASK_ID, "fp", target=target if share else None)
    with torch.no_grad():  # make it differ from the base layers, as training would
        drafter.model.model.layers[0].mlp.gate_up_proj.weight.add_(0.01)
    drafter.save_pretrained(tmp_path / "d")
    loaded = Drafter.from_pretrained(tmp_path / "d", target=target if share else None)
    ids = torch.randint(0, 90, (1, 9), generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(draft(loaded, ids), draft(drafter, ids), atol=0, rtol=0)
    assert loaded.config == drafter.config
    assert loaded.model.layer_ids == [1, 3]
    stored = set(__import__("safetensors.torch").torch.load_file(str(tmp_path / "d" / WEIGHTS_NAME)))
    assert ("model.embed_tokens.weight" in stored) == (not share)
    if share:
        assert loaded.model.lm_head.weight is target.lm_head.weight


def test_draft_logits_cache_only_clean_tokens(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0], 5, MASK_ID, "fp", target=target)
    cache = drafter.new_cache()
    ids = torch.randint(0, 90, (1, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        first = drafter.draft_logits(cache, ids[:, :8])
        assert cache.length == 8 and first.shape == (1, 4, 97)
        incremental = drafter.draft_logits(cache, ids)
        assert cache.length == 12
    torch.testing.assert_close(incremental, draft(drafter, ids), atol=1e-5, rtol=1e-5)


def test_bad_checkpoints_raise_clear_errors(tiny_llama_dir, tmp_path):
    target = load_decoder(tiny_llama_dir)
    with pytest.raises(D3DError, match="not a drafter checkpoint"):
        Drafter.from_pretrained(tmp_path, target=target)
    drafter = Drafter.from_base(tiny_llama_dir, [0], 4, MASK_ID, "fp", target=target)
    drafter.save_pretrained(tmp_path / "d")
    with pytest.raises(D3DError, match="with its target"):
        Drafter.from_pretrained(tmp_path / "d")
    (tmp_path / "d" / WEIGHTS_NAME).write_bytes(b"garbage")
    with pytest.raises(D3DError, match="cannot read drafter weights"):
        Drafter.from_pretrained(tmp_path / "d", target=target)
    meta = json.loads((tmp_path / "d" / CONFIG_NAME).read_text())
    meta["drafter"]["block_size"] = 1
    (tmp_path / "d" / CONFIG_NAME).write_text(json.dumps(meta))
    with pytest.raises(D3DError, match="block size"):
        Drafter.from_pretrained(tmp_path / "d", target=target)
    with pytest.raises(D3DError, match="do not exist"):
        Drafter.from_base(tiny_llama_dir, [0, 9], 4, MASK_ID, "fp")


def test_vocabulary_mismatch_is_rejected(tiny_llama_dir, tmp_path):
    from tests.conftest import save_tiny_model

    other = load_decoder(save_tiny_model(tmp_path / "other", "llama", vocab_size=50))
    drafter = Drafter.from_base(tiny_llama_dir, [0], 4, MASK_ID, "fp", target=load_decoder(tiny_llama_dir))
    drafter.save_pretrained(tmp_path / "d")
    with pytest.raises(D3DError, match="vocabulary"):
        Drafter.from_pretrained(tmp_path / "d", target=other)


def test_next_token_labels_read_the_rows_one_before_same_position(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir, dtype=torch.float64)
    same = Drafter.from_base(tiny_llama_dir, [0, 1], 6, 96, "", target=target, dtype=torch.float64)
    nxt = Drafter.from_base(tiny_llama_dir, [0, 1], 6, 96, "", target=target, dtype=torch.float64,
                            labels="next-token")
    ids = torch.arange(3, 12)[None]
    a, b = same.draft_logits(same.new_cache(), ids), nxt.draft_logits(nxt.new_cache(), ids)
    assert a.shape == b.shape == (1, 5, 97)
    torch.testing.assert_close(b[:, 1:], a[:, :-1])  # drafted token j+1 under next-token = row j
    assert not torch.allclose(b[:, 0], a[:, 0])


def test_prior_tau_prefers_the_acceptance_table_measured_on_the_weights(tiny_llama_dir, tmp_path):
    """`--budget auto` assumes the tau measured on the shipped weights (acceptance.json), not the
    validation tau training recorded on other rows; without a table, the recorded one."""
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0], 4, MASK_ID, "fp", target=target)
    drafter.config.trained, drafter.config.training = True, {"validation_tau": 1.7}
    drafter.save_pretrained(tmp_path / "d")
    loaded = Drafter.from_pretrained(tmp_path / "d", target=target)
    assert loaded.measured_tau is None and loaded.prior_tau() == 1.7
    (tmp_path / "d" / ACCEPTANCE_FILE).write_text(json.dumps({"tau_sim": 2.35, "calibration": {}}))
    loaded = Drafter.from_pretrained(tmp_path / "d", target=target)
    assert loaded.prior_tau() == 2.35 and loaded.config.recorded_tau() == 1.7
    assert InlineBackend(SuccessorDrafter(loaded)).recorded_tau == 2.35  # what the budget model reads
    (tmp_path / "d" / ACCEPTANCE_FILE).write_text(json.dumps({"calibration": {}}))  # no overall tau: the recorded one
    assert Drafter.from_pretrained(tmp_path / "d", target=target).prior_tau() == 1.7
    for bad in ("{not json", json.dumps({"tau_sim": "2.3"}), json.dumps([2.3]), json.dumps({"tau_sim": 0.5})):
        (tmp_path / "d" / ACCEPTANCE_FILE).write_text(bad)
        with pytest.raises(D3DError, match="not an acceptance table"):
            Drafter.from_pretrained(tmp_path / "d", target=target)
