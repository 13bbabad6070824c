"""Selective prefill: the probe, the chunk selection, and decoding on the reduced prompt (with a
drafter, and plainly without one)."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from d3d.errors import D3DError
from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import GenerationConfig, autoregressive_decode, speculative_decode
from d3d.inference.prefill import (
    FullPromptDrafterSource,
    PrefillConfig,
    SelectiveStats,
    chunk_bounds,
    parse_prefill_keep,
    probe_scores,
    reduce_for_target,
    reduce_prompt,
    select_chunks,
    select_prompt,
    selective_decode,
)
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.helpers import MASK_ID


def ids(seed: int, n: int) -> torch.Tensor:
    return torch.randint(5, 90, (1, n), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def models(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], 4, MASK_ID, "fp", target=target)
    return target, drafter


def test_probe_is_causal_clean(models):
    """Tokens fed after the probe's position (in the same pass) do not change its scores."""
    _, drafter = models
    prompt = ids(0, 40)
    alone = probe_scores(drafter, drafter.new_cache(), prompt)
    for seed in (1, 2):
        longer = torch.cat([prompt, ids(seed, 9)], 1)
        with_more = probe_scores(drafter, drafter.new_cache(), longer, probe_pos=40)
        torch.testing.assert_close(with_more, alone, rtol=1e-5, atol=1e-6)


def test_probe_mass_equals_eager_attention_of_an_appended_mask(tiny_llama_dir):
    """The probe row is a causal last row [M] after the prompt: transformers' eager attention
    probabilities, summed over heads and layers, give the same mass."""
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1, 2, 3], 4, MASK_ID, "fp", target=target)
    hf = AutoModelForCausalLM.from_pretrained(tiny_llama_dir, attn_implementation="eager").eval()
    prompt = ids(3, 30)
    with torch.no_grad():
        out = hf(torch.cat([prompt, torch.tensor([[MASK_ID]])], 1), output_attentions=True)
    want = torch.stack(out.attentions)[:, 0, :, -1, :-1].sum((0, 1))  # [L]
    got = probe_scores(drafter, drafter.new_cache(), prompt)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_probe_pass_leaves_a_drafting_cache(models):
    """After the probe the drafter's cache holds the prompt exactly as a plain drafting pass would."""
    _, drafter = models
    prompt, out = ids(4, 25), ids(5, 3)
    selection, cache = select_prompt(drafter, prompt, torch.zeros(25, dtype=torch.bool), PrefillConfig(keep=0.5, select="probe"))
    assert cache.length == 25
    seq = torch.cat([prompt, out], 1)
    want = drafter.draft_logits(drafter.new_cache(), seq)
    got = drafter.draft_logits(cache, seq)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_chunk_bounds_cut_each_unprotected_run():
    protected = torch.tensor([1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1], dtype=torch.bool)
    starts, ends = chunk_bounds(protected, 3)
    assert list(zip(starts.tolist(), ends.tolist())) == [(2, 5), (5, 7), (8, 10)]


def test_selection_keeps_order_protected_tokens_and_the_budget():
    n = 100
    scores = torch.full((n,), 0.01)
    scores[[15, 55, 85]] = torch.tensor([1.0, 3.0, 2.0])  # chunks 1, 5, 8 (of 10) carry the mass
    protected = torch.zeros(n, dtype=torch.bool)
    protected[:4] = protected[96:] = True  # a head and a tail of 4 tokens each
    sel = select_chunks(scores, protected, keep=0.3, chunk_size=10)
    kept = sel.kept.tolist()
    assert kept == sorted(kept)  # original order
    assert set(range(4)) | set(range(96, 100)) <= set(kept)  # protected always kept
    assert len(kept) <= 30  # floor(0.3 * 100)
    # budget 30 - 8 protected = 22: the chunks holding 55 and 85, then 15's chunk (10) no longer
    # fits but the 2-token chunk [94, 96) does
    assert {55, 85} <= set(kept) and 15 not in kept and {94, 95} <= set(kept)
    assert {15, 55, 85} <= set(select_chunks(scores, protected, keep=0.4, chunk_size=10).kept.tolist())


def test_selection_bound_and_extremes():
    scores = torch.rand(77, generator=torch.Generator().manual_seed(0))
    protected = torch.zeros(77, dtype=torch.bool)
    protected[-5:] = True
    for keep in (0.05, 0.1, 0.2, 0.5, 0.9):
        sel = select_chunks(scores, protected, keep, 8)
        assert len(sel.kept) <= max(int(keep * 77), 5)
        assert protected[sel.kept].sum() == 5
    assert select_chunks(scores, protected, 1.0, 8).kept.tolist() == list(range(77))
    assert select_chunks(scores, protected, 0.01, 8).kept.tolist() == list(range(72, 77))  # only protected fit


def run(decode, *args, max_new=24, stats=None):
    cfg = GenerationConfig(max_new_tokens=max_new)
    stats = stats or SelectiveStats("sync")
    return [t for chunk in decode(*args, cfg, StopChecker(max_new, ()), stats) for t in chunk], stats


