"""Tests for d3d.inference.verify and d3d.inference.sampling.

Exact table tests for greedy and (one-hot, hence deterministic) sampling verification, logit
warping tests, and statistical tests that speculative sampling reproduces the (warped) target
distribution on a tiny vocabulary. All randomness is seeded, so every run is identical.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch
from scipy.stats import binomtest, chisquare
from torch import Tensor

import d3d.inference.verify as verify_module
from d3d.errors import D3DError
from d3d.inference.sampling import SamplingConfig, probs_from_logits, sample, warp_logits
from d3d.inference.verify import verify, verify_greedy, verify_sampling

NEG_INF = -math.inf
SAMPLING = SamplingConfig(temperature=1.0)


def logits_with_argmax(tokens: list[int], vocab: int = 8) -> Tensor:
    """[len(tokens), vocab] float64 logits, row i peaked at tokens[i], other entries random."""
    gen = torch.Generator().manual_seed(len(tokens))
    logits = torch.randn(len(tokens), vocab, generator=gen, dtype=torch.float64)
    logits[torch.arange(len(tokens)), tokens] = 10.0
    return logits


def one_hot_logits(tokens: list[int], vocab: int = 8) -> Tensor:
    """[len(tokens), vocab] logits whose softmax is exactly one-hot on tokens[i]."""
    logits = torch.full((len(tokens), vocab), NEG_INF, dtype=torch.float64)
    logits[torch.arange(len(tokens)), tokens] = 0.0
    return logits


def long(values: list[int]) -> Tensor:
    return torch.tensor(values, dtype=torch.long)


# ---------------------------------------------------------------------------------------------
# Greedy verification: exact tables
# ---------------------------------------------------------------------------------------------

GREEDY_TABLE = [
    # name, draft, target argmax per row (n + 1 rows), expected accepted, expected tokens
    ("perfect_match", [3, 1, 4, 1], [3, 1, 4, 1, 5], 4, [3, 1, 4, 1, 5]),
    ("early_mismatch", [3, 1, 4, 1], [2, 1, 4, 1, 5], 0, [2]),
    ("mismatch_in_middle", [3, 1, 4, 1], [3, 1, 7, 1, 5], 2, [3, 1, 7]),
    ("mismatch_at_last", [3, 1, 4, 1], [3, 1, 4, 6, 5], 3, [3, 1, 4, 6]),
    ("single_candidate_accepted", [6], [6, 2], 1, [6, 2]),
    ("single_candidate_rejected", [6], [0, 2], 0, [0]),
    ("later_matches_do_not_count", [3, 1, 4], [0, 1, 4, 5], 0, [0]),
]


@pytest.mark.parametrize(
    "draft, target, num_accepted, tokens", [row[1:] for row in GREEDY_TABLE],
    ids=[row[0] for row in GREEDY_TABLE],
)
def test_verify_greedy_table(draft, target, num_accepted, tokens):
    result = verify_greedy(long(draft), logits_with_argmax(target))
    assert result.num_accepted == num_accepted
    assert result.tokens.dtype == torch.long
    assert result.tokens.tolist() == tokens
    assert len(result.tokens) == result.num_accepted + 1


def test_verify_dispatches_greedy_config_to_greedy_rule():
    draft, target = long([3, 1, 4]), logits_with_argmax([3, 1, 0, 2])
    junk_q = torch.full((3, 8), 1 / 8)
    for fn in (verify, verify_sampling):
        result = fn(draft, junk_q, target, SamplingConfig(temperature=0.0))
        assert result.tokens.tolist() == [3, 1, 0]


# ---------------------------------------------------------------------------------------------
# Sampling verification with a one-hot target: deterministic tables
# ---------------------------------------------------------------------------------------------

SAMPLING_TABLE = [
    ("perfect_match", [3, 1, 4], [3, 1, 4, 5], 3, [3, 1, 4, 5]),
    ("early_mismatch", [3, 1, 4], [2, 1, 4, 5], 0, [2]),
    ("mismatch_in_middle", [3, 1, 4], [3, 7, 4, 5], 1, [3, 7]),
    ("single_candidate_accepted", [6], [6, 2], 1, [6, 2]),
    ("single_candidate_rejected", [6], [0, 2], 0, [0]),
]


@pytest.mark.parametrize("greedy_drafter", [False, True], ids=["sampled_q", "one_hot_q"])
@pytest.mark.parametrize(
    "draft, target, num_accepted, tokens", [row[1:] for row in SAMPLING_TABLE],
    ids=[row[0] for row in SAMPLING_TABLE],
)
def test_verify_sampling_one_hot_target_table(draft, target, num_accepted, tokens, greedy_drafter):
    gen = torch.Generator().manual_seed(0)
    q = None if greedy_drafter else torch.softmax(torch.randn(len(draft), 8, generator=gen), -1)
    for seed in range(5):  # the outcome must not depend on the random draws
        gen.manual_seed(seed)
        result = verify(long(draft), q, one_hot_logits(target), SAMPLING, gen)
        assert result.num_accepted == num_accepted
        assert result.tokens.tolist() == tokens


def test_residual_falls_back_to_target_when_empty():
    p = torch.tensor([0.25, 0.25, 0.5])
    assert torch.equal(verify_module._residual_distribution(p, p), p)
    residual = verify_module._residual_distribution(p, torch.tensor([0.5, 0.25, 0.25]))
    assert torch.allclose(residual, torch.tensor([0.0, 0.0, 0.25]))


# ---------------------------------------------------------------------------------------------
# Logit warping and sampling helpers
# ---------------------------------------------------------------------------------------------


def test_temperature_scales_logits():
    logits = torch.randn(3, 10)
    assert torch.allclose(warp_logits(logits, SamplingConfig(temperature=2.0)), logits / 2)
    assert torch.equal(warp_logits(logits, SamplingConfig(temperature=1.0)), logits)


def test_top_k_keeps_the_k_largest():
    logits = torch.randn(4, 10, generator=torch.Generator().manual_seed(1))
    warped = warp_logits(logits, SamplingConfig(temperature=1.0, top_k=3))
    kept = torch.isfinite(warped)
    assert kept.sum(-1).tolist() == [3, 3, 3, 3]
    top3 = logits.topk(3, dim=-1).indices
    assert kept.gather(-1, top3).all()
    assert torch.equal(warped[kept], logits[kept])
    assert torch.isfinite(warp_logits(logits, SamplingConfig(1.0, top_k=50))).all()


@pytest.mark.parametrize(
    "top_p, kept", [(0.3, [0]), (0.5, [0]), (0.75, [0, 1]), (0.81, [0, 1, 2]), (1.0, [0, 1, 2, 3])]
)
def test_top_p_keeps_the_minimal_nucleus(top_p, kept):
    probs = torch.tensor([[0.15, 0.5, 0.05, 0.3]])  # ranks: 1, 3, 0, 2
    order = [1, 3, 0, 2]
    warped = warp_logits(probs.log(), SamplingConfig(temperature=1.0, top_p=top_p))
    expected = sorted(order[i] for i in kept)
    assert torch.isfinite(warped[0]).nonzero().flatten().tolist() == expected


def test_top_k_applies_before_top_p():
    probs = torch.tensor([[0.4, 0.3, 0.2, 0.1]])
    cfg = SamplingConfig(temperature=1.0, top_k=2, top_p=0.5)
    # After top-k the renormalised probs are [4/7, 3/7]; 4/7 >= 0.5 so only token 0 survives.
    assert torch.isfinite(warp_logits(probs.log(), cfg)).tolist() == [[True, False, False, False]]


def test_probs_from_logits_dtypes_and_greedy_one_hot():
    logits = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 0.0]])
    assert probs_from_logits(logits, SamplingConfig()).tolist() == [[0, 1, 0], [1, 0, 0]]
    assert probs_from_logits(logits.bfloat16(), SAMPLING).dtype == torch.float32
    probs64 = probs_from_logits(logits.double(), SamplingConfig(temperature=0.5))
    assert probs64.dtype == torch.float64
    assert torch.allclose(probs64, torch.softmax(logits.double() / 0.5, -1))


@pytest.mark.parametrize(
    "cfg",
    [
        SamplingConfig(temperature=-0.1),
        SamplingConfig(temperature=math.nan),
        SamplingConfig(temperature=math.inf),
        SamplingConfig(top_k=-1),
        SamplingConfig(top_p=0.0),
        SamplingConfig(top_p=1.5),
        SamplingConfig(top_p=math.nan),
    ],
)
def test_invalid_config_raises(cfg):
    with pytest.raises(D3DError):
        cfg.validate()


def test_valid_configs_pass():
    SamplingConfig().validate()
    SamplingConfig(temperature=0.7, top_k=20, top_p=0.9).validate()
    assert SamplingConfig().greedy and not SamplingConfig(temperature=0.7).greedy


def test_sample_shape_and_distribution():
    gen = torch.Generator().manual_seed(0)
    assert sample(torch.rand(3, 5, 7), gen).shape == (3, 5)
    weights = torch.tensor([1.0, 0.0, 3.0, 6.0])  # unnormalised on purpose
    draws = sample(weights.expand(20000, 4), gen)
    counts = torch.bincount(draws, minlength=4)
    assert counts[1] == 0
    expected = 20000 * weights[[0, 2, 3]].numpy() / 10
    assert chisquare(counts[[0, 2, 3]].numpy(), expected).pvalue > 1e-3


# ---------------------------------------------------------------------------------------------
# Statistical tests: speculative sampling preserves the (warped) target distribution
# ---------------------------------------------------------------------------------------------

VOCAB = 4
TRIALS = 10000
MIN_P_VALUE = 1e-3


@dataclass
class TwoTokenCase:
    """A target whose second-token distribution depends on the first token, and a drafter that
    proposes num_draft (1 or 2) positions in parallel (its q for position 1 does not see draft
    token 0). With num_draft = 1 the second emitted token is the bonus after an acceptance."""

    target0: Tensor  # [V] logits for the first token
    target1: Tensor  # [V, V] logits for the second token, row = first token
    target2: Tensor  # [V] logits for the bonus position after two accepted tokens (not checked)
    q: Tensor | None  # [num_draft, V] drafter distribution, None for a greedy drafter
    greedy_draft: Tensor  # [num_draft] long, the greedy drafter's tokens

    @staticmethod
    def random(seed: int, greedy_drafter: bool, num_draft: int = 2) -> TwoTokenCase:
        gen = torch.Generator().manual_seed(seed)
        target = torch.randn(2 + VOCAB, VOCAB, generator=gen, dtype=torch.float64)
        q = torch.softmax(torch.randn(num_draft, VOCAB, generator=gen, dtype=torch.float64), -1)
        return TwoTokenCase(target[0], target[1:-1], target[-1],
                            None if greedy_drafter else q, q.argmax(-1))

    @property
    def num_draft(self) -> int:
        return len(self.greedy_draft)

    def expected_joint(self, cfg: SamplingConfig) -> Tensor:
        """[V * V] probability of (first, second) token when the target generates alone."""
        p0 = probs_from_logits(self.target0, cfg)
        p1 = probs_from_logits(self.target1, cfg)
        return (p0[:, None] * p1).flatten()


def draw_drafts(case: TwoTokenCase, trials: int, gen: torch.Generator) -> Tensor:
    """[trials, num_draft] long draft tokens drawn from the drafter."""
    if case.q is None:
        return case.greedy_draft.expand(trials, case.num_draft)
    return torch.multinomial(case.q, trials, replacement=True, generator=gen).T


def run_speculative_trials(
    case: TwoTokenCase, cfg: SamplingConfig, trials: int
) -> tuple[Tensor, Tensor]:
    """Emit two tokens per trial by verification, continuing with the target alone after a
    rejection at position 0. Returns first * V + second [trials] and num_accepted [trials]."""
    gen = torch.Generator().manual_seed(1234)
    drafts = draw_drafts(case, trials, gen)
    rows = [case.target0, case.target1[drafts[:, 0]], case.target2][: case.num_draft + 1]
    target_logits = torch.stack([r.expand(trials, VOCAB) for r in rows], 1)  # [trials, n + 1, V]
    continuation = sample(probs_from_logits(case.target1, cfg).expand(trials, VOCAB, VOCAB), gen)
    pairs, accepted = [], []
    for t in range(trials):
        result = verify_sampling(drafts[t], case.q, target_logits[t], cfg, gen)
        first = int(result.tokens[0])
        second = int(result.tokens[1]) if result.num_accepted else int(continuation[t, first])
        pairs.append(first * VOCAB + second)
        accepted.append(result.num_accepted)
    return torch.tensor(pairs), torch.tensor(accepted)


def chi_square_p_value(outcomes: Tensor, expected: Tensor) -> float:
    """Goodness of fit of outcomes [trials] (ints in [0, K)) to expected [K] probabilities; cells
    of zero probability must never occur and are left out of the test."""
    counts = torch.bincount(outcomes, minlength=len(expected)).double()
    support = expected > 0
    assert counts[~support].sum() == 0, "emitted a token the warped target gives probability 0"
    assert (expected[support] * len(outcomes)).min() >= 5, "test setup: too few expected counts"
    f_exp = expected[support] / expected[support].sum() * len(outcomes)
    return float(chisquare(counts[support].numpy(), f_exp.numpy()).pvalue)


def assert_preserves_target(case: TwoTokenCase, cfg: SamplingConfig) -> None:
    pairs, accepted = run_speculative_trials(case, cfg, TRIALS)
    joint = case.expected_joint(cfg)
    first_token_p = chi_square_p_value(pairs // VOCAB, joint.view(VOCAB, VOCAB).sum(1))
    joint_p = chi_square_p_value(pairs, joint)
    assert first_token_p > MIN_P_VALUE, f"first token is not ~ p_0 (p-value {first_token_p:.2e})"
    assert joint_p > MIN_P_VALUE, f"token pair is not ~ p (p-value {joint_p:.2e})"
    # Lossless alone is not enough (always rejecting is lossless): position 0 must be accepted
    # with probability sum_v min(p_0(v), q_0(v)).
    p0 = probs_from_logits(case.target0, cfg)
    q = case.q if case.q is not None else torch.nn.functional.one_hot(case.greedy_draft, VOCAB)
    rate = float(torch.minimum(p0, q[0].to(p0.dtype)).sum())
    acceptance_p = binomtest(int((accepted >= 1).sum()), TRIALS, rate).pvalue
    assert acceptance_p > MIN_P_VALUE, f"acceptance rate != sum min(p, q) (p={acceptance_p:.2e})"


@pytest.mark.parametrize(
    "greedy_drafter, num_draft",
    [(False, 2), (True, 2), (False, 1)],
    ids=["sampled_q", "one_hot_q", "sampled_q_bonus"],
)
def test_sampling_preserves_target_distribution(greedy_drafter, num_draft):
    case = TwoTokenCase.random(seed=7, greedy_drafter=greedy_drafter, num_draft=num_draft)
    assert_preserves_target(case, SAMPLING)


@pytest.mark.parametrize(
    "cfg, num_draft, seed",
    [(SamplingConfig(temperature=0.7, top_k=3), 2, 11), (SamplingConfig(temperature=0.7, top_k=3, top_p=0.9), 1, 3),
     (SamplingConfig(temperature=1.0, top_p=0.8), 2, 3)],
    ids=["top_k", "top_k_top_p_bonus", "top_p"],
)
def test_sampling_preserves_warped_target_distribution(cfg, num_draft, seed):
    """With one draft token the second emitted token is the bonus after an acceptance: it must be
    sampled from the warped last row, not the raw one (seed 3: top-k and top-p both cut rows)."""
    case = TwoTokenCase.random(seed=seed, greedy_drafter=False, num_draft=num_draft)
    assert_preserves_target(case, cfg)


def test_statistical_test_detects_a_wrong_residual(monkeypatch):
    """The chi-square test has power: recovering from p instead of max(p - q, 0) must fail it."""
    monkeypatch.setattr(verify_module, "_residual_distribution", lambda p, q: p)
    case = TwoTokenCase.random(seed=7, greedy_drafter=False)
    pairs, _ = run_speculative_trials(case, SAMPLING, TRIALS // 4)
    joint = case.expected_joint(SAMPLING)
    assert chi_square_p_value(pairs // VOCAB, joint.view(VOCAB, VOCAB).sum(1)) < MIN_P_VALUE


def test_a_drafted_token_reported_with_q_zero_breaks_the_contract():
    """q = 0 would pass u * q < p for any p > 0: always accepted. The test suite runs with the check on."""
    assert verify_module.CHECK_DRAFTS
    q = torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]], dtype=torch.float64)
    logits = torch.zeros(3, 4, dtype=torch.float64)
    with pytest.raises(verify_module.DraftContractError, match="token 2 at position 0 has q = 0"):
        verify(long([2, 1]), q, logits, SAMPLING, torch.Generator().manual_seed(0))
    verify(long([1, 3]), q, logits, SAMPLING, torch.Generator().manual_seed(0))  # q > 0 for both: fine
