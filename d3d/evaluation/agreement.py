"""Greedy agreement in low precision: identical, near tie or divergence, proved by replay (docs/design.md).

Greedy speculative decoding is token-for-token identical to greedy plain decoding in exact
arithmetic. In bfloat16 or float16 a k-row verification pass and a 1-row decode step take
different kernels and round differently, so where the target's best tokens are nearly tied, the
two runs can pick different ones and continue differently from there. That is a property of the
arithmetic, not a bug; anything else is a bug. A closeness window alone cannot tell the two apart:
a verifier that accepted the target's runner-up on close calls would pass it. So rule 3 proves it.

Every run logs the shape of each target pass (`DecodeStats.passes`: start position and rows) and
its cache's capacity. For a prompt whose output differs from plain decoding's, `classify`:

    replays  both runs' passes in the run's own model, dtype, shapes and torch thread count
             (`own_argmax`; on a CPU a pass can round differently on another number of threads,
             and async decoding verifies on part of the cores) and, at a differing position,
             requires each run's token to be the argmax of its own logits there (what a correct
             greedy verifier must emit, whatever the rounding)
    bounds   the flip: both tokens' float32 logits within `near_tie_threshold(dtype)` =
             NEAR_TIE_EPS_MULTIPLE * eps(dtype) nats of the float32 maximum (ties of three included)
    forks    plain decoding at that position from the other run's prefix, and compares on from
             there, so every later difference is checked the same way, to the end of the output

    near tie    every differing position passes both checks
    divergence  anything else (first failing position), or one output a strict prefix of the other

Replaying assumes, as the runtime's kernels give, that a row's logits do not depend on the values
of the rows after it in its pass (the replay fills rejected drafts' rows with the committed tokens).
Runs without a pass log (the transformers baselines, records written before rule 3) are judged at
the first difference by the float32 window alone (`proof` "window").

The threshold: in bfloat16 (eps 2^-7) it is 0.5 nats; in float32 it is 7.6e-6, so float32 and
float64 runs must stay exactly identical. This module knows nothing about benchmarks; `bench.py`
calls `classify` per prompt and mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from d3d.inference.engine import DecodeStats, GenerationConfig, autoregressive_decode
from d3d.inference.stopping import StopChecker
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel

NEAR_TIE_EPS_MULTIPLE = 64  # near-tie threshold in units of the dtype's machine epsilon (nats)
AGREEMENT_RULE = 4  # version of the rule (4: 3 replayed on the run's own thread count; 3: replayed argmax at every
#                      difference, forked to the end; 2: window only)


def near_tie_threshold(dtype: torch.dtype) -> float:
    """The largest float32 distance to the top logit a run in `dtype` may flip to (nats)."""
    return NEAR_TIE_EPS_MULTIPLE * torch.finfo(dtype).eps


@dataclass(frozen=True)
class RunLog:
    """One greedy run as it happened: its tokens and, when logged, how its target passes were shaped."""

    tokens: list[int]  # generated tokens
    passes: list[tuple[int, int]] | None = None  # (start, rows) of each target pass after the prefill (None: not logged)
    capacity: int = 0  # its target cache's capacity (fixed key spans attend over it)
    model: DecoderModel | None = field(default=None, compare=False)  # the model that ran it (None: no replay)
    threads: int = 0  # torch threads its target passes ran on (0: not logged; the replay keeps the current count)

    @property
    def replayable(self) -> bool:
        return self.passes is not None and self.model is not None and self.capacity > 0


@dataclass(frozen=True)
class Agreement:
    """How one run's greedy output relates to plain decoding's."""

    kind: str  # "identical", "near_tie" or "divergence"
    position: int | None = None  # first differing output position (None when identical)
    gap: float | None = None  # largest float32 distance to the max logit of a differing token, over the checked positions (nats)
    differences: int = 0  # differing positions checked (each one forks plain decoding)
    proof: str | None = None  # "replay" (rule 3) or "window" (no pass log: the float32 window at the first difference)
    reason: str | None = None  # why a divergence is one

    def as_dict(self) -> dict:
        return {"agreement": self.kind, "agreement_position": self.position, "agreement_rule": AGREEMENT_RULE,
                "agreement_gap": None if self.gap is None else round(self.gap, 6),
                "agreement_differences": self.differences, "agreement_proof": self.proof,
                "agreement_reason": self.reason}


def first_difference(a: list[int], b: list[int]) -> int:
    """The first index where a and b differ (the shorter length if one is a prefix of the other)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


@torch.inference_mode()
def own_argmax(run: RunLog, prompt_ids: Tensor) -> list[bool]:
    """For each generated token of `run`: whether it is the argmax of the logits its own pass gave,
    recomputed by replaying the prefill and every logged pass in order (same model, dtype, shapes,
    cache capacity, crops, thread count). prompt_ids: [1, n]."""
    saved = torch.get_num_threads()
    torch.set_num_threads(run.threads or saved)
    try:
        return _replayed_argmax(run, prompt_ids)
    finally:
        torch.set_num_threads(saved)


