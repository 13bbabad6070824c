"""The budget model: priors to hit rates, measured times to a choice, and calibration end to end."""

from __future__ import annotations

import time

import pytest

from d3d.inference.async_drafting import Begin, InlineBackend, SuccessorDrafter
from d3d.inference.budget import (
    CALIBRATION_REPEATS,
    AcceptancePrior,
    calibrate_budget,
    candidate_budgets,
    choose_budget,
    expected_hit_rate,
    expected_round_s,
    per_token_acceptance,
)
from d3d.inference.sampling import SamplingConfig
from d3d.inference.successors import Budget
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter


@pytest.mark.parametrize("tau, block_size", [(1.0, 16), (1.5, 16), (4.0, 16), (7.9, 16), (2.0, 4)])
def test_per_token_acceptance_inverts_tau(tau, block_size):
    alpha = per_token_acceptance(tau, block_size)
    assert 1 + sum(alpha**j for j in range(1, block_size)) == pytest.approx(tau, abs=1e-6)


def test_hit_rate_grows_with_coverage_and_fanout():
    prior = AcceptancePrior(tau=3.0, alt_hit=0.3, alt_decay=0.5)
    rates = {(c, f): expected_hit_rate(prior, Budget(c, f), 16) for c in (1, 2, 4, 8, 16) for f in (1, 2, 3)}
    for (c, f), rate in rates.items():
        assert 0 <= rate <= 1
        if c > 1:
            assert rate > rates[(c // 2 if c > 2 else 1, f)]
            assert f == 1 or rate > rates[(c, f - 1)]
    alpha = per_token_acceptance(3.0, 16)
    assert rates[(1, 1)] == pytest.approx(alpha**16)  # full acceptance, guessed right
    untrained = AcceptancePrior(tau=1.0, alt_hit=0.2)  # alpha = 0: only position 1, only alternatives
    assert expected_hit_rate(untrained, Budget(2, 2), 16) == pytest.approx(0.2 * 1.5)
    assert expected_hit_rate(untrained, Budget(12, 2), 16) == pytest.approx(0.2 * 1.5)


def test_choice_minimises_the_expected_round():
    prior = AcceptancePrior(tau=1.0, alt_hit=0.4, alt_decay=0.5)
    t_d = {Budget(1, 1): 0.004, Budget(2, 1): 0.006, Budget(2, 2): 0.009, Budget(2, 3): 0.030}
    choice = choose_budget(t_v=0.010, t_s=0.005, t_d=t_d, prior=prior, block_size=16)
    # C=2,F=2: hidden (9 ms < 10 ms) and catches 0.4 * 1.5 = 60% of rejections; F=3 is not hidden
    assert choice.budget == Budget(2, 2)
    assert choice.table[2]["round_ms"] == pytest.approx(expected_round_s(0.010, 0.009, 0.005, 0.6) * 1e3, abs=0.01)
    assert "t_v 10.0 ms" in choice.reason and "hidden behind" in choice.reason
    serial = choose_budget(0.010, 0.005, t_d, prior, 16, concurrent=False)
    assert serial.budget == Budget(1, 1)  # nothing overlaps: the cheapest pass wins


def test_candidate_budgets_are_cheapest_first_and_capped_at_the_block():
    budgets = candidate_budgets(4)
    assert budgets[0] == Budget(1, 1) and all(b.coverage <= 4 for b in budgets)
    tokens = [b.tokens(4) for b in budgets]
    assert tokens == sorted(tokens) and len(set(budgets)) == len(budgets)


class PassLog:
    """Records (start, end, block rows) of every call it wraps, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float, int]] = []

    def wrap(self, fn):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            self.calls.append((start, time.perf_counter(), out.shape[-2] if out.dim() >= 2 else 0))
            return out
        return timed


def bounds(calls: list[tuple[float, float, int]]) -> tuple[float, float]:
    """(shortest call, span from the first start to the last end): any median of timings of
    these calls (plus bookkeeping) lies in between."""
    return min(end - start for start, end, _ in calls), calls[-1][1] - calls[0][0]


def test_calibration_times_real_passes(tiny_llama_dir):
    """Every reported time is a median of passes that really ran: drafter passes in the order
    begin, warm-up + repeats of the sync draft, then warm-up + repeats per budget; target passes
    of B rows for t_v."""
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0], 4, 96, "fp", target=target)
    drafts, verifies = PassLog(), PassLog()
    drafter.block_logits = drafts.wrap(drafter.block_logits)
    target.forward = verifies.wrap(target.forward)
    backend = InlineBackend(SuccessorDrafter(drafter))
    choice = calibrate_budget(target, backend, AcceptancePrior(1.2), concurrent=False)
    assert choice.budget in candidate_budgets(4) and backend.pending == 0
    per = CALIBRATION_REPEATS + 1
    timed = [b["budget"] for b in choice.table]
    assert timed == [str(b) for b in candidate_budgets(4)[: len(timed)]] and len(drafts.calls) == 1 + per * (1 + len(timed))
    low, high = bounds(drafts.calls[2 : 1 + per])  # the sync draft's timed repeats
    assert low <= choice.t_s <= high
    for k, row in enumerate(choice.table):
        low, high = bounds(drafts.calls[2 + per * (k + 1) : 1 + per * (k + 2)])
        assert low <= row["t_d_ms"] / 1e3 + 5e-6 and row["t_d_ms"] / 1e3 <= high + 5e-6, row
    block_passes = [c for c in verifies.calls if c[2] == 4]  # B-row verification passes (the prefill returns one row)
    assert len(block_passes) == per
    low, high = bounds(block_passes[1:])
    assert low <= choice.t_v <= high
    reply = backend.call(Begin((1, 2, 3), 3, SamplingConfig(), 0, Budget(2, 1)))  # drafts normally afterwards
    assert len(reply.tokens) == 3
