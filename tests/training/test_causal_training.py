"""Training honours causal block attention: the diffusion loss of a causal run is the weighted
cross-entropy of a plain causal pass over prefix + anchor + masks (float64), `d3d train
--block-attention causal` saves a causal drafter, and a run continuing a drafter keeps its setting."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from d3d.cli import main
from d3d.errors import D3DError
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from d3d.models.drafter import read_drafter_config
from d3d.training.losses import LossConfig, drafter_losses, position_weights
from d3d.training.packing import IGNORE, Example, PackedBatch, PackingConfig, collate, pack_example
from d3d.training.train import train
from tests.helpers import MASK_ID
from tests.training.test_train import tiny_config

BS = 5


@pytest.mark.parametrize("labels", ["next-token", "same-position"])
def test_causal_diffusion_loss_is_the_plain_causal_passes_cross_entropy(tiny_llama_dir, labels):
    model = load_decoder(tiny_llama_dir, dtype=torch.float64)
    g = np.random.default_rng(3)
    example = Example(g.integers(0, 90, 4).astype(np.int32), g.integers(0, 90, 12).astype(np.int32))
    packed = pack_example(example, np.array([5]), PackingConfig(BS, 1, MASK_ID, labels))
    batch = PackedBatch.from_dict(collate([packed], MASK_ID))
    cfg = LossConfig(BS, lambda_ar=0.0, labels=labels, block_attention="causal")
    with torch.no_grad():
        got = drafter_losses(model, batch, cfg).diff
        bidirectional = drafter_losses(model, batch, LossConfig(BS, lambda_ar=0.0, labels=labels)).diff
        pos = int(packed.anchor_pos[0])
        ids = torch.cat([packed.input_ids[:pos], packed.blocks[0]])[None]
        logits = model(Rows.clean(ids, 0), logits_from=pos)[0]  # [B, V]: the block as ordinary causal rows
    y = packed.block_labels[0]
    w = position_weights(BS, cfg.decay, labels)[y != IGNORE]
    ce = F.cross_entropy(logits[y != IGNORE], y[y != IGNORE], reduction="none")
    want = (w * ce).sum() / w.sum()
    torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10)
    assert not torch.isclose(bidirectional, want)


def test_train_saves_a_causal_drafter_and_continuing_runs_keep_it(tmp_path, tiny_llama_dir):
    out = train(tiny_config(tmp_path, tiny_llama_dir, block_attention="causal", max_steps=2))
    assert read_drafter_config(out)[0].block_attention == "causal"
    default = train(tiny_config(tmp_path, tiny_llama_dir, max_steps=1, output_dir=str(tmp_path / "default")))
    assert read_drafter_config(default)[0].block_attention == "bidirectional"
    kept = train(tiny_config(tmp_path, tiny_llama_dir, init=str(out), max_steps=1, output_dir=str(tmp_path / "more")))
    assert read_drafter_config(kept)[0].block_attention == "causal"
    with pytest.raises(D3DError, match="trained with causal block attention, not bidirectional"):
        train(tiny_config(tmp_path, tiny_llama_dir, init=str(out), block_attention="bidirectional",
                          output_dir=str(tmp_path / "clash")))


def test_cli_refuses_an_unknown_block_attention(tmp_path, tiny_llama_dir, capsys):
    data = tmp_path / "data.jsonl"
    tiny_config(tmp_path, tiny_llama_dir)  # writes the rows
    assert main(["train", "--data", str(data), "--target", str(tiny_llama_dir), "--block-attention", "sideways",
                 "--output-dir", str(tmp_path / "run")]) == 2
    assert "block attention must be one of bidirectional, causal" in capsys.readouterr().err
