"""Lossless verification of a drafted block: every acceptance rule of the project lives here.

Speculative sampling as in Leviathan et al. 2023, "Fast Inference from Transformers via
Speculative Decoding" (arXiv:2211.17192), and Chen et al. 2023, "Accelerating Large Language Model
Decoding with Speculative Sampling" (arXiv:2302.01318). The target scores the anchor plus the n
draft tokens in one pass; the tokens this module emits are distributed exactly as if the target
had generated them one by one with the same `SamplingConfig`.

Words used throughout:
- accepted: a draft token the target keeps. Greedy: it equals the target's argmax. Sampling: it
  passes the test u < p(d) / q(d) with u ~ Uniform(0, 1).
- recovered: the target's token at the first rejected position. Greedy: the target's argmax.
  Sampling: a sample from normalize(max(p - q, 0)), the residual distribution.
- bonus: the extra target token after all n draft tokens were accepted, sampled from (or the
  argmax of) the target's last row, which costs no additional target pass.
Each round therefore emits num_accepted + 1 tokens.

The draft contract: every drafted token must have q > 0 under the q reported for it (a token
drawn from q always does). A token reported with q = 0 would pass u * q < p whenever p > 0, i.e.
always be accepted, and the output would no longer follow the target. Runs with the environment
variable D3D_CHECK_DRAFTS=1 (the test suite sets it) check the contract on every round, at the
cost of one more host sync; other runs trust the source.

Pure tensor functions: this module knows nothing about models, caches, drafters or tokenizers.
The only host sync is one `.item()` for the accepted count. Tests: tests/inference/test_verify.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
from torch import Tensor

from d3d.inference.sampling import SamplingConfig, probs_from_logits, sample, sample_with_noise

CHECK_DRAFTS = os.environ.get("D3D_CHECK_DRAFTS") == "1"  # check the draft contract every round (debug, tests)


@dataclass
class VerifyResult:
    """What one verification round appends to the sequence."""

    num_accepted: int  # draft tokens accepted, 0..n
    tokens: Tensor  # [num_accepted + 1] long: accepted draft tokens, then recovered or bonus


class DraftContractError(AssertionError):
    """A draft source reported q = 0 for a token it drafted (see the module docstring)."""


def check_draft_contract(draft: Tensor, q_draft: Tensor) -> None:
    """Raise `DraftContractError` unless q_draft [n] (q of each drafted token) is positive everywhere."""
    bad = (q_draft <= 0).nonzero().flatten().tolist()  # a host sync, debug runs only
    if bad:
        raise DraftContractError(f"drafted token {int(draft[bad[0]])} at position {bad[0]} has q = 0: "
                                 "a draft source must report the q its tokens were drawn from")


def _accepted_prefix_length(accept: Tensor) -> int:
    """Length of the leading run of True in accept [n] bool; the one deliberate host sync."""
    return int(accept.long().cumprod(dim=0).sum().item())


def _emit(draft: Tensor, num_accepted: int, target_token: Tensor) -> VerifyResult:
    """draft [n] long, target_token [] long -> the accepted prefix, then the target's token."""
    tokens = torch.cat([draft[:num_accepted], target_token.view(1).to(draft.dtype)])
    return VerifyResult(num_accepted=num_accepted, tokens=tokens)


def verify_greedy(draft: Tensor, target_logits: Tensor) -> VerifyResult:
    """Accept the longest prefix of draft that matches the target's argmax.

    draft: [n] long. target_logits: [n + 1, V]; row i scores the token after anchor + draft[:i].
    """
    return _match_prefix(draft, target_logits.argmax(dim=-1))


def _match_prefix(draft: Tensor, target_tokens: Tensor) -> VerifyResult:
    """Accept the longest prefix of draft [n] equal to target_tokens [n + 1], then the target's token."""
    num_accepted = _accepted_prefix_length(draft == target_tokens[:-1])
    return _emit(draft, num_accepted, target_tokens[num_accepted])