def _replayed_argmax(run: RunLog, prompt_ids: Tensor) -> list[bool]:
    """`own_argmax` on the current thread count."""
    model, n = run.model, prompt_ids.shape[1]
    seq = prompt_ids[0].tolist() + run.tokens
    cache = model.new_cache(1, run.capacity)
    logits = model(Rows.clean(prompt_ids.to(model.device), 0), cache, logits_from=n - 1)
    ok = [int(logits[0, -1].argmax()) == run.tokens[0]]
    for j, (start, rows) in enumerate(run.passes):
        end = run.passes[j + 1][0] if j + 1 < len(run.passes) else len(seq) - 1  # the next anchor
        ids = seq[start : start + rows]
        ids += ids[-1:] * (rows - len(ids))  # rows past the output (rejected drafts): any token
        logits = model(Rows.clean(torch.tensor([ids], device=model.device), start), cache)[0]  # [rows, V]
        ok += (logits[: end - start].argmax(-1).cpu() == torch.tensor(seq[start + 1 : end + 1])).tolist()
        cache.crop(end)
    return ok


def _float32_gap(exact: DecoderModel, prompt_ids: Tensor, prefix: list[int], tokens: tuple[int, int]) -> float:
    """The float32 max logit minus the lower of two tokens' logits after prompt + prefix."""
    ids = torch.cat([prompt_ids[0].cpu(), torch.tensor(prefix, dtype=torch.long)])[None]
    row = exact(Rows.clean(ids.to(exact.device), 0), None, logits_from=ids.shape[1] - 1)[0, -1].float()
    return float(row.max() - torch.minimum(row[tokens[0]], row[tokens[1]]))


def _plain_fork(model: DecoderModel, prompt_ids: Tensor, prefix: list[int], count: int) -> list[int]:
    """prefix + `count` tokens of plain greedy decoding after prompt + prefix, in the run's model."""
    if count <= 0:
        return list(prefix)
    ids = torch.cat([prompt_ids[0].cpu(), torch.tensor(prefix, dtype=torch.long)])[None].to(model.device)
    cfg, stop = GenerationConfig(max_new_tokens=count), StopChecker(count)
    return list(prefix) + [t for chunk in autoregressive_decode(model, ids, cfg, stop, DecodeStats("ar")) for t in chunk]


@torch.inference_mode()
def classify(reference: RunLog | list[int], other: RunLog | list[int], prompt_ids: Tensor,
             exact_target: DecoderModel, dtype: torch.dtype) -> Agreement:
    """Agreement of `other` with the plain-decoding run `reference` of prompt_ids [1, n], the window
    judged with `exact_target` (the same target in float32 or wider)."""
    reference = reference if isinstance(reference, RunLog) else RunLog(list(reference))
    other = other if isinstance(other, RunLog) else RunLog(list(other))
    if other.tokens == reference.tokens:
        return Agreement("identical")
    if not (reference.replayable and other.replayable):
        return _by_window(reference.tokens, other.tokens, prompt_ids, exact_target, dtype)
    ref_tokens, ref_ok = reference.tokens, own_argmax(reference, prompt_ids)
    other_ok = own_argmax(other, prompt_ids)
    if len(ref_ok) != len(ref_tokens) or len(other_ok) != len(other.tokens):  # a loop that logs no passes
        return _by_window(reference.tokens, other.tokens, prompt_ids, exact_target, dtype)
    first, gaps = None, []
    while (i := first_difference(ref_tokens, other.tokens)) < min(len(ref_tokens), len(other.tokens)):
        first = i if first is None else first
        gaps.append(_float32_gap(exact_target, prompt_ids, other.tokens[:i], (ref_tokens[i], other.tokens[i])))
        reason = _failed_check(ref_ok[i], other_ok[i], gaps[-1], dtype)
        if reason is not None:
            return Agreement("divergence", i, gaps[-1], len(gaps), "replay", reason)
        ref_tokens = _plain_fork(reference.model, prompt_ids, other.tokens[: i + 1], len(other.tokens) - i - 1)
        ref_ok = [True] * len(ref_tokens)  # plain greedy decoding: each token is its own pass's argmax
    if len(ref_tokens) != len(other.tokens):
        return Agreement("divergence", i, max(gaps, default=None), len(gaps), "replay", "one output stops early")
    return Agreement("near_tie", first, max(gaps), len(gaps), "replay")


def _failed_check(reference_ok: bool, other_ok: bool, gap: float, dtype: torch.dtype) -> str | None:
    """Why a differing position is a divergence (None: a near tie)."""
    if not other_ok:
        return "its token is not the argmax of its own replayed logits"
    if not reference_ok:
        return "plain decoding's token is not the argmax of its own replayed logits"
    if gap >= near_tie_threshold(dtype):
        return f"a token {gap:.3f} nats below the float32 maximum"
    return None


def _by_window(reference: list[int], other: list[int], prompt_ids: Tensor, exact: DecoderModel,
               dtype: torch.dtype) -> Agreement:
    """Without pass logs: the float32 window at the first difference (rule 2)."""
    i = first_difference(reference, other)
    if i >= min(len(reference), len(other)):
        return Agreement("divergence", i, proof="window", reason="one output stops early")
    gap = _float32_gap(exact, prompt_ids, reference[:i], (reference[i], other[i]))
    if gap < near_tie_threshold(dtype):
        return Agreement("near_tie", i, gap, 1, "window")
    return Agreement("divergence", i, gap, 1, "window", f"a token {gap:.3f} nats below the float32 maximum")


def agreement_summary(kinds: list[str]) -> dict:
    """The JSON line's agreement fields of one mode over its prompts."""
    return {"identical": all(k == "identical" for k in kinds), "identical_prompts": kinds.count("identical"),
            "near_ties": kinds.count("near_tie"), "divergences": kinds.count("divergence")}
