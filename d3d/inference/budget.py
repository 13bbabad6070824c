"""Choosing the successor budget (C, F) for asynchronous decoding on the machine at hand.

The model (docs/async.md). One asynchronous round starts when its candidates are ready; the target
verifies them (t_v) while the drafter runs the packed successor pass (t_d(C, F)); the next round
can start once both are done, plus, on a miss, a synchronous draft (t_s):

    round(C, F) = max(t_v, t_d) + (1 - h(C, F)) * t_s        (concurrent backends)
    round(C, F) = t_v + t_d + (1 - h(C, F)) * t_s            (inline backend: no overlap)
    sync round  = t_s + t_v

Tokens per round (tau) do not depend on the budget, so the best budget minimises round(C, F).
The hit rate h comes from priors: a per-token acceptance alpha derived from the expected tau
(tau = 1 + alpha + ... + alpha^(B-1)), so a rejection at position i has probability
alpha^(i-1) (1 - alpha) and full acceptance alpha^(B-1); a rejection is caught when the target's
token is among the F alternatives, with probability a_1 (1 + r + ... + r^(F-1)) (a_1 = share
caught by the best alternative, r = decay per further rank); full acceptance is caught when the
bonus guess is right, taken to be alpha. Times are measured: t_v by timing B-token target passes
while the drafting side times its passes (so contention is included), t_d and t_s on the drafting
side with its own threads.

This module knows nothing about the decode loop; `async_engine.py` calls `calibrate_budget`.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from d3d.inference.async_drafting import Calibrate
from d3d.inference.successors import Budget
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel

COVERAGES = (1, 2, 3, 4, 6, 8, 12, 16)  # C values tried by `--budget auto` (capped at B)
FANOUTS = (1, 2, 3)  # F values tried
CALIBRATION_CONTEXT = 256  # cached tokens before each timed pass
CALIBRATION_REPEATS = 3  # timed passes per budget (median)


@dataclass(frozen=True)
class AcceptancePrior:
    """What the budget model assumes about the drafter before measuring anything."""

    tau: float  # expected tokens per round, the target's own included (1 <= tau <= B)
    alt_hit: float = 0.25  # P(target's token is the drafter's best alternative | a rejection)
    alt_decay: float = 0.5  # each further alternative catches this fraction of the previous one's share


TRAINED_PRIOR = AcceptancePrior(tau=4.0, alt_hit=0.3)  # a trained drafter: a guess, to be replaced by measurements
UNTRAINED_PRIOR = AcceptancePrior(tau=1.05, alt_hit=0.01)  # measured: SmolLM2's first 6 layers, 1 hit in 182 lookups


def per_token_acceptance(tau: float, block_size: int) -> float:
    """alpha with 1 + alpha + ... + alpha^(B-1) = tau (bisection), clipped to [0, 1)."""
    n = block_size - 1
    target = min(max(tau - 1.0, 0.0), n * 0.999999)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sum(mid**j for j in range(1, n + 1)) < target else (lo, mid)
    return lo


def expected_hit_rate(prior: AcceptancePrior, budget: Budget, block_size: int) -> float:
    """The model's P(hit) per round for `budget` (see the module docstring)."""
    alpha, n = per_token_acceptance(prior.tau, block_size), block_size - 1
    caught = min(1.0, prior.alt_hit * sum(prior.alt_decay**r for r in range(budget.fanout)))
    rejections = sum(alpha ** (i - 1) * (1 - alpha) for i in range(1, min(budget.coverage - 1, n) + 1))
    full = alpha**n * alpha if block_size >= 3 else 0.0
    return rejections * caught + full


def expected_round_s(t_v: float, t_d: float, t_s: float, hit: float, concurrent: bool = True) -> float:
    """Expected seconds per asynchronous round."""
    both = max(t_v, t_d) if concurrent else t_v + t_d
    return both + (1 - hit) * t_s


@dataclass
class BudgetChoice:
    """The chosen budget and why."""

    budget: Budget  # the winner
    reason: str  # one line for the user
    table: list[dict]  # every timed candidate: budget, n_async, t_d_ms, hit, round_ms
    t_v: float  # seconds of one B-token verification (measured)
    t_s: float  # seconds of one synchronous draft (measured)


