"""Continuous batching is lossless per request: each sequence's output is what it would be alone.

Greedy: identical to plain greedy decoding of the same prompt, whatever joins or leaves around it.
Sampling: in float64 a seeded request reproduces the single-request synchronous run with the same
seed token for token, and on a 4-token vocabulary the batched sampler's joint distribution of
three tokens matches the target's exact one (chi-square).
"""

from __future__ import annotations

import pytest
import torch

from d3d.inference.batch_engine import BatchDecoder
from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import DecodeStats, GenerationConfig, autoregressive_decode, sampling_generator, speculative_decode
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.conftest import save_tiny_model
from tests.helpers import MASK_ID, assert_follows, prompt


def alone(decode, *args, cfg: GenerationConfig, eos=()) -> list[int]:
    stop = StopChecker(cfg.max_new_tokens, eos)
    return [t for chunk in decode(*args, cfg, stop, DecodeStats("x")) for t in chunk]


def run_batch(decoder: BatchDecoder, jobs: list[tuple[torch.Tensor, GenerationConfig, bool]], join_every: int = 1,
              eos=()) -> list[list[int]]:
    """Feed jobs one per `join_every` rounds (as many as fit); return every job's generated tokens."""
    pending, seqs, rounds = list(enumerate(jobs)), {}, 0
    while pending or decoder.running:
        while pending and not decoder.full and rounds % join_every == 0:
            i, (p, cfg, spec) = pending.pop(0)
            seqs[i] = decoder.add(p, cfg, StopChecker(cfg.max_new_tokens, eos), speculate=spec)
        decoder.step()
        rounds += 1
    return [seqs[i].generated for i in range(len(jobs))]


@pytest.mark.parametrize("block_size", [2, 4, 16])
def test_greedy_batched_output_equals_plain_decoding_alone(target_dir, block_size):
    target = load_decoder(target_dir)
    drafter = Drafter.from_base(target_dir, [0, 1], block_size, MASK_ID, "fp", target=target)
    jobs = [(prompt(s, 3 + 4 * s), GenerationConfig(max_new_tokens=12 + 7 * s), s != 2) for s in range(5)]
    got = run_batch(BatchDecoder(target, drafter, max_batch=3, capacity=8), jobs, join_every=2)
    for (p, cfg, _), out in zip(jobs, got):
        assert out == alone(autoregressive_decode, target, p, cfg=cfg)


def test_eos_and_budget_stop_each_request_alone(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], 8, MASK_ID, "fp", target=target)
    cfg = GenerationConfig(max_new_tokens=30)
    ref = alone(autoregressive_decode, target, prompt(5, 6), cfg=cfg)
    eos = [ref[9]]
    jobs = [(prompt(5, 6), cfg, True), (prompt(6, 4), GenerationConfig(max_new_tokens=1), True),
            (prompt(7, 9), cfg, True)]
    got = run_batch(BatchDecoder(target, drafter, max_batch=4), jobs, eos=eos)
    for (p, c, _), out in zip(jobs, got):
        assert out == alone(autoregressive_decode, target, p, cfg=c, eos=eos)
    assert got[0][-1] == eos[0] and len(got[1]) == 1


class TwoTokens:
    """A test policy: draft every other round, verify at most two drafted tokens."""

    def __init__(self, batch_size) -> None:
        self.batch_size, self.rounds, self.seen = batch_size, 0, []

    def should_draft(self) -> bool:
        self.rounds += 1
        return self.rounds % 2 == 1

    def choose(self, confidence: torch.Tensor, available: int) -> int:
        assert confidence.shape == (available,) and ((confidence >= 0) & (confidence <= 1)).all()
        self.seen.append((available, self.batch_size()))
        return 2

    def observe(self, verified: int, appended: int) -> None:
        assert verified <= 2 and 1 <= appended <= verified + 1


def test_draft_policy_chooses_rounds_and_lengths(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], 8, MASK_ID, "fp", target=target)
    policies = []
    decoder = BatchDecoder(target, drafter, max_batch=2, draft_policy=lambda size: policies.append(TwoTokens(size)) or policies[-1])
    cfg = GenerationConfig(max_new_tokens=20)
    seqs = [decoder.add(prompt(s, 5), cfg, StopChecker(20)) for s in (8, 9)]
    while decoder.running:
        decoder.step()
    for s, seq in zip((8, 9), seqs):
        assert seq.generated == alone(autoregressive_decode, target, prompt(s, 5), cfg=cfg)
        assert len(seq.stats.accept_hist) <= 4  # at most 2 accepted + 1 target token per round
        assert seq.stats.accept_hist[1] >= seq.stats.rounds // 2  # the plain rounds append one token
    assert len(policies) == 2 and policies[0].seen[0] == (7, 2)


