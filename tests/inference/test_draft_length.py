"""Verification length per round (`draft_length.py`): the choice itself, the plain-step fallback of
a useless drafter, and losslessness of both (greedy identity, sampling distribution)."""

from __future__ import annotations

import json

import pytest
import torch

from d3d.errors import D3DError
from d3d.inference.draft_length import Calibration, DraftLengthPolicy, expected_tokens, parse_draft_length
from d3d.inference.drafting import Draft, DrafterSource
from d3d.inference.engine import GenerationConfig, autoregressive_decode, speculative_decode
from d3d.inference.pass_costs import PassCosts, measure_pass_costs
from d3d.inference.sampling import SamplingConfig
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.helpers import MASK_ID, assert_follows, count_positions, exact_marginals, prompt, small_vocab_target
from tests.helpers import run_decode as run
from tests.inference.sources import OracleSource, RandomSource

CPU_LIKE = PassCosts({1: 1.0, 2: 1.02, 4: 1.05, 8: 1.1, 16: 1.3})  # roughly this machine's bf16 shape


def test_pass_costs_interpolate_and_extrapolate():
    costs = PassCosts({1: 1.0, 4: 2.5, 8: 4.5})
    assert costs.seconds(4) == 2.5 and costs.seconds(2) == pytest.approx(1.5)
    assert costs.seconds(12) == pytest.approx(6.5)  # slope of the last two sizes
    assert costs.ratios()[8] == 4.5


def test_expected_tokens_is_one_plus_the_expected_accepted_prefix():
    e = expected_tokens(torch.tensor([0.5, 0.5, 1.0]))
    assert e.tolist() == pytest.approx([1.0, 1.5, 1.75, 2.0])


def test_best_length_trades_acceptance_against_pass_cost():
    policy = DraftLengthPolicy(CPU_LIKE, draft_s=0.2)
    assert policy.best_length(torch.zeros(15)) == 0  # nothing will be accepted: verify nothing
    assert policy.best_length(torch.ones(15)) == 15  # everything will: verify the whole block
    # sure of 3 tokens, then hopeless: verifying more than 3 only adds cost
    assert policy.best_length(torch.tensor([0.99, 0.99, 0.99] + [0.01] * 12)) == 3
    steep = DraftLengthPolicy(PassCosts({1: 1.0, 16: 16.0}))  # a pass costs its rows: no gain possible
    assert steep.best_length(torch.full((15,), 0.9)) == 0


def test_calibration_table_maps_confidence_bins(tmp_path):
    table = {"calibration": {"edges": [0.0, 0.5, 0.9, 1.0], "accept": [0.1, 0.4, 0.95], "count": [10, 0, 5]}}
    (tmp_path / "acceptance.json").write_text(json.dumps(table))
    cal = Calibration.load(tmp_path)
    got = cal.acceptance(torch.tensor([0.2, 0.6, 0.95, 1.0]))
    assert got.tolist() == pytest.approx([0.1, 0.7, 0.95, 0.95])  # the empty bin reads as its midpoint
    table["calibration_by_position"] = {"accept": [[0.2, 0.3, 0.99]], "count": [[30, 5, 25]]}
    (tmp_path / "acceptance.json").write_text(json.dumps(table))
    got = Calibration.load(tmp_path).acceptance(torch.tensor([0.2, 0.2]))  # position 1's own bin, then pooled
    assert got.tolist() == pytest.approx([0.2, 0.1])
    got = Calibration.load(tmp_path).acceptance(torch.tensor([0.6, 0.95]))  # too few samples: pooled
    assert got.tolist() == pytest.approx([0.7, 0.95])
    assert Calibration.load(tmp_path / "none").identity
    (tmp_path / "acceptance.json").write_text(json.dumps({"calibration": {"edges": [0, 1], "accept": [0.1, 0.2]}}))
    with pytest.raises(D3DError, match="acceptance rates"):
        Calibration.load(tmp_path)


def test_parse_draft_length():
    assert parse_draft_length("auto") is None and parse_draft_length("16") == 16
    for bad in ("0", "x", "-2"):
        with pytest.raises(D3DError, match="--draft-length"):
            parse_draft_length(bad)


def test_losing_drafter_backs_off_to_plain_steps_and_a_winning_one_never_does():
    losing = DraftLengthPolicy(CPU_LIKE, draft_s=0.3, max_skip=8)
    plain = 0
    for _ in range(200):
        if not losing.should_draft():
            plain += 1
            continue
        m = losing.choose(torch.full((15,), 0.5), 15)
        losing.observe(m, 1)  # nothing accepted, ever
    assert plain > 150 and losing.backoff == 8
    assert losing.skipped == plain and losing.summary()["1"] >= plain  # skipped steps are counted apart too
    winning = DraftLengthPolicy(CPU_LIKE, draft_s=0.3, max_skip=8)
    for _ in range(50):
        assert winning.should_draft()
        winning.observe(winning.choose(torch.full((15,), 0.9), 15), 5)
    assert "1" not in winning.summary()