def choose_budget(
    t_v: float, t_s: float, t_d: dict[Budget, float], prior: AcceptancePrior, block_size: int,
    concurrent: bool = True,
) -> BudgetChoice:
    """The budget with the shortest expected round, i.e. the most expected tokens per second."""
    rows = {}
    for budget, seconds in t_d.items():
        hit = expected_hit_rate(prior, budget, block_size)
        rows[budget] = {"budget": str(budget), "n_async": budget.tokens(block_size), "t_d_ms": round(seconds * 1e3, 2),
                        "hit": round(hit, 3), "round_ms": round(expected_round_s(t_v, seconds, t_s, hit, concurrent) * 1e3, 2)}
    budget = min(rows, key=lambda b: rows[b]["round_ms"])
    best = rows[budget]
    hidden = "hidden behind" if t_d[budget] <= t_v else "longer than"
    reason = (f"t_v {t_v * 1e3:.1f} ms, t_s {t_s * 1e3:.1f} ms; t_d {best['t_d_ms']:.1f} ms ({hidden} t_v) for "
              f"N_async {best['n_async']}; expected hit rate {best['hit']:.2f} (prior tau {prior.tau:g}) gives "
              f"{best['round_ms']:.1f} ms per round, vs {(t_s + t_v) * 1e3:.1f} ms for sync and "
              f"{max(r['round_ms'] for r in rows.values()):.1f} ms for the worst budget timed")
    return BudgetChoice(budget, reason, list(rows.values()), t_v, t_s)


def candidate_budgets(block_size: int) -> list[Budget]:
    """Budgets `--budget auto` tries, cheapest first (C = 1 ignores F, so it appears once)."""
    budgets = {Budget(c, 1 if c == 1 else f) for c in COVERAGES if c <= block_size for f in FANOUTS}
    return sorted(budgets, key=lambda b: (b.tokens(block_size), b.coverage))


@torch.inference_mode()
def verification_timer(target: DecoderModel, block_size: int, context: int = CALIBRATION_CONTEXT):
    """A zero-argument function timing one B-token verification pass after `context` tokens."""
    gen = torch.Generator().manual_seed(1)
    vocab = target.spec.vocab_size
    prefix = torch.randint(0, vocab, (1, context), generator=gen).to(target.device)
    block = torch.randint(0, vocab, (1, block_size), generator=gen).to(target.device)
    cache = target.new_cache(1, context + block_size)
    target(Rows.clean(prefix, 0), cache, logits_from=context - 1)

    def timed_pass() -> float:
        with torch.inference_mode():
            if target.device.type == "cuda":
                torch.cuda.synchronize(target.device)
            start = time.perf_counter()
            target(Rows.clean(block, context), cache)
            if target.device.type == "cuda":
                torch.cuda.synchronize(target.device)  # deliberate: time the kernels
            cache.crop(context)
            return time.perf_counter() - start

    return timed_pass


def calibrate_budget(target: DecoderModel, backend, prior: AcceptancePrior, concurrent: bool) -> BudgetChoice:
    """Measure t_v, t_s and t_d(C, F) on this machine and choose the budget (see module doc).

    `backend` is a `DraftingBackend`; its drafting side times its passes while this process times
    verification passes, so both see the contention of real asynchronous decoding.
    """
    bs = backend.block_size
    timed_pass = verification_timer(target, bs)
    timed_pass()  # warm-up
    alone = statistics.median(timed_pass() for _ in range(CALIBRATION_REPEATS))
    limit_s = 3 * alone + 0.01
    budgets = candidate_budgets(bs)
    backend.drain()
    backend.submit(Calibrate(CALIBRATION_CONTEXT, tuple(budgets), CALIBRATION_REPEATS, limit_s))
    during = []
    while concurrent and not backend.ready():
        during.append(timed_pass())
    measured = backend.result()
    t_v = statistics.median(during) if len(during) >= CALIBRATION_REPEATS else alone
    t_d = {b: measured["budgets"][str(b)] for b in budgets if str(b) in measured["budgets"]}
    return choose_budget(t_v, measured["sync"], t_d, prior, bs, concurrent)
