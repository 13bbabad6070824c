"""The low-precision agreement rule (`agreement.py`): identical, near tie or divergence.

Rule 3 is tested on a real flip (the same weights in other arithmetic: a near tie, checked past
the first difference to the end) and on a deliberately wrong verifier that takes the runner-up on
close calls (a divergence, though the float32 window alone would call it a near tie)."""

from __future__ import annotations

import copy

import pytest
import torch

from d3d.evaluation.agreement import RunLog, agreement_summary, classify, first_difference, near_tie_threshold, own_argmax
from d3d.inference import engine
from d3d.inference.engine import autoregressive_decode, speculative_decode
from d3d.inference.verify import VerifyResult
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from tests.helpers import greedy, prompt, run_decode
from tests.inference.sources import RandomSource


@torch.no_grad()
def _ranked(target, ids, out, i):
    """The float32 ranking of the token after prompt + out[:i], and the top-2 gap."""
    prefix = torch.cat([ids[0], torch.tensor(out[:i])])[None]
    logits = target(Rows.clean(prefix, 0))[0, -1]
    top = logits.topk(3)
    return top.indices.tolist(), float(top.values[0] - top.values[1])


@torch.no_grad()
def _ranked_gap(target, ids, out, i, token):
    prefix = torch.cat([ids[0], torch.tensor(out[:i])])[None]
    logits = target(Rows.clean(prefix, 0))[0, -1]
    return float(logits.max() - logits[token])


def test_classify_by_the_float32_distance_to_the_top(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    ids = prompt(1)
    out = greedy(target, ids, max_new=12)
    assert classify(out, list(out), ids, target, torch.bfloat16).kind == "identical"
    i = 5
    ranked, gap = _ranked(target, ids, out, i)
    second = out[:i] + [ranked[1]] + out[i + 1:]
    third = out[:i] + [ranked[2]]
    # the same swap is a near tie for a dtype coarse enough, a divergence for float32
    coarse = classify(out, second, ids, target, torch.bfloat16)
    fine = classify(out, second, ids, target, torch.float32)
    assert coarse.position == fine.position == i and abs(coarse.gap - gap) < 1e-5
    assert coarse.kind == ("near_tie" if gap < near_tie_threshold(torch.bfloat16) else "divergence")
    assert fine.kind == "divergence"  # float32 gaps are never below 7.6e-6 here
    # the third token: a near tie exactly when it too is within the threshold of the top
    third_gap = _ranked_gap(target, ids, out, i, ranked[2])
    got = classify(out, third, ids, target, torch.bfloat16)
    assert abs(got.gap - third_gap) < 1e-5
    assert got.kind == ("near_tie" if third_gap < near_tie_threshold(torch.bfloat16) else "divergence")
    assert classify(out, out[:8], ids, target, torch.bfloat16).kind == "divergence"  # a strict prefix


def test_threshold_follows_the_dtype_resolution():
    assert near_tie_threshold(torch.bfloat16) == 0.5
    assert near_tie_threshold(torch.float16) < 0.07 and near_tie_threshold(torch.float32) < 1e-5


def test_first_difference_and_summary():
    assert first_difference([1, 2, 3], [1, 2, 4]) == 2 and first_difference([1, 2], [1, 2, 3]) == 2
    s = agreement_summary(["identical", "near_tie", "identical", "divergence"])
    assert s == {"identical": False, "identical_prompts": 2, "near_ties": 1, "divergences": 1}


# -- rule 3: replayed argmax at every difference, forked to the end --------------------------------

HEAD_SCALE = 0.2  # a flatter head: close calls (top-2 gaps below bfloat16's 0.5-nat window) are common


@pytest.fixture(scope="module")
def flat_target(tiny_qwen3_dir):
    target = load_decoder(tiny_qwen3_dir)
    with torch.no_grad():
        target.lm_head.weight.mul_(HEAD_SCALE)
    return target


def logged(decode, *args, max_new: int = 40, **kwargs) -> RunLog:
    """A run of a decode loop as the agreement check sees it: tokens, pass shapes, capacity, model."""
    tokens, stats = run_decode(decode, *args, max_new=max_new, **kwargs)
    return RunLog(tokens, stats.passes, stats.target_capacity, args[0])


def other_arithmetic(target):
    """The same weights perturbed far below the window: a stand-in for another kernel's rounding."""
    other = copy.deepcopy(target)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in other.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 1e-2 * p.abs().mean())
    return other


