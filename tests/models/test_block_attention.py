"""Causal block attention: a causal block pass is exactly a plain causal pass over prefix + anchor +
masks (float64), the bidirectional default is not, and the setting is recorded in, and read back
from, the drafter's config (drafters saved before it existed load as bidirectional)."""

from __future__ import annotations

import json

import pytest
import torch

from d3d.errors import D3DError
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from d3d.models.drafter import CONFIG_NAME, Drafter, read_drafter_config
from tests.helpers import MASK_ID, prompt

BS = 5


def two_blocks(prefix: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Blocks [1, 2, B] anchored at prefix[-1] and prefix[-4], and their positions [1, 2]."""
    n = prefix.shape[1]
    blocks = torch.full((1, 2, BS), MASK_ID)
    blocks[0, :, 0] = prefix[0, [n - 1, n - 4]]
    return blocks, torch.tensor([[n - 1, n - 4]])


def plain_causal_block(model, prefix: torch.Tensor, anchor_pos: int) -> torch.Tensor:
    """Logits [B, V] of prefix[:anchor_pos] + anchor + masks run as ordinary causal rows."""
    ids = torch.cat([prefix[:, : anchor_pos + 1], torch.full((1, BS - 1), MASK_ID)], 1)
    return model(Rows.clean(ids, 0))[0, anchor_pos:]


@pytest.mark.parametrize("cached", [False, True])
def test_causal_blocks_equal_a_plain_causal_pass(target_dir, cached):
    model = load_decoder(target_dir, dtype=torch.float64)
    prefix = prompt(3, 9)
    blocks, anchor_pos = two_blocks(prefix)
    with torch.no_grad():
        cache = model.new_cache(1, 32) if cached else None
        if cached:  # the clean prefix is already in the cache: the pass holds the blocks only
            model(Rows.clean(prefix, 0), cache)
            clean = Rows.clean(prefix[:, :0], cache.length)
        else:
            clean = Rows.clean(prefix, 0)
        causal = model(Rows.with_blocks(clean, blocks, anchor_pos, causal=True), cache, logits_from=clean.num_rows)[0]
        bidirectional = model(Rows.with_blocks(clean, blocks, anchor_pos), cache, logits_from=clean.num_rows)[0]
        for k, pos in enumerate(anchor_pos[0].tolist()):
            want = plain_causal_block(model, prefix, pos)
            torch.testing.assert_close(causal[k * BS : (k + 1) * BS], want, atol=1e-10, rtol=1e-10)
            assert not torch.allclose(bidirectional[k * BS : (k + 1) * BS], want)  # the default sees later rows


def test_drafter_records_and_applies_block_attention(tiny_llama_dir, tmp_path):
    target = load_decoder(tiny_llama_dir, dtype=torch.float64)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], BS, MASK_ID, "", target=target, dtype=torch.float64,
                                labels="next-token", block_attention="causal")
    drafter.save_pretrained(tmp_path / "d")
    loaded = Drafter.from_pretrained(tmp_path / "d", target=target)
    assert loaded.config.block_attention == "causal" and loaded.config.causal_blocks
    p = prompt(4, 8)
    with torch.no_grad():
        got = loaded.draft_logits(loaded.new_cache(32), p)[0]  # [B-1, V]: next-token rows 0..B-2
        want = plain_causal_block(drafter.model, p, p.shape[1] - 1)[:-1]
        bidirectional = Drafter(drafter.model, read_drafter_config(tmp_path / "d")[0])
        bidirectional.config.block_attention = "bidirectional"
        other = bidirectional.draft_logits(bidirectional.new_cache(32), p)[0]
    torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10)
    assert not torch.allclose(other, want)


def test_old_configs_load_bidirectional_and_unknown_values_are_refused(tiny_llama_dir, tmp_path):
    target = load_decoder(tiny_llama_dir)
    Drafter.from_base(tiny_llama_dir, [0], BS, MASK_ID, "", target=target).save_pretrained(tmp_path / "d")
    file = tmp_path / "d" / CONFIG_NAME
    meta = json.loads(file.read_text())
    del meta["drafter"]["block_attention"]  # a drafter saved before the setting existed
    file.write_text(json.dumps(meta))
    assert read_drafter_config(tmp_path / "d")[0].block_attention == "bidirectional"
    meta["drafter"]["block_attention"] = "sideways"
    file.write_text(json.dumps(meta))
    with pytest.raises(D3DError, match="unknown block attention 'sideways'"):
        read_drafter_config(tmp_path / "d")