def test_seeded_sampling_in_a_batch_reproduces_the_request_alone(tiny_llama_dir):
    """float64: batched logits equal single-sequence ones to ~1e-12, so the same seed gives the same tokens."""
    target = load_decoder(tiny_llama_dir).double()
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], 4, MASK_ID, "fp", target=target, dtype=torch.float64)
    sampling = SamplingConfig(temperature=1.0, top_p=0.95)
    jobs = [(prompt(s, 4 + s), GenerationConfig(max_new_tokens=25, sampling=sampling, seed=s), True) for s in range(4)]
    got = run_batch(BatchDecoder(target, drafter, max_batch=4), jobs, join_every=3)
    for (p, cfg, _), out in zip(jobs, got):
        source = DrafterSource(drafter, sampling, sampling_generator(cfg, target.device, offset=1))
        assert out == alone(speculative_decode, target, source, p, cfg=cfg)
    assert len({tuple(o) for o in got}) == len(got)


@pytest.fixture(scope="module")
def four_token_target(tmp_path_factory):
    path = save_tiny_model(tmp_path_factory.mktemp("v4"), "llama", seed=3, vocab_size=4, hidden_size=16,
                           intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1)
    target = load_decoder(path).double()
    with torch.no_grad():  # temper the x4 spread of save_tiny_model: every outcome keeps some mass
        target.lm_head.weight.mul_(0.6)
    return path, target


@torch.no_grad()
def exact_joint(target, p: torch.Tensor, depth: int) -> torch.Tensor:
    """The target's exact distribution over the next `depth` tokens, flattened [4**depth]."""
    joint = torch.ones(1, dtype=torch.float64)
    seqs = [p[0].tolist()]
    for _ in range(depth):
        probs = torch.stack([target(Rows.clean(torch.tensor([s]), 0))[0, -1].softmax(-1) for s in seqs])
        joint = (joint[:, None] * probs).reshape(-1)
        seqs = [s + [t] for s in seqs for t in range(4)]
    return joint


def test_batched_sampling_matches_target_distribution(four_token_target):
    path, target = four_token_target
    # its own (untempered, sharp) LM head: q far from p, so a wrong acceptance rule shows
    drafter = Drafter.from_base(path, [0], 3, 3, "fp", dtype=torch.float64)
    p = torch.tensor([[0, 1, 2, 1]])
    trials, depth = 2000, 3
    jobs = [(p, GenerationConfig(max_new_tokens=depth, sampling=SamplingConfig(temperature=1.0), seed=s), s % 5 != 0)
            for s in range(trials)]
    got = run_batch(BatchDecoder(target, drafter, max_batch=16), jobs)
    codes = torch.tensor([(o[0] * 4 + o[1]) * 4 + o[2] for o in got])
    counts = torch.bincount(codes, minlength=4**depth).double()
    expected = exact_joint(target, p, depth)
    assert expected.min() * trials > 5  # the chi-square approximation holds
    assert_follows(counts, expected, "three-token joint")


def test_batch_share_makes_the_adaptive_policy_verify_less_at_large_batch():
    """Compute-bound past 16 rows: at batch 1 verifying 7 drafted tokens is nearly free, at batch 8 it is not."""
    from d3d.inference.batch_engine import BatchShare
    from d3d.inference.draft_length import DraftLengthPolicy
    from d3d.inference.pass_costs import PassCosts

    costs = PassCosts({1: 1.0, 8: 1.1, 16: 1.2, 32: 2.4, 64: 4.8})  # flat, then linear in rows
    confidence = torch.full((7,), 0.9)
    size = [1]
    policy = DraftLengthPolicy(BatchShare(costs, lambda: size[0]), draft_s=0.05)
    alone_m = policy.choose(confidence, 7)
    size[0] = 8
    batched_m = policy.choose(confidence, 7)
    assert alone_m == 7 and batched_m < alone_m
    assert BatchShare(costs, lambda: 8).seconds(2) == costs.seconds(16) / 8
