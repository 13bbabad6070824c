"""Greedy agreement in low precision: identical, near tie or divergence (docs/design.md).

Greedy speculative decoding is token-for-token identical to greedy plain decoding in exact
arithmetic. In bfloat16 or float16 a k-row verification pass and a 1-row decode step take
different kernels and round differently, so where the target's two best tokens are nearly tied,
the two runs can pick different ones and continue differently from there. That is a property of
the arithmetic, not a bug; anything else is a bug. For a prompt whose output differs from plain
decoding's, `classify` looks at the first differing position and recomputes the target's logits of
the shared prefix in float32:

    near tie    both runs' tokens there have float32 logits within `near_tie_threshold(dtype)` =
                NEAR_TIE_EPS_MULTIPLE * eps(dtype) nats of the float32 maximum (a tie of two, or of
                three or more tokens: then the two runs may pick two that are not the top-2)
    divergence  anything else (a token further down, or one output a strict prefix of the other)

The threshold: in bfloat16 (eps 2^-7) it is 0.5 nats. Measured on the embedded SmolLM2 target, the
logits of one token computed by a 1-row step and by a 16-row pass differ by up to 0.3-0.6 nats
before the precision fixes of `Precision` and up to 0.4 after them, so a gap below 0.5 can flip.
In float32 the threshold is 7.6e-6, so float32 and float64 runs must stay exactly identical.

This module knows nothing about benchmarks; `bench.py` calls `classify` per prompt and mode.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel

NEAR_TIE_EPS_MULTIPLE = 64  # near-tie threshold in units of the dtype's machine epsilon (nats)
AGREEMENT_RULE = 2  # version of the rule (2: within the threshold of the maximum, ties of three included)


def near_tie_threshold(dtype: torch.dtype) -> float:
    """The largest float32 top-2 logit gap a run in `dtype` may flip (nats)."""
    return NEAR_TIE_EPS_MULTIPLE * torch.finfo(dtype).eps


@dataclass(frozen=True)
class Agreement:
    """How one run's greedy output relates to plain decoding's."""

    kind: str  # "identical", "near_tie" or "divergence"
    position: int | None = None  # first differing output position (None when identical)
    gap: float | None = None  # float32 max logit minus the lower of the two runs' tokens' logits there (nats)

    def as_dict(self) -> dict:
        return {"agreement": self.kind, "agreement_position": self.position, "agreement_rule": AGREEMENT_RULE,
                "agreement_gap": None if self.gap is None else round(self.gap, 6)}


def first_difference(a: list[int], b: list[int]) -> int:
    """The first index where a and b differ (the shorter length if one is a prefix of the other)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


@torch.inference_mode()
def classify(reference: list[int], other: list[int], prompt_ids: Tensor, exact_target: DecoderModel,
             dtype: torch.dtype) -> Agreement:
    """Agreement of `other` with the plain-decoding output `reference` of prompt_ids [1, n], judged
    with `exact_target` (the same target in float32 or wider)."""
    if other == reference:
        return Agreement("identical")
    i = first_difference(reference, other)
    if i >= min(len(reference), len(other)):
        return Agreement("divergence", i)
    prefix = torch.cat([prompt_ids[0].cpu(), torch.tensor(reference[:i], dtype=torch.long)])[None]
    logits = exact_target(Rows.clean(prefix.to(exact_target.device), 0), None, logits_from=prefix.shape[1] - 1)
    row = logits[0, -1].float()
    gap = float(row.max() - torch.minimum(row[reference[i]], row[other[i]]))  # the farther token's distance to the top
    kind = "near_tie" if gap < near_tie_threshold(dtype) else "divergence"
    return Agreement(kind, i, gap)


def agreement_summary(kinds: list[str]) -> dict:
    """The JSON line's agreement fields of one mode over its prompts."""
    return {"identical": all(k == "identical" for k in kinds), "identical_prompts": kinds.count("identical"),
            "near_ties": kinds.count("near_tie"), "divergences": kinds.count("divergence")}
