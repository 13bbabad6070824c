"""Offline acceptance (`d3d.inference.offline`) simulates greedy synchronous decoding exactly: on tiny
float64 models, with the target's own greedy output as the stored response, the simulated rounds
equal a real `speculative_decode` run's round for round."""

from __future__ import annotations

import pytest
import torch

from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import DecodeStats, GenerationConfig, autoregressive_decode, speculative_decode
from d3d.inference.offline import RowAcceptance, offline_acceptance, simulate_rounds
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.helpers import MASK_ID, prompt


def chunks(decode, *args, max_new: int, eos=()) -> list[list[int]]:
    cfg = GenerationConfig(max_new_tokens=max_new)
    return list(decode(*args, cfg, StopChecker(max_new, eos), DecodeStats("x")))


def first_new_token_after(tokens: list[int], start: int) -> int:
    """The first token at index >= start that does not occur before it."""
    return next(t for i, t in enumerate(tokens) if i >= start and t not in tokens[:i])


def drafter_for(model_dir, target, layers, labels, block_size=6) -> Drafter:
    return Drafter.from_base(model_dir, layers, block_size, MASK_ID, "", target=target, dtype=torch.float64,
                             labels=labels)


@pytest.mark.parametrize("labels,layers", [("next-token", [0, 1, 2, 3]), ("same-position", [0, 1]),
                                           ("next-token", [0, 2, 3])])
@pytest.mark.parametrize("vocab", [None, "even"])
def test_simulated_rounds_equal_a_real_sync_run(tiny_llama_dir, labels, layers, vocab):
    target = load_decoder(tiny_llama_dir, dtype=torch.float64)
    drafter = drafter_for(tiny_llama_dir, target, layers, labels)
    if vocab == "even":
        drafter.set_draft_vocab(torch.arange(0, 97, 2))
    rows, real_rounds = [], []
    for seed, max_new, eos in [(1, 40, ()), (5, 33, ()), (6, 40, ()), (1, 40, "eos")]:  # varied tiny outputs
        p = prompt(seed)
        response = [t for c in chunks(autoregressive_decode, target, p, max_new=max_new) for t in c]
        stop = () if eos == () else (first_new_token_after(response, 10),)  # an eos inside the response
        if stop:
            response = response[: response.index(stop[0]) + 1]
            assert len(response) > 10
        rounds = chunks(speculative_decode, target, DrafterSource(drafter, SamplingConfig()), p, max_new=max_new,
                        eos=stop)
        assert [t for c in rounds for t in c] == response
        rows.append((p[0].tolist(), response))
        real_rounds.append([len(c) for c in rounds[1:]])  # the first chunk is the prefill's token
    result = offline_acceptance(drafter, rows)
    assert result.row_rounds == real_rounds
    assert result.tau_sim == pytest.approx(sum(map(sum, real_rounds)) / sum(map(len, real_rounds)))
    if layers == [0, 1, 2, 3]:  # the target's own layers under next-token labels: blocks get accepted
        assert max(max(r) for r in real_rounds) > 1


def test_statistics_on_a_hand_made_row():
    # anchors s = 0..4 of a 6-token response, B-1 = 3 drafted tokens each
    correct = torch.tensor([[1, 1, 0], [0, 1, 1], [1, 1, 1], [1, 1, 1], [1, 0, 0]], dtype=torch.bool)
    known = torch.tensor([[1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 0], [1, 0, 0]], dtype=torch.bool)
    row = RowAcceptance(correct, known, torch.full((5, 3), 0.5))
    assert row.accepted.tolist() == [2, 0, 3, 2, 1]
    assert row.reached.tolist() == [[1, 1, 1], [1, 0, 0], [1, 1, 1], [1, 1, 0], [1, 0, 0]]
    # s=0 appends 2+1, s=3 appends min(2+1, 6-1-3) = 2: done
    assert simulate_rounds(row.accepted.tolist(), 6) == [3, 2]
    assert simulate_rounds([0] * 5, 6) == [1] * 5


def test_alpha_and_calibration_count_only_reached_tokens(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir, dtype=torch.float64)
    drafter = drafter_for(tiny_llama_dir, target, [0, 1, 2, 3], "next-token")
    p = prompt(1)
    response = [t for c in chunks(autoregressive_decode, target, p, max_new=30) for t in c]
    result = offline_acceptance(drafter, [(p[0].tolist(), response)])
    counts = result.calibration_by_position["count"]
    assert sum(counts[0]) == len(response) - 1  # token 1 is verified at every anchor
    assert all(sum(counts[j]) <= sum(counts[j - 1]) for j in range(1, len(counts)))
    assert result.calibration["count"] == [sum(c[b] for c in counts) for b in range(10)]
    assert 0 <= min(result.alpha) and max(result.alpha) <= 1
    assert result.anchors == len(response) - 1
