"""Offline acceptance: how a drafter would fare against a greedy target, measured without the target.

With greedy target data (`d3d data --greedy`), a stored response *is* the target's greedy
continuation of its prompt. One packed drafter pass over `prompt + response`, with a block anchored
at every response position, therefore gives for each anchor s (response index, s = 0..T-2) the
accepted length a_s of the block the drafter would propose there: the longest prefix of its greedy
block equal to r_{s+1}, r_{s+2}, ... Walking the anchors as synchronous greedy speculative decoding
does (the target's prefill writes r_0; a round at anchor s appends a_s accepted tokens plus the
target's own, so the next anchor is s + 1 + a_s) reproduces its rounds exactly, with no target pass.

Definitions (every statistic counts drafted token j = 1..B-1 only where the response has it):

    tau_sim        tokens appended per simulated round (the target's token included), pooled over rows
    mean_accepted  mean a_s over every anchor of every row, walked or not
    alpha_j        P(drafted token j accepted | tokens 1..j-1 accepted), over every anchor
    calibration    for drafted tokens whose predecessors were all accepted: the drafter's softmax
                   probability of its own top token, binned, against the rate at which that token
                   equals the target's (the input of a confidence-based verification length)
    by_group       with a label per row (`groups`, e.g. its file): each group's own tau_sim,
                   mean_accepted and alpha_j; the calibration is pooled over every row

The drafter's drafting vocabulary (`Drafter.set_draft_vocab`) and label convention apply exactly
as in decoding: blocks go through `Drafter.block_hidden` and `Drafter.project`.

This module knows nothing about files, the command line or training; `d3d eval-drafter`
(`d3d.evaluation.eval_drafter`) and the trainer's validation call it.

    result = offline_acceptance(drafter, [(prompt_ids, response_ids), ...])
    print(result.tau_sim, result.alpha)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from d3d.models.drafter import Drafter

CALIBRATION_EDGES = tuple(round(0.1 * i, 1) for i in range(11))  # bins of the top token's probability
ANCHORS_PER_PASS = 32  # blocks projected per chunk (bounds the [anchors, B-1, vocab] logits in memory)


@dataclass
class RowAcceptance:
    """Per-anchor outcome for one (prompt, response) row (T response tokens, B block size)."""

    correct: Tensor  # [T-1, B-1] bool: drafted token j (column j-1) at anchor s equals r_{s+j}
    known: Tensor  # [T-1, B-1] bool: the response has r_{s+j} (s + j <= T-1)
    top_prob: Tensor  # [T-1, B-1] float: the drafter's softmax probability of its own top token

    @property
    def accepted(self) -> Tensor:
        """[T-1] a_s: the length of the accepted prefix of the block drafted at anchor s."""
        return torch.cumprod((self.correct & self.known).long(), dim=1).sum(1)

    @property
    def reached(self) -> Tensor:
        """[T-1, B-1] bool: drafted tokens 1..j-1 were all accepted (token j is verified at all)."""
        ok = torch.cumprod((self.correct & self.known).long(), dim=1).bool()
        return torch.cat([torch.ones_like(ok[:, :1]), ok[:, :-1]], 1) & self.known


def simulate_rounds(accepted: Sequence[int], response_len: int) -> list[int]:
    """Tokens appended by each round of greedy synchronous decoding: walk s -> s + 1 + a_s from s = 0.

    A round appends its accepted tokens plus the target's own, never past the response's end
    (where decoding stopped: end of sequence or the token budget).
    """
    rounds, s = [], 0
    while s < response_len - 1:
        appended = min(int(accepted[s]) + 1, response_len - 1 - s)
        rounds.append(appended)
        s += appended
    return rounds


@torch.inference_mode()
def row_acceptance(drafter: Drafter, prompt_ids: Sequence[int], response_ids: Sequence[int]) -> RowAcceptance:
    """One packed pass over prompt + response with a block at every response anchor s = 0..T-2."""
    device = drafter.model.device
    prompt = torch.as_tensor(np.asarray(prompt_ids), dtype=torch.long, device=device)
    response = torch.as_tensor(np.asarray(response_ids), dtype=torch.long, device=device)
    p, t, width = len(prompt), len(response), drafter.block_size - 1
    anchors = torch.arange(t - 1, device=device)
    future = anchors[:, None] + torch.arange(1, width + 1, device=device)  # [T-1, B-1] response index of token j
    known = future <= t - 1
    truth = response[future.clamp(max=t - 1)]
    cache = drafter.new_cache(p + t)
    clean = torch.cat([prompt, response])[None]
    top, prob = [], []
    for start in range(0, t - 1, ANCHORS_PER_PASS):
        chunk = anchors[start : start + ANCHORS_PER_PASS]
        hidden = drafter.block_hidden(cache, clean if start == 0 else clean[:, :0], response[chunk], p + chunk)
        probs = torch.softmax(drafter.project(hidden).float(), -1)  # [c, B-1, V]; 0 outside a drafting vocabulary
        best = probs.max(-1)
        top.append(best.indices)
        prob.append(best.values)
    return RowAcceptance(torch.cat(top) == truth, known, torch.cat(prob))


@dataclass
class OfflineResult:
    """Offline acceptance of one drafter on a set of greedy rows (see the module docstring)."""

    tau_sim: float  # tokens appended per simulated round, pooled over rows
    mean_accepted: float  # mean a_s over every anchor
    alpha: list[float]  # [B-1] alpha_j, j = 1..B-1 (0 where never reached)
    calibration: dict  # {"edges": [11], "accept": [10], "count": [10]} pooled over positions
    calibration_by_position: dict  # {"accept": [B-1][10], "count": [B-1][10]}
    rows: int  # rows measured
    anchors: int  # anchors measured (sum of T-1)
    rounds: int  # simulated rounds
    tokens: int  # tokens those rounds appended
    row_rounds: list[list[int]] = field(default_factory=list)  # tokens appended per simulated round, per row
    by_group: dict[str, dict] = field(default_factory=dict)  # group -> its tau_sim, mean_accepted, alpha, rows

    def as_dict(self) -> dict:
        keys = ("alpha", "calibration", "calibration_by_position", "tau_sim", "mean_accepted", "rows", "anchors",
                "rounds", "tokens")
        return {k: getattr(self, k) for k in keys}


def offline_acceptance(drafter: Drafter, rows: Sequence[tuple[Sequence[int], Sequence[int]]],
                       groups: Sequence[str] | None = None) -> OfflineResult:
    """Offline acceptance over (prompt_ids, response_ids) rows; rows with fewer than 2 response tokens are skipped.

    `groups` (one label per row, e.g. its file) adds each group's own tau_sim, mean_accepted, alpha
    and rows to `by_group`; the calibration stays pooled over every row."""
    if groups is not None and len(groups) != len(rows):
        raise ValueError(f"{len(groups)} group labels for {len(rows)} rows")
    width = drafter.block_size - 1
    edges = torch.tensor(CALIBRATION_EDGES)
    bins_n, bins_ok = torch.zeros(width, len(edges) - 1), torch.zeros(width, len(edges) - 1)
    pooled, by_group = _Tally(width), {}
    labelled = zip(rows, groups if groups is not None else [None] * len(rows))
    for (prompt_ids, response_ids), group in ((row, g) for row, g in labelled if len(row[1]) >= 2):
        row = row_acceptance(drafter, prompt_ids, response_ids)
        accepted = row.accepted.cpu()
        rounds = simulate_rounds(accepted.tolist(), len(response_ids))
        reached, ok = row.reached.cpu(), (row.correct & row.known).cpu()
        for tally in [pooled] + ([by_group.setdefault(group, _Tally(width))] if group is not None else []):
            tally.add(accepted, rounds, reached, ok)
        _add_calibration(bins_n, bins_ok, row.top_prob.cpu(), reached, ok, edges)
    accept = torch.where(bins_n > 0, bins_ok / bins_n.clamp_min(1), 0.0)
    pooled_n, pooled_ok = bins_n.sum(0), bins_ok.sum(0)
    return OfflineResult(
        **pooled.summary(),
        calibration={"edges": list(CALIBRATION_EDGES),
                     "accept": _rounded(torch.where(pooled_n > 0, pooled_ok / pooled_n.clamp_min(1), 0.0)),
                     "count": [int(c) for c in pooled_n]},
        calibration_by_position={"accept": [_rounded(a) for a in accept], "count": bins_n.long().tolist()},
        anchors=pooled.anchors, rounds=pooled.rounds, tokens=pooled.tokens, row_rounds=pooled.row_rounds,
        by_group={g: t.summary() for g, t in by_group.items()},
    )


class _Tally:
    """Running sums of one set of rows: simulated rounds, accepted lengths, per-position acceptance."""

    def __init__(self, width: int) -> None:
        self.reached_n, self.accepted_n = torch.zeros(width), torch.zeros(width)
        self.row_rounds: list[list[int]] = []
        self.accepted_sum = self.anchors = 0

    def add(self, accepted: Tensor, rounds: list[int], reached: Tensor, ok: Tensor) -> None:
        self.row_rounds.append(rounds)
        self.accepted_sum, self.anchors = self.accepted_sum + int(accepted.sum()), self.anchors + len(accepted)
        self.reached_n += reached.sum(0)
        self.accepted_n += (reached & ok).sum(0)

    @property
    def rounds(self) -> int:
        return sum(len(r) for r in self.row_rounds)

    @property
    def tokens(self) -> int:
        return sum(sum(r) for r in self.row_rounds)

    def summary(self) -> dict:
        """tau_sim, mean_accepted, alpha and rows, as `OfflineResult` names them."""
        rounds = self.rounds
        return {"tau_sim": self.tokens / rounds if rounds else 0.0,
                "mean_accepted": self.accepted_sum / self.anchors if self.anchors else 0.0,
                "alpha": _rounded(torch.where(self.reached_n > 0, self.accepted_n / self.reached_n.clamp_min(1), 0.0)),
                "rows": len(self.row_rounds)}


def _add_calibration(bins_n: Tensor, bins_ok: Tensor, top_prob: Tensor, reached: Tensor, ok: Tensor,
                     edges: Tensor) -> None:
    """Count reached drafted tokens [T-1, B-1] into probability bins per position (in place)."""
    index = (torch.bucketize(top_prob, edges[1:-1], right=True)).clamp(max=len(edges) - 2)  # bin of each token
    for j in range(bins_n.shape[0]):
        picked = reached[:, j]
        bins_n[j] += torch.bincount(index[picked, j], minlength=bins_n.shape[1]).float()
        bins_ok[j] += torch.bincount(index[picked & ok[:, j], j], minlength=bins_n.shape[1]).float()


def _rounded(values: Tensor) -> list[float]:
    return [round(float(v), 4) for v in values]
