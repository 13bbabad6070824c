"""Verification length chosen per round, and speculation that never loses (docs/design.md).

The drafter drafts B-1 tokens in one pass, but the target need not verify all of them. After the
drafter's pass, the policy picks m, the number of drafted tokens the target verifies (m + 1 rows:
the anchor plus m candidates), to maximise the expected tokens per second of the round:

    E(m)    = 1 + sum_{i=1..m} prod_{j<=i} a_j       expected tokens appended (target's own included)
    rate(m) = E(m) / (t_d + t_v(m + 1))

where a_j is the calibrated probability that drafted token j is accepted given that the ones
before it were (from the drafter's own confidence in it, through the calibration table that
`d3d eval-drafter --save` measures offline into the drafter's `acceptance.json`), t_v(k) is this
machine's measured pass-cost table (`pass_costs.py`) and t_d the measured drafting pass. m = 0
means no speculation this round (a plain 1-row step).

Before the drafter's pass, `should_draft` decides whether drafting pays at all: when the recent
drafting rounds (a running average, costed from the measured tables) delivered fewer tokens per
second than plain decoding would have (1 / t_v(1)), the engine takes plain steps for a while
(1, 2, 4, ... up to `max_skip` steps, doubling while drafting keeps losing) and then drafts once
to re-check. With a useless drafter this falls back
to nearly plain decoding; with a good one it never skips.

Lossless by construction: m and the skip decision depend only on finished rounds and on the
drafter's *distributions* of this round (its confidence is each position's largest q, a function
of the prefix), never on the tokens it sampled nor on the target's random draws of this round, so
every token still follows the target's conditional distribution: the speculative sampling argument
holds for any verification length fixed before the round's draws. (Choosing m from the sampled
tokens' own q would not be lossless: it verifies the drafts the drafter happened to like, and the
statistical test in tests/inference/test_draft_length.py catches exactly that.)

This module knows nothing about the decode loop; `engine.py` and `async_engine.py` call it.

    policy = DraftLengthPolicy(costs, Calibration.load(drafter_dir))
    m = policy.choose(draft.confidence)      # 0 <= m <= len(draft.tokens)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.inference.pass_costs import PassCosts
from d3d.models.drafter import ACCEPTANCE_FILE, read_acceptance_table

GAIN_SMOOTHING = 0.15  # weight of the newest round in the running realised-gain average
MIN_DRAFTED_ROUNDS = 4  # drafting rounds observed before the first decision to take plain steps
MAX_SKIP = 32  # longest run of plain steps between two drafting re-checks


@dataclass(frozen=True)
class Calibration:
    """P(a drafted token is accepted | the drafter's probability of it), by probability bin."""

    edges: tuple[float, ...] = (0.0, 1.0)  # bin edges over [0, 1], ascending
    accept: tuple[float, ...] = (0.5,)  # acceptance rate per bin (len(edges) - 1 values), all positions pooled
    by_position: tuple[tuple[float | None, ...], ...] = ()  # [j][bin] position j+1's own rate (None: too few samples)
    identity: bool = True  # no table: a drafter's probability is taken as its acceptance rate

    @staticmethod
    def load(drafter_dir: str | Path | None) -> Calibration:
        """The table saved beside a drafter, or the identity when it has none."""
        path = Path(drafter_dir) / ACCEPTANCE_FILE if drafter_dir else None
        whole = read_acceptance_table(path) if path is not None else None
        if whole is None:
            return Calibration()
        try:
            table = whole["calibration"]
            edges, accept, count = table["edges"], table["accept"], table.get("count")
        except (KeyError, TypeError) as err:
            raise D3DError(f"{path} is not an acceptance table ({err})") from None
        if len(accept) != len(edges) - 1:
            raise D3DError(f"{path}: {len(edges)} bin edges need {len(edges) - 1} acceptance rates, got {len(accept)}")
        if count is not None:  # an empty bin reads as its own midpoint
            accept = [a if c else (lo + hi) / 2 for a, c, lo, hi in zip(accept, count, edges, edges[1:])]
        return Calibration(tuple(float(e) for e in edges), tuple(float(a) for a in accept),
                           _position_rates(whole.get("calibration_by_position")), identity=False)

    def acceptance(self, confidence: Tensor) -> Tensor:
        """Calibrated acceptance [n] for the drafter's confidences [n] at positions 1..n: each
        position's own rate where its bin had enough samples, else the pooled rate."""
        if self.identity:
            return confidence.float().clamp(0.0, 1.0)
        edges = torch.tensor(self.edges[1:-1], dtype=torch.float32)
        bins = torch.bucketize(confidence.float().cpu(), edges, right=True).tolist()
        rates = [self._rate(j, b) for j, b in enumerate(bins)]
        return torch.tensor(rates, dtype=torch.float32)

    def _rate(self, position: int, bin_index: int) -> float:
        own = self.by_position[position][bin_index] if position < len(self.by_position) else None
        return self.accept[bin_index] if own is None else own


MIN_BIN_SAMPLES = 20  # a position's own calibration bin is used from this many samples on


def _position_rates(table: dict | None) -> tuple[tuple[float | None, ...], ...]:
    """Per-position bin rates of an acceptance table, None where a bin has too few samples."""
    if not table:
        return ()
    return tuple(tuple(a if c >= MIN_BIN_SAMPLES else None for a, c in zip(acc, cnt))
                 for acc, cnt in zip(table["accept"], table["count"]))


def expected_tokens(acceptance: Tensor) -> Tensor:
    """E(m) for m = 0..n: 1 + the expected accepted prefix of the first m candidates. acceptance: [n]."""
    prefix = torch.cumprod(acceptance.float().cpu(), 0)
    return torch.cat([torch.ones(1), 1.0 + torch.cumsum(prefix, 0)])


@dataclass
class DraftLengthPolicy:
    """Chooses how many drafted tokens to verify each round, and when not to draft at all."""

    costs: PassCosts  # this machine's t_v(k)
    calibration: Calibration = field(default_factory=Calibration)  # confidence -> acceptance
    fixed: int | None = None  # verify exactly min(fixed, drafted) drafted tokens (no adaptation; 0: never draft; None: auto)
    max_skip: int = MAX_SKIP  # longest run of plain steps between drafting re-checks (0: always draft)
    draft_s: float = 0.0  # t_d: seconds of one drafting pass, measured once (not live, so that
    # the choices, and sampled output per seed, do not depend on timing noise)
    gain: float | None = None  # running realised tokens/s of drafting rounds / plain decoding's
    min_rounds: int = MIN_DRAFTED_ROUNDS  # drafting rounds observed before plain steps may be chosen
    drafted_rounds: int = 0  # drafting rounds observed so far
    skip_left: int = 0  # plain steps still to take before drafting again
    backoff: int = 1  # length of the next run of plain steps if drafting loses again
    histogram: dict[int, int] = field(default_factory=dict)  # m -> rounds that verified m drafted tokens
    skipped: int = 0  # plain steps taken without drafting because drafting had lost lately (in histogram[0] too)

    def should_draft(self) -> bool:
        """False while the policy is taking plain steps (one call per round)."""
        if self.fixed == 0:  # --draft-length 1: never speculate
            self.histogram[0] = self.histogram.get(0, 0) + 1
            return False
        if self.fixed is not None or self.max_skip == 0:
            return True
        if self.skip_left > 0:
            self.skip_left -= 1
            self.skipped += 1
            self.histogram[0] = self.histogram.get(0, 0) + 1
            return False
        return True

    def choose(self, confidence: Tensor | None, available: int) -> int:
        """m, 0 <= m <= available: drafted tokens to verify, given their confidences [available]."""
        if self.fixed is not None or confidence is None:
            m = available if self.fixed is None else min(self.fixed, available)
        else:
            m = self.best_length(confidence[:available])
        self.histogram[m] = self.histogram.get(m, 0) + 1
        return m

    def best_length(self, confidence: Tensor) -> int:
        """argmax_m E(m) / (t_d + t_v(m + 1))."""
        expected = expected_tokens(self.calibration.acceptance(confidence))
        t_d = self.draft_s
        rates = [float(e) / (t_d + self.costs.seconds(m + 1)) for m, e in enumerate(expected)]
        return max(range(len(rates)), key=rates.__getitem__)

    def observe(self, verified: int, appended: int) -> None:
        """After a drafting round: drafted tokens verified and tokens appended. The round's gain is
        costed from the measured tables (t_d, t_v), never from its own noisy wall time."""
        plain = self.costs.seconds(1)
        self.record_gain(appended * plain / (self.draft_s + self.costs.seconds(verified + 1)))

    def record_gain(self, realised: float) -> None:
        """Fold one drafting round's gain (its tokens/s over plain decoding's) into the running
        average, and start a run of plain steps when drafting has lost lately. The batched engine's
        gate (`batch_engine.BatchGate`) feeds it whole rounds of the batch."""
        self.gain = realised if self.gain is None else (1 - GAIN_SMOOTHING) * self.gain + GAIN_SMOOTHING * realised
        self.drafted_rounds += 1
        if self.fixed is not None or self.max_skip == 0 or self.drafted_rounds < self.min_rounds:
            return
        if self.gain < 1.0:  # drafting lost on average lately: plain steps, then one re-check
            self.skip_left = self.backoff
            self.backoff = min(2 * self.backoff, self.max_skip)
        else:
            self.backoff = 1

    def summary(self) -> dict:
        """Rounds by k = m + 1, the rows the target verified (k = 1: a plain step, drafted or not)."""
        return {str(m + 1): n for m, n in sorted(self.histogram.items())}


def parse_draft_length(value: str | int | None) -> int | None:
    """`--draft-length`: "auto" (None) or k, the rows verified per round (anchor + k - 1 drafted
    tokens; 1 = never speculate, B = the whole block)."""
    if value is None or value == "auto":
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise D3DError(f"--draft-length must be 'auto' or a positive integer, got '{value}'") from None
    if n < 1:
        raise D3DError(f"--draft-length must be at least 1, got {n}")
    return n
