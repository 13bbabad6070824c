"""Every inference path honours causal block attention (float64 tiny models).

A causal-block drafter built from ALL the target's layers with next-token labels is the target
itself on its anchor row: its first drafted token is always the target's greedy token. So a real
sync run accepts at least one drafted token every round, offline acceptance (which simulates it)
agrees round for round with alpha_1 = 1, and the batched drafter pass of the server gives each
slot the single-sequence logits. A path that ignored the setting (bidirectional blocks) breaks the
first property: the anchor row would see the mask rows after it.
"""

from __future__ import annotations

import torch

from d3d.inference.batch_engine import batched_block_logits
from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import DecodeStats, GenerationConfig, autoregressive_decode, speculative_decode
from d3d.inference.offline import offline_acceptance
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from d3d.models.ragged_cache import new_ragged_cache
from tests.helpers import MASK_ID, prompt


def full_depth_causal_drafter(model_dir, target, block_size: int = 5) -> Drafter:
    return Drafter.from_base(model_dir, [0, 1, 2, 3], block_size, MASK_ID, "", target=target, dtype=torch.float64,
                             labels="next-token", block_attention="causal")


def chunks(decode, *args, max_new: int) -> list[list[int]]:
    cfg = GenerationConfig(max_new_tokens=max_new)
    return list(decode(*args, cfg, StopChecker(max_new), DecodeStats("x")))


def test_sync_and_offline_accept_the_anchor_rows_token_every_round(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir, dtype=torch.float64)
    drafter = full_depth_causal_drafter(tiny_llama_dir, target)
    rows, real_rounds = [], []
    for seed in (1, 5):
        p = prompt(seed)
        response = [t for c in chunks(autoregressive_decode, target, p, max_new=30) for t in c]
        rounds = chunks(speculative_decode, target, DrafterSource(drafter, SamplingConfig()), p, max_new=30)
        assert [t for c in rounds for t in c] == response
        sizes = [len(c) for c in rounds[1:]]  # the first chunk is the prefill's token
        assert min(sizes[:-1]) >= 2  # the drafted first token is the target's own (the last round may be cut)
        rows.append((p[0].tolist(), response))
        real_rounds.append(sizes)
    result = offline_acceptance(drafter, rows)
    assert result.row_rounds == real_rounds
    assert result.alpha[0] == 1.0


@torch.no_grad()
def test_batched_causal_drafting_matches_single_sequence_drafting(tiny_qwen3_dir):
    target = load_decoder(tiny_qwen3_dir, dtype=torch.float64)
    drafter = full_depth_causal_drafter(tiny_qwen3_dir, target, block_size=4)
    seqs = [prompt(18, 11)[0].tolist(), prompt(19, 5)[0].tolist()]
    cached = [7, 4]  # tokens already in each slot's drafter cache; the rest are fed this pass
    cache = new_ragged_cache(drafter.model, max_batch=2)
    for s, c in zip(seqs, cached):
        single = drafter.model.new_cache(1, c + 4)
        drafter.model(Rows.clean(torch.tensor([s[:c]]), 0), single)
        cache.place(single)
    logits = batched_block_logits(drafter, cache, [s[c:] for s, c in zip(seqs, cached)], [len(s) - 1 for s in seqs])
    for r, s in enumerate(seqs):
        want = drafter.draft_logits(drafter.new_cache(), torch.tensor([s]))[0]
        torch.testing.assert_close(logits[r], want, atol=1e-10, rtol=1e-10)
        assert logits[r, 0].argmax() == target(Rows.clean(torch.tensor([s]), 0))[0, -1].argmax()
