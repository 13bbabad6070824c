"""The low-precision agreement rule (`agreement.py`): identical, near tie or divergence."""

from __future__ import annotations

import torch

from d3d.evaluation.agreement import agreement_summary, classify, first_difference, near_tie_threshold
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from tests.helpers import greedy, prompt


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
