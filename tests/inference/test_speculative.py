"""Speculative decoding is lossless: greedy output equals plain greedy decoding token for token,
and sampled output follows the target's distribution."""

from __future__ import annotations

import pytest
import torch
from scipy.stats import chisquare

from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import DecodeStats, GenerationConfig, autoregressive_decode, speculative_decode
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.conftest import save_tiny_model
from tests.inference.sources import OracleSource, RandomSource

MASK_ID = 96


def run(decode, *args, max_new=40, eos=(), cfg=None):
    cfg = cfg or GenerationConfig(max_new_tokens=max_new)
    stats = DecodeStats("x")
    out = [t for chunk in decode(*args, cfg, StopChecker(cfg.max_new_tokens, eos), stats) for t in chunk]
    return out, stats


def prompt(seed=0, n=7):
    return torch.randint(0, 90, (1, n), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(params=["tiny_llama_dir", "tiny_qwen3_dir"])
def target_dir(request):
    return request.getfixturevalue(request.param)


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


# --- sampling: a statistical test that the output follows the target distribution -------------


def exact_marginals(target, p: torch.Tensor, temperature: float):
    """Exact distribution of the first and second generated token under the target."""
    v = target.spec.vocab_size
    with torch.no_grad():
        l1 = target(Rows.clean(p, 0))[0, -1].double() / temperature
        p1 = torch.softmax(l1, -1)
        seqs = torch.cat([p.expand(v, -1), torch.arange(v)[:, None]], 1)
        l2 = target(Rows.clean(seqs, 0))[:, -1].double() / temperature
        p2 = (p1[:, None] * torch.softmax(l2, -1)).sum(0)
    return p1, p2


@pytest.mark.parametrize("greedy_drafter", [False, True])
def test_sampling_preserves_target_distribution(tmp_path, greedy_drafter):
    d = save_tiny_model(tmp_path, "llama", seed=1, vocab_size=12, hidden_size=16, intermediate_size=32,
                        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1)
    target = load_decoder(d, dtype=torch.float64)
    with torch.no_grad():  # soften the distribution so every token has real mass
        target.lm_head.weight.mul_(0.15)
    temp, n_runs = 1.3, 1500
    p = torch.tensor([[1, 2, 3]])
    p1, p2 = exact_marginals(target, p, temp)
    source = RandomSource(12, 4, seed=7, greedy=greedy_drafter)
    counts2 = torch.zeros(12)
    counts3 = torch.zeros(12)
    for seed in range(n_runs):
        cfg = GenerationConfig(max_new_tokens=3, sampling=SamplingConfig(temperature=temp), seed=seed)
        out, _ = run(speculative_decode, target, source, p, cfg=cfg)
        counts2[out[1]] += 1
        counts3[out[0]] += 1
    assert chisquare(counts2.numpy(), (p2 * n_runs).numpy()).pvalue > 1e-3
    assert chisquare(counts3.numpy(), (p1 * n_runs).numpy()).pvalue > 1e-3


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