def test_a_flip_in_other_arithmetic_is_a_near_tie_checked_to_the_end(flat_target):
    ids = prompt(1, 6)
    plain = logged(autoregressive_decode, flat_target, ids, max_new=48)
    other = logged(autoregressive_decode, other_arithmetic(flat_target), ids, max_new=48)
    got = classify(plain, other, ids, flat_target, torch.bfloat16)
    assert (got.kind, got.proof) == ("near_tie", "replay")
    assert got.differences >= 2  # compared past the first difference, each later flip checked alike
    assert got.position == first_difference(plain.tokens, other.tokens) and got.gap < 0.05
    assert classify(plain, other, ids, flat_target, torch.float32).kind == "divergence"  # float32 has no window


def accepts_runner_up(draft, draft_probs, logits, cfg, generator=None) -> VerifyResult:
    """A wrong greedy verifier: on a close call (top-2 gap below 0.5 nats) it takes the runner-up."""
    top = logits.topk(2, -1)
    close = top.values[:, 0] - top.values[:, 1] < 0.5
    picks = torch.where(close, top.indices[:, 1], top.indices[:, 0])  # [n + 1]
    n = int((draft == picks[:-1]).long().cumprod(0).sum())
    return VerifyResult(n, torch.cat([draft[:n], picks[n : n + 1]]))


def test_a_verifier_taking_the_runner_up_on_close_calls_is_a_divergence(flat_target, monkeypatch):
    ids = prompt(1, 6)
    plain = logged(autoregressive_decode, flat_target, ids)
    right = logged(speculative_decode, flat_target, RandomSource(97, 4, greedy=True), ids)
    assert right.tokens == plain.tokens and len(right.passes) > 0 and all(own_argmax(right, ids))
    monkeypatch.setattr(engine, "verify", accepts_runner_up)
    wrong = logged(speculative_decode, flat_target, RandomSource(97, 4, greedy=True), ids)
    i = first_difference(plain.tokens, wrong.tokens)
    assert i < len(plain.tokens)
    got = classify(plain, wrong, ids, flat_target, torch.bfloat16)
    assert (got.kind, got.position, got.proof) == ("divergence", i, "replay") and "own replayed" in got.reason
    # the float32 window alone (rule 2) would have called it a near tie
    assert classify(plain.tokens, wrong.tokens, ids, flat_target, torch.bfloat16).kind == "near_tie"


def test_the_replay_runs_on_the_threads_the_run_verified_on(flat_target, monkeypatch):
    """A CPU pass can round differently on another thread count (async verifies on part of the
    cores), so the replay takes the run's logged count, and gives the caller's back after."""
    ids = prompt(1, 6)
    run = logged(speculative_decode, flat_target, RandomSource(97, 4, greedy=True), ids)
    assert run.passes and 0 < torch.get_num_threads()
    saved = torch.get_num_threads()
    seen: list[int] = []
    forward = type(flat_target).forward

    def counting(self, *args, **kwargs):
        seen.append(torch.get_num_threads())
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(type(flat_target), "forward", counting)
    own = RunLog(run.tokens, run.passes, run.capacity, flat_target, threads=saved + 1)
    assert all(own_argmax(own, ids)) and set(seen) == {saved + 1} and torch.get_num_threads() == saved
    seen.clear()
    assert all(own_argmax(RunLog(run.tokens, run.passes, run.capacity, flat_target), ids)) and set(seen) == {saved}
