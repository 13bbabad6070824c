"""The loss matches DESIGN.md computed by hand, and the chunked projection changes nothing."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from d3d.models.decoder import load_decoder
from d3d.training.losses import (
    LossConfig,
    VocabSubset,
    adjusted_teacher,
    chunked_cross_entropy,
    default_gamma,
    drafter_losses,
    position_weights,
)
from d3d.training.packing import IGNORE, Example, PackedBatch, PackingConfig, collate, pack_example
from tests.helpers import MASK_ID


def tiny_batch(block_size: int = 4, labels: str = "same-position") -> PackedBatch:
    """Two examples of different lengths; anchors adjacent and near the end of the response."""
    g = np.random.default_rng(0)
    cfg = PackingConfig(block_size=block_size, num_anchors=4, mask_token_id=MASK_ID, labels=labels)
    a = Example(g.integers(0, 90, 3).astype(np.int32), g.integers(0, 90, 9).astype(np.int32))
    b = Example(g.integers(0, 90, 5).astype(np.int32), g.integers(0, 90, 4).astype(np.int32))
    packed = [pack_example(a, np.array([0, 1, 6, 7]), cfg), pack_example(b, np.array([1, 2]), cfg)]
    return PackedBatch.from_dict(collate(packed, MASK_ID))


def by_hand(model, batch: PackedBatch, gamma: float, offset: int = 0, vocab=None) -> tuple[float, float]:
    """L_diff and L_AR per DESIGN.md with plain loops over full logits, averaged over the two examples.

    offset 1: next-token labels (row j predicts drafted token j+1). vocab: softmax over those ids
    only, labels outside skipped."""
    with torch.no_grad():
        logits = model(batch.rows()).double()
    if vocab is not None:
        keep = torch.zeros(logits.shape[-1], dtype=torch.bool)
        keep[vocab] = True
        logits = logits.masked_fill(~keep, float("-inf"))
    nc, (b, k, bs) = batch.input_ids.shape[1], batch.block_labels.shape
    blocks = logits[:, nc:].reshape(b, k, bs, -1)
    diffs, ars = [], []
    for i in range(b):
        num = den = 0.0
        for kk in range(k):
            for j in range(1 - offset, bs - offset):
                y = int(batch.block_labels[i, kk, j])
                if y != IGNORE and (vocab is None or y in vocab):
                    w = math.exp(-(j + offset - 1) / gamma)
                    num += w * -float(torch.log_softmax(blocks[i, kk, j], -1)[y])
                    den += w
        diffs.append(num / den)
        ce = [-float(torch.log_softmax(logits[i, r], -1)[int(batch.ar_labels[i, r])])
              for r in range(nc) if int(batch.ar_labels[i, r]) != IGNORE
              and (vocab is None or int(batch.ar_labels[i, r]) in vocab)]
        ars.append(sum(ce) / len(ce))
    return sum(diffs) / b, sum(ars) / b


def test_position_weights_and_default_gamma():
    assert default_gamma(16) == 7.0 and default_gamma(8) == 3.5 and default_gamma(32) == 14.0
    w = position_weights(16, 7.0)
    assert w[0] == 0 and w[1] == 1
    torch.testing.assert_close(w[1:], torch.exp(-torch.arange(15, dtype=torch.float64) / 7.0))
    assert LossConfig(block_size=8).decay == 3.5 and LossConfig(block_size=8, gamma=2.0).decay == 2.0


def test_next_token_weights_follow_the_drafted_token():
    w = position_weights(5, 2.0, "next-token")
    torch.testing.assert_close(w, torch.tensor([1.0, math.exp(-0.5), math.exp(-1.0), math.exp(-1.5), 0.0],
                                               dtype=torch.float64))


@pytest.mark.parametrize("labels", ["same-position", "next-token"])
def test_loss_with_a_drafting_vocabulary_and_either_convention_matches_by_hand(tiny_llama_dir, labels):
    model = load_decoder(tiny_llama_dir).double()
    batch = tiny_batch(labels=labels)
    supervised = batch.block_labels[batch.block_labels != IGNORE].unique().tolist()
    vocab = sorted(set(range(0, 97, 3)) | set(supervised[: len(supervised) // 2]))  # some labels fall outside
    cfg = LossConfig(block_size=4, lambda_ar=1.0, gamma=1.5, labels=labels)
    diff, ar = by_hand(model, batch, 1.5, offset=int(labels == "next-token"), vocab=vocab)
    parts = drafter_losses(model, batch, cfg, vocab=VocabSubset.from_ids(torch.tensor(vocab), 97))
    assert parts.diff.item() == pytest.approx(diff, rel=1e-9)
    assert parts.ar.item() == pytest.approx(ar, rel=1e-9)
    outside = [y for y in batch.block_labels.flatten().tolist() + batch.ar_labels.flatten().tolist()
               if y != IGNORE and y not in vocab]
    assert int(parts.dropped) == len(outside) > 0


@pytest.mark.parametrize("lambda_ar", [1.0, 0.5, 0.0])
def test_loss_matches_design_by_hand(tiny_llama_dir, lambda_ar):
    model = load_decoder(tiny_llama_dir).double()
    batch = tiny_batch()
    cfg = LossConfig(block_size=4, lambda_ar=lambda_ar, gamma=1.5)
    diff, ar = by_hand(model, batch, gamma=1.5)
    parts = drafter_losses(model, batch, cfg)
    assert parts.diff.item() == pytest.approx(diff, rel=1e-9)
    assert parts.ar.item() == pytest.approx(ar, rel=1e-9)
    assert parts.total.item() == pytest.approx(diff + lambda_ar * ar, rel=1e-9)
    # 3+3+2+1 supervised rows in example a (T=9, anchors 0,1,6,7), 2+1 in b (T=4, anchors 1,2)
    assert int(parts.diff_rows) == 12 and int(parts.ar_rows) == 9 + 4
    assert int(parts.rows) == (3 + 9) + (5 + 4) + 6 * 4


def test_gradients_ignore_the_ar_loss_when_lambda_is_zero(tiny_llama_dir):
    model = load_decoder(tiny_llama_dir).double()
    batch = tiny_batch()
    grads = []
    for lam in (0.0, 1e-30):  # lambda = 0 must equal the diffusion loss alone
        model.zero_grad()
        drafter_losses(model, batch, LossConfig(block_size=4, lambda_ar=lam)).total.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-9)


def test_chunked_loss_equals_unchunked_values_and_gradients(tiny_qwen3_dir):
    model = load_decoder(tiny_qwen3_dir).double()  # untied LM head: its gradient is checked too
    batch = tiny_batch()
    results = []
    for chunk in (3, 10**6):
        model.zero_grad()
        parts = drafter_losses(model, batch, LossConfig(block_size=4, chunk_rows=chunk))
        parts.total.backward()
        results.append((parts.total.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}))
    (loss_a, grad_a), (loss_b, grad_b) = results
    torch.testing.assert_close(loss_a, loss_b, atol=1e-12, rtol=1e-12)
    assert grad_a.keys() == grad_b.keys() and grad_a["lm_head.weight"].abs().sum() > 0
    for name in grad_a:
        torch.testing.assert_close(grad_a[name], grad_b[name], atol=1e-12, rtol=1e-10)


def test_chunked_cross_entropy_matches_full_logits():
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(37, 8, dtype=torch.float64, generator=g, requires_grad=True)
    weight = torch.randn(50, 8, dtype=torch.float64, generator=g, requires_grad=True)
    labels = torch.randint(0, 50, (37,), generator=g)
    got = chunked_cross_entropy(hidden, weight, labels, chunk_rows=5)
    want = torch.nn.functional.cross_entropy(hidden @ weight.T, labels, reduction="none")
    torch.testing.assert_close(got, want)
    g1 = torch.autograd.grad(got.sum(), (hidden, weight))
    g2 = torch.autograd.grad(want.sum(), (hidden, weight))
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b)


def test_adjusted_teacher_matches_the_closed_form():
    q0 = torch.tensor([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [0.4, 0.395, 0.205]], dtype=torch.float64)
    y = torch.tensor([1, 0, 1])
    got = adjusted_teacher(q0, y, delta=0.01)
    # row 0: m = 0.3 - 0.5 = -0.2, eta = (0.01 + 0.2) / 1.2 = 0.175
    eta = 0.21 / 1.2
    torch.testing.assert_close(got[0], (1 - eta) * q0[0] + eta * torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))
    torch.testing.assert_close(got[1], q0[1])  # y already leads by 0.2 >= delta: unchanged
    # row 2: m = -0.005, eta = 0.015 / 1.005
    eta2 = 0.015 / 1.005
    torch.testing.assert_close(got[2], (1 - eta2) * q0[2] + eta2 * torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))


def test_adjusted_teacher_gives_y_a_margin_of_exactly_delta_where_it_adjusts():
    g = torch.Generator().manual_seed(0)
    q0 = torch.softmax(torch.randn(500, 40, dtype=torch.float64, generator=g) * 3, -1)
    y = torch.randint(0, 40, (500,), generator=g)
    for delta in (0.01, 0.2):
        q = adjusted_teacher(q0, y, delta)
        torch.testing.assert_close(q.sum(-1), torch.ones(500, dtype=torch.float64))
        assert (q >= 0).all()

        def margin(p):
            return p.gather(-1, y[:, None])[:, 0] - p.scatter(-1, y[:, None], -1.0).max(-1).values

        before, after = margin(q0), margin(q)
        adjusted = before < delta
        assert adjusted.any() and (~adjusted).any()
        torch.testing.assert_close(after[adjusted], torch.full_like(after[adjusted], delta))
        torch.testing.assert_close(q[~adjusted], q0[~adjusted])


def test_distillation_loss_matches_design_by_hand(tiny_llama_dir):
    student = load_decoder(tiny_llama_dir).double()
    teacher = load_decoder(tiny_llama_dir).double()
    with torch.no_grad():
        for p in teacher.parameters():
            p.add_(0.05 * torch.randn_like(p))
    batch = tiny_batch()
    cfg = LossConfig(block_size=4, lambda_ar=0.5, gamma=1.5, kd_delta=0.01)
    parts = drafter_losses(student, batch, cfg, teacher)
    with torch.no_grad():
        s_logits, t_logits = student(batch.rows()), teacher(batch.rows())
    nc, (b, k, bs) = batch.input_ids.shape[1], batch.block_labels.shape
    per_example = []
    for i in range(b):
        num = den = 0.0
        for kk in range(k):
            for j in range(1, bs):
                y = int(batch.block_labels[i, kk, j])
                if y == IGNORE:
                    continue
                row = nc + kk * bs + j
                q0, log_q = torch.softmax(t_logits[i, row], -1), torch.log_softmax(s_logits[i, row], -1)
                top2 = torch.topk(q0, 2).values
                m = float(q0[y]) - (float(top2[1]) if int(q0.argmax()) == y else float(top2[0]))
                eta = max(0.0, (0.01 - m) / (1 - m))
                qt = (1 - eta) * q0 + eta * torch.nn.functional.one_hot(torch.tensor(y), q0.shape[0]).double()
                kl = float((qt * (torch.log(qt.clamp_min(1e-300)) - log_q)).sum())
                w = math.exp(-(j - 1) / 1.5)
                num, den = num + w * kl, den + w
        per_example.append(num / den)
    want = sum(per_example) / b
    assert parts.kl.item() == pytest.approx(want, rel=1e-9)
    assert parts.total.item() == pytest.approx(parts.diff.item() + 0.5 * parts.ar.item() + want, rel=1e-9)
    # the teacher gets no gradient, the student does
    parts.total.backward()
    assert all(p.grad is None for p in teacher.parameters())
    assert student.model.layers[0].mlp.gate_up_proj.weight.grad.abs().sum() > 0


def test_an_ar_drafter_is_trained_by_the_ar_loss_alone(tiny_llama_dir):
    model = load_decoder(tiny_llama_dir).double()
    batch = tiny_batch()
    parts = drafter_losses(model, batch, LossConfig(block_size=4, lambda_ar=1.0, diffusion_weight=0.0))
    assert parts.total.item() == pytest.approx(parts.ar.item(), rel=1e-12)
    assert parts.diff.item() > 0 and not parts.diff.requires_grad  # still reported, never trained
    parts.total.backward()
    model_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    ar_only = drafter_losses(model, batch, LossConfig(block_size=4, lambda_ar=1.0, diffusion_weight=1e-30))
    ar_only.total.backward()
    for a, p in zip(model_grads, model.parameters()):
        torch.testing.assert_close(a, p.grad, atol=1e-12, rtol=1e-9)