def verify_coupled(draft: Tensor, target_logits: Tensor, cfg: SamplingConfig, noise: Tensor) -> VerifyResult:
    """Drafter-invariant verification: the target's token at every row is its sample under that
    position's own noise; accept the drafts that equal it (Daliri, Musco, Suresh 2024, "Coupling
    without Communication and Drafter-Invariant Speculative Decoding", arXiv:2408.07978).

    draft: [n] long. target_logits: [n + 1, V]. noise: [n + 1, V] Exponential(1) race noise of the
    positions the rows predict (`sampling.position_noise`). Each emitted token is
    `sample_with_noise(p, noise)` of its row, an exact sample of p whatever was drafted, so the
    output is a function of the seed and the prefix alone: the same with or without drafting, for
    any verification length. A drafter that samples from its q with the same noise is accepted with
    probability at least (1 - TV(p, q)) / (1 + TV(p, q)) (the paper's bound), against 1 - TV(p, q)
    for `verify_sampling`.
    """
    if cfg.greedy:
        return verify_greedy(draft, target_logits)
    return _match_prefix(draft, sample_with_noise(probs_from_logits(target_logits, cfg), noise))


def _residual_distribution(p: Tensor, q: Tensor) -> Tensor:
    """Unnormalised max(p - q, 0) for p, q [V]; falls back to p where the residual is all zero.

    `sample` normalises implicitly, so no division. The fallback only triggers when p <= q
    everywhere (p == q up to rounding), where a rejection cannot happen in exact arithmetic.
    """
    residual = (p - q).clamp(min=0)
    return torch.where(residual.sum() > 0, residual, p)


def verify_sampling(
    draft: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    cfg: SamplingConfig,
    generator: torch.Generator | None = None,
) -> VerifyResult:
    """Speculative sampling: accept draft[i] with probability min(1, p_i(d_i) / q_i(d_i)).

    draft: [n] long, sampled from draft_probs. draft_probs: [n, V], the distribution q each draft
    token was actually drawn from (already warped by the drafter's own config), or None for a
    greedy drafter (q is one-hot on draft). target_logits: [n + 1, V] raw target logits; p is
    `probs_from_logits(target_logits, cfg)`. A greedy cfg delegates to `verify_greedy`.
    """
    if cfg.greedy:
        return verify_greedy(draft, target_logits)
    n, vocab = draft.size(0), target_logits.size(-1)
    p = probs_from_logits(target_logits, cfg)  # [n + 1, V]
    if draft_probs is None:
        q = torch.nn.functional.one_hot(draft, vocab).to(p.dtype)  # [n, V]
    else:
        q = draft_probs.to(p.dtype)
    p_draft = p[:-1].gather(-1, draft.unsqueeze(-1)).squeeze(-1)  # [n]
    q_draft = q.gather(-1, draft.unsqueeze(-1)).squeeze(-1)  # [n]
    if CHECK_DRAFTS:
        check_draft_contract(draft, q_draft)
    u = torch.rand(n, generator=generator, dtype=p.dtype, device=p.device)
    accept = u * q_draft < p_draft  # u < p/q without dividing; never accepts a token with p = 0
    num_accepted = _accepted_prefix_length(accept)
    if num_accepted < n:
        dist = _residual_distribution(p[num_accepted], q[num_accepted])
    else:
        dist = p[n]
    return _emit(draft, num_accepted, sample(dist, generator))


def verify(
    draft: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    cfg: SamplingConfig,
    generator: torch.Generator | None = None,
) -> VerifyResult:
    """Verify one drafted block under cfg: greedy or speculative sampling. Shapes as in
    `verify_sampling`; draft_probs is ignored for a greedy cfg."""
    if cfg.greedy:
        return verify_greedy(draft, target_logits)
    return verify_sampling(draft, draft_probs, target_logits, cfg, generator)