def test_reduced_prefill_equals_plain_decoding_of_the_kept_tokens(models):
    """Selective decoding is plain (lossless) decoding of the target on the kept tokens."""
    target, drafter = models
    prompt = ids(6, 60)
    protected = torch.zeros(60, dtype=torch.bool)
    protected[:3] = protected[-4:] = True
    prefill = PrefillConfig(keep=0.3, chunk_size=8)
    selection, _ = select_prompt(drafter, prompt, protected, prefill)
    reduced = reduce_prompt(prompt, selection)
    assert reduced.shape[1] < 60
    want, _ = run(autoregressive_decode, target, reduced)
    got, stats = run(selective_decode, target, drafter, prompt, protected, prefill)
    assert got == want
    assert stats.prompt_tokens == reduced.shape[1] and stats.full_prompt_tokens == 60
    assert 0 < stats.select_s and stats.select_s + stats.prefill_s <= stats.ttft_s <= stats.total_s  # spans


def test_keep_one_is_full_prompt_speculative_decoding(models):
    target, drafter = models
    prompt = ids(7, 30)
    want, _ = run(speculative_decode, target, DrafterSource(drafter, SamplingConfig()), prompt)
    got, stats = run(selective_decode, target, drafter, prompt, torch.zeros(30, dtype=torch.bool), PrefillConfig(keep=1.0))
    assert got == want and stats.prompt_tokens == 30


def test_drafter_drafts_from_the_full_prompt(models):
    """The source maps the target's committed tokens onto the drafter's full prompt."""
    _, drafter = models
    prompt, out = ids(8, 30), ids(9, 5)
    protected = torch.zeros(30, dtype=torch.bool)
    reduced = reduce_for_target(drafter, prompt, protected, PrefillConfig(keep=0.4, chunk_size=4, select="probe"))
    assert reduced.target_ids.shape[1] < 30 and reduced.drafter_cache.length == 30
    source = FullPromptDrafterSource(drafter, reduced, SamplingConfig())
    source.start(100)
    got = source.propose(torch.cat([reduced.target_ids, out], 1), 3).tokens
    want = DrafterSource(drafter, SamplingConfig()).propose(torch.cat([prompt, out], 1), 3).tokens
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("select", ["lexical", "last", "random", "target-layers", "target-layers+lexical"])
def test_selection_without_a_drafter_equals_selection_with_one(models, select):
    """Every selector but the probe selects without a drafter (plain decoding): the same tokens, no cache."""
    target, drafter = models
    prompt = ids(10, 70)
    protected = torch.zeros(70, dtype=torch.bool)
    protected[:3] = protected[-6:] = True
    config = PrefillConfig(keep=0.4, chunk_size=8, select=select, layers=(1, 2), stop_ids=frozenset({11}))
    alone, cache = select_prompt(None, prompt, protected, config, target)
    assert cache is None and alone.kept.tolist() == select_prompt(drafter, prompt, protected, config, target)[0].kept.tolist()
    reduced = reduce_for_target(None, prompt, protected, config, target)
    assert reduced.drafter_cache is None and reduced.target_ids.tolist() == reduce_prompt(prompt, alone).tolist()
    assert protected.sum() < reduced.target_ids.shape[1] <= 28
    with pytest.raises(ValueError, match="without a drafter"):
        FullPromptDrafterSource(drafter, reduced, SamplingConfig())


def test_the_probe_without_a_drafter_is_a_clear_error(models):
    target, _ = models
    with pytest.raises(D3DError, match="the probe selector needs a drafter"):
        select_prompt(None, ids(11, 30), torch.zeros(30, dtype=torch.bool), PrefillConfig(keep=0.5, select="probe"), target)
    with pytest.raises(D3DError, match="the probe selector needs a drafter"):
        run(selective_decode, target, None, ids(11, 30), torch.zeros(30, dtype=torch.bool), PrefillConfig(0.5, select="probe"))


def test_selective_decode_without_a_drafter_is_plain_decoding_of_the_kept_tokens(models):
    target, _ = models
    prompt = ids(12, 60)
    protected = torch.zeros(60, dtype=torch.bool)
    protected[-4:] = True
    prefill = PrefillConfig(keep=0.3, chunk_size=8)  # the default selector, lexical
    reduced = reduce_prompt(prompt, select_prompt(None, prompt, protected, prefill)[0])
    want, _ = run(autoregressive_decode, target, reduced)
    got, stats = run(selective_decode, target, None, prompt, protected, prefill, stats=SelectiveStats("ar"))
    assert got == want and len(got) == 24
    assert stats.prompt_tokens == reduced.shape[1] < 60 and stats.full_prompt_tokens == 60
    assert stats.selector == "lexical" and stats.rounds == 23  # one target pass per token after the first
    assert stats.select_s + stats.prefill_s <= stats.ttft_s <= stats.total_s


@pytest.mark.parametrize("value", [0, 0.0, -0.1, 1.5, "abc", float("nan"), True, [0.2]])
def test_bad_keep_is_a_clear_error(value):
    with pytest.raises(D3DError, match="prefill keep"):
        parse_prefill_keep(value)


def test_keep_parses_numbers_and_none():
    assert parse_prefill_keep(None) is None
    assert parse_prefill_keep("0.2") == 0.2 and parse_prefill_keep(1) == 1.0