@pytest.mark.parametrize("draft_length", [None, 1, 3])
def test_greedy_identical_with_any_verification_length(tiny_llama_dir, draft_length):
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], 8, MASK_ID, "fp", target=target)
    costs = PassCosts(measure_pass_costs(target, [1, 2, 4, 8], context=16, repeats=1))
    for seed in range(3):
        want, _ = run(autoregressive_decode, target, prompt(seed))
        fixed = None if draft_length is None else draft_length - 1
        policy = DraftLengthPolicy(costs, fixed=fixed, draft_s=costs.seconds(1) * 0.1)
        got, stats = run(speculative_decode, target, DrafterSource(drafter, SamplingConfig()), prompt(seed),
                         policy=policy)
        assert got == want
        if draft_length == 1:  # never speculates (the last round, with one token left, asks no policy)
            assert list(stats.draft_lengths) == ["1"] and stats.tau == 1.0


def test_useless_drafter_skips_drafting_and_the_stats_say_how_often(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    p = prompt(2)
    want, _ = run(autoregressive_decode, target, p, max_new=48)
    policy = DraftLengthPolicy(CPU_LIKE, draft_s=0.3)  # a costly drafting pass proposing random tokens
    got, stats = run(speculative_decode, target, RandomSource(target.spec.vocab_size, 8, seed=4, greedy=True), p,
                     max_new=48, policy=policy)
    assert got == want
    assert 0 < stats.skipped_rounds == policy.skipped <= stats.draft_lengths["1"]
    assert stats.as_dict()["skipped_rounds"] == stats.skipped_rounds and stats.policy_draft_s == 0.3


def test_oracle_drafter_is_verified_in_full(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    p = prompt(3)
    want, _ = run(autoregressive_decode, target, p, max_new=48)
    policy = DraftLengthPolicy(CPU_LIKE, draft_s=0.1)
    got, stats = run(speculative_decode, target, OracleSource(p[0].tolist() + want, 8), p, max_new=48, policy=policy)
    assert got == want and stats.tau > 7


class PrefixConfidenceSource(RandomSource):
    """Samples from a q that depends on the last committed token (some sharp, some flat) and reports
    each position's largest q as its confidence: a function of the prefix, known before sampling."""

    def __init__(self, vocab: int, block_size: int, seed: int = 0, use_sampled_q: bool = False) -> None:
        super().__init__(vocab, block_size, seed)
        g = torch.Generator().manual_seed(seed + 2)
        sharp = torch.rand(vocab, 1, 1, generator=g, dtype=torch.float64) * 6
        logits = torch.randn(vocab, block_size - 1, vocab, generator=g, dtype=torch.float64) * sharp
        self.q_by_last = torch.softmax(logits, -1)  # [last token, position, vocab]
        self.use_sampled_q = use_sampled_q  # the lossy variant: the sampled token's own q (see the test)

    def propose(self, committed, num_tokens):
        q = self.q_by_last[int(committed[0, -1]), :num_tokens]
        tokens = torch.multinomial(q, 1, generator=self.gen)[:, 0]
        confidence = q.gather(-1, tokens[:, None])[:, 0] if self.use_sampled_q else q.max(-1).values
        return Draft(tokens, q, confidence)


@pytest.mark.parametrize("sampling", [SamplingConfig(temperature=1.3), SamplingConfig(temperature=0.7, top_k=5, top_p=0.9)])
def test_sampling_preserves_target_distribution_with_adaptive_length(tmp_path, sampling):
    """The verified length varies from round to round (with plain steps in between), and every
    position still follows the target's exact marginal. The length may depend on the drafter's
    distributions (functions of the prefix), not on which tokens it sampled: with
    `use_sampled_q=True` (confidence = q of the sampled token) position 1 fails this test (p = 5e-4;
    p = 7e-26 with a q fixed per position): the bias of verifying only the drafts it happened to like."""
    target = small_vocab_target(tmp_path)
    depth, n_runs = 4, 1200
    p = torch.tensor([[1, 2, 3]])
    want = exact_marginals(target, p, sampling, depth)
    source = PrefixConfidenceSource(12, 4, seed=7)
    costs = PassCosts({1: 1.0, 2: 1.2, 3: 1.3, 4: 1.4})
    outputs, lengths = [], {}
    for seed in range(n_runs):
        policy = DraftLengthPolicy(costs, draft_s=0.05, max_skip=2, min_rounds=0)
        cfg = GenerationConfig(max_new_tokens=depth, sampling=sampling, seed=seed)
        out, stats = run(speculative_decode, target, source, p, cfg=cfg, policy=policy)
        outputs.append(out)
        for k, n in stats.draft_lengths.items():
            lengths[k] = lengths.get(k, 0) + n
    assert len(lengths) >= 3, lengths  # the test exercises several verification lengths
    counts = count_positions(outputs, depth, 12)
    for k in range(depth):
        assert_follows(counts[k], want[k], f"position {k}")
