"""Speculative decoding is lossless: greedy output equals plain greedy decoding token for token,
and sampled output follows the target's distribution."""

from __future__ import annotations

import pytest
import torch

from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import DecodeStats, GenerationConfig, autoregressive_decode, speculative_decode
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.helpers import MASK_ID, assert_follows, count_positions, exact_marginals, prompt, small_vocab_target
from tests.helpers import run_decode as run
from tests.inference.sources import OracleSource, RandomSource, TargetAsDrafter


@pytest.mark.parametrize("block_size", [2, 4, 16])
def test_greedy_identical_with_untrained_drafter(target_dir, block_size):
    target = load_decoder(target_dir)
    drafter = Drafter.from_base(target_dir, [0, 1], block_size, MASK_ID, "fp", target=target)
    for seed in range(2):
        want, _ = run(autoregressive_decode, target, prompt(seed))
        got, stats = run(speculative_decode, target, DrafterSource(drafter, SamplingConfig()), prompt(seed))
        assert got == want
        assert 1 <= stats.tau <= block_size
        assert stats.rounds >= 40 / block_size


@pytest.mark.parametrize("block_size", [2, 5, 16])
def test_oracle_drafter_reaches_tau_equal_block_size(target_dir, block_size):
    target = load_decoder(target_dir)
    p = prompt(3)
    want, _ = run(autoregressive_decode, target, p, max_new=48)
    oracle = OracleSource(p[0].tolist() + want, block_size)
    got, stats = run(speculative_decode, target, oracle, p, max_new=48)
    assert got == want
    # every round but the last accepts the whole block
    full_rounds = (48 - 1) // block_size
    assert stats.accept_hist[block_size] == full_rounds
    assert stats.rounds == full_rounds + (1 if (48 - 1) % block_size else 0)


def test_random_drafter_tau_near_one(target_dir):
    target = load_decoder(target_dir)
    want, _ = run(autoregressive_decode, target, prompt(4))
    got, stats = run(speculative_decode, target, RandomSource(97, 8, greedy=True), prompt(4))
    assert got == want
    assert stats.tau < 1.3


def test_eos_and_max_tokens_stop_identically(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    ref, _ = run(autoregressive_decode, target, prompt(5), max_new=30)
    eos = ref[11]
    first = ref.index(eos)
    oracle = OracleSource(prompt(5)[0].tolist() + ref, 8)
    got_ar, s_ar = run(autoregressive_decode, target, prompt(5), max_new=30, eos=[eos])
    got_sp, s_sp = run(speculative_decode, target, oracle, prompt(5), max_new=30, eos=[eos])
    assert got_ar == got_sp == ref[: first + 1]
    assert s_ar.stop_reason == s_sp.stop_reason == "eos"
    # tau counts only kept tokens: the eos lands inside an oracle block, the rest of which is dropped
    assert s_sp.round_tokens == s_ar.round_tokens == len(got_sp) - 1
    got, s = run(speculative_decode, target, oracle, prompt(5), max_new=13)
    assert got == ref[:13] and s.stop_reason == "max_new_tokens"


# --- sampling: statistical tests that the output follows the target distribution -------------

WARPED = SamplingConfig(temperature=0.7, top_k=5, top_p=0.9)


def make_source(kind: str, target, sampling: SamplingConfig):
    if kind == "target":  # q == p: every draft accepted, so every first round ends with a bonus token
        return DrafterSource(TargetAsDrafter(target), sampling, torch.Generator().manual_seed(99))
    return RandomSource(12, 4, seed=7, greedy=kind == "random-greedy")


@pytest.mark.parametrize("kind, sampling", [("random", SamplingConfig(temperature=1.3)), ("random-greedy", WARPED),
                                            ("target", WARPED)])
def test_sampling_preserves_target_distribution(tmp_path, kind, sampling):
    """Positions 1.. are speculative: drafted, recovered, or the bonus (position 2 for the target
    source, position 3 after two accepted random drafts); position 0 is the prefill's sample."""
    target = small_vocab_target(tmp_path)
    depth, n_runs = 4, 1200
    p = torch.tensor([[1, 2, 3]])
    want = exact_marginals(target, p, sampling, depth)
    source = make_source(kind, target, sampling)
    outputs = []
    for seed in range(n_runs):
        cfg = GenerationConfig(max_new_tokens=depth, sampling=sampling, seed=seed)
        out, stats = run(speculative_decode, target, source, p, cfg=cfg)
        outputs.append(out)
        if kind == "target":
            assert stats.accept_hist[2] == 1  # the draft was accepted and the bonus appended
    counts = count_positions(outputs, depth, 12)
    for k in range(depth):
        assert_follows(counts[k], want[k], f"position {k}")


@pytest.mark.parametrize("sampling", [SamplingConfig(temperature=1.0), WARPED,
                                      SamplingConfig(temperature=1.5, top_p=0.95)])
def test_drafter_equal_to_the_target_has_every_draft_accepted(tmp_path, sampling):
    """q == p after the same warping, so u * q < p for every draft: a check that `DrafterSource`
    reports the warped distribution it sampled from, the q the acceptance test needs (the target
    is not peaked, so a q from another warping would be rejected often)."""
    target = small_vocab_target(tmp_path, head_scale=1.0)
    source = DrafterSource(TargetAsDrafter(target), sampling, torch.Generator().manual_seed(5))
    for seed in range(6):
        cfg = GenerationConfig(max_new_tokens=25, sampling=sampling, seed=seed)
        out, stats = run(speculative_decode, target, source, torch.tensor([[1, 2, seed]]), cfg=cfg)
        assert len(out) == 25 and stats.accept_hist == [0, 0, stats.rounds], stats.accept_hist


def test_stop_string_stops_both_modes_at_the_same_token(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    ref, _ = run(autoregressive_decode, target, prompt(6), max_new=30)

    def decode(ids):
        return "".join(f"<{i}>" for i in ids)

    stop_at = 9
    needle = decode(ref[stop_at - 1 : stop_at + 1])  # spans two tokens
    cfg = GenerationConfig(max_new_tokens=30, stop_strings=(needle,))
    outs = []
    for decode_fn, args in [(autoregressive_decode, (target,)), (speculative_decode, (target, OracleSource(prompt(6)[0].tolist() + ref, 6)))]:
        stats = DecodeStats("x")
        stop = StopChecker(30, (), cfg.stop_strings, decode)
        outs.append([t for c in decode_fn(*args, prompt(6), cfg, stop, stats) for t in c])
        assert stats.stop_reason == "stop_string"
    first = decode(ref).index(needle)
    assert outs[0] == outs[1]
    assert needle in decode(outs[0]) and needle not in decode(outs[0][:-1])
    assert len(decode(outs[0])) == first + len(needle)
