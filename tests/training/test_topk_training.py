"""Training from the target's stored top-k (issue 16): packing gathers the top-k at each label's index,
distillation (KD) and prefix-survival weights equal direct float64 computations, KD without top-k
data is a one-line error, and a tiny KD + CE run on `d3d data --top-k-logits` output finishes and
resumes exactly.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from d3d.cli import main
from d3d.errors import D3DError
from d3d.inference.pipeline import load_target
from d3d.models.decoder import load_decoder
from d3d.training.data import DataConfig, generate_dataset
from d3d.training.losses import LossConfig, VocabSubset, drafter_losses, survival_weights
from d3d.training.packing import (
    IGNORE, Example, PackedBatch, PackingConfig, collate, load_examples, pack_example,
)
from d3d.training.train import TrainConfig, train
from tests.helpers import MASK_ID

VOCAB = 97  # the tiny models' vocabulary
CHAT_MASK = 4  # <mask> in the tiny chat tokenizer


# ---------------------------------------------------------------------------------------------
# Data with top-k: the tiny chat model answering greedily through `d3d data --top-k-logits 3`


@pytest.fixture(scope="module")
def topk_data(tmp_path_factory, tiny_chat_model_dir):
    """A greedy `d3d data` file with the target's top-3 per response position (8 rows of 12 tokens at most)."""
    folder = tmp_path_factory.mktemp("topk_data")
    prompts = folder / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "prompt": " ".join(f"w{10 + i + k}" for k in range(1 + i % 4))})
                               + "\n" for i in range(8)))
    out = folder / "data.jsonl"
    target = load_target(str(tiny_chat_model_dir), "cpu")
    cfg = DataConfig(out=out, prompts=(prompts,), max_new_tokens=12, batch_size=4, greedy=True, progress=False,
                     top_k_logits=3)
    generate_dataset(cfg, target=target)
    return out


@pytest.mark.parametrize("labels", ["same-position", "next-token"])
def test_packed_topk_is_the_rows_topk_at_the_labels_index(topk_data, labels):
    rows = [json.loads(line) for line in topk_data.read_text().splitlines()]
    examples, report = load_examples([topk_data], VOCAB, max_length=512)
    assert report.topk == report.kept == len(rows) and report.bad_topk == 0
    cfg = PackingConfig(block_size=5, num_anchors=6, mask_token_id=CHAT_MASK, labels=labels)
    offset = int(labels == "next-token")
    checked = 0
    for row, example in zip(rows, examples):
        assert example.topk_ids.shape == (len(row["response_ids"]), 3)
        anchors = np.arange(len(example.response_ids) - 1)[::2]
        packed = pack_example(example, anchors, cfg)
        for k, a in enumerate(anchors):
            for j in range(cfg.block_size):
                label, ids = int(packed.block_labels[k, j]), packed.block_topk_ids[k, j].tolist()
                if label == IGNORE:
                    assert ids == [IGNORE] * 3 and packed.block_topk_logprobs[k, j].abs().sum() == 0
                    continue
                index = int(a) + j + offset  # the response index this row's label comes from
                assert label == row["response_ids"][index]
                assert ids == row["topk_ids"][index] and ids[0] == label  # greedy data: the label leads its top-k
                assert packed.block_topk_logprobs[k, j].tolist() == pytest.approx(row["topk_logprobs"][index])
                checked += 1
    assert checked > 50


def test_rows_without_or_with_bad_topk_still_train_and_batches_pad(tmp_path, topk_data):
    rows = [json.loads(line) for line in topk_data.read_text().splitlines()][:3]
    del rows[1]["topk_ids"], rows[1]["topk_logprobs"]  # no top-k: hard labels only
    rows[2]["topk_ids"] = rows[2]["topk_ids"][:-1]  # one position short: malformed, ignored, row kept
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    examples, report = load_examples([mixed], VOCAB, max_length=512)
    assert (report.kept, report.topk, report.bad_topk) == (3, 1, 1) and "1 with malformed top-k" in report.summary()
    assert examples[1].topk_ids is None and examples[2].topk_ids is None
    narrow = Example(examples[0].prompt_ids, examples[0].response_ids, "narrow", examples[0].topk_ids[:, :2].copy(),
                     examples[0].topk_logprobs[:, :2].copy())
    cfg, anchors = PackingConfig(4, 3, CHAT_MASK, "next-token"), np.array([0, 3, 4])
    packed = [pack_example(e, anchors, cfg) for e in (examples[0], examples[1], narrow)]
    batch = PackedBatch.from_dict(collate(packed, CHAT_MASK))
    assert batch.block_topk_ids.shape == (3, 3, 4, 3)
    assert (batch.block_topk_ids[1] == IGNORE).all()  # the row without top-k
    assert (batch.block_topk_ids[2, ..., 2] == IGNORE).all()  # the narrower top-k padded
    torch.testing.assert_close(batch.block_topk_ids[2, ..., :2], batch.block_topk_ids[0, ..., :2])
    plain = collate([packed[1]], CHAT_MASK)
    assert "block_topk_ids" not in plain and PackedBatch.from_dict(plain).block_topk_ids is None
    cut, _ = load_examples([mixed], VOCAB, max_length=10)
    assert cut[0].topk_ids.shape[0] == len(cut[0].response_ids) < len(examples[0].response_ids)


# ---------------------------------------------------------------------------------------------
# The loss against direct float64 computations


def topk_batch(labels: str = "same-position", k: int = 4, seed: int = 0) -> PackedBatch:
    """Two examples with random responses and random top-k (some entries padding); anchors adjacent."""
    g = np.random.default_rng(seed)
    examples = []
    for p, t in ((3, 9), (5, 5)):
        response = g.integers(5, 90, t).astype(np.int32)
        ids = np.stack([g.choice(np.arange(5, 95), k, replace=False) for _ in range(t)]).astype(np.int32)
        logprobs = np.sort(-g.exponential(2.0, (t, k)), -1)[:, ::-1].astype(np.float32)
        examples.append(Example(g.integers(0, 90, p).astype(np.int32), response, "", ids, logprobs.copy()))
    cfg = PackingConfig(block_size=4, num_anchors=4, mask_token_id=MASK_ID, labels=labels)
    packed = [pack_example(examples[0], np.array([0, 1, 5, 7]), cfg), pack_example(examples[1], np.array([1, 2]), cfg)]
    batch = PackedBatch.from_dict(collate(packed, MASK_ID))
    batch.block_topk_ids[0, 1, 2, k - 1] = IGNORE  # a padding entry inside a labelled row
    return batch


def reference(model, batch: PackedBatch, cfg: LossConfig, vocab: list[int] | None = None) -> dict:
    """L_CE, L_KD and the survival-weighted variants by plain loops over full float64 logits."""
    with torch.no_grad():
        logits = model(batch.rows()).double()
    if vocab is not None:
        keep = torch.zeros(VOCAB, dtype=torch.bool)
        keep[vocab] = True
        logits = logits.masked_fill(~keep, float("-inf"))
    nc, (b, nk, bs) = batch.input_ids.shape[1], batch.block_labels.shape
    offset = int(cfg.labels == "next-token")
    ce, kd, dropped = [], [], 0
    for i in range(b):
        sums = {"ce": [0.0, 0.0], "kd": [0.0, 0.0]}
        for kk in range(nk):
            survive = 1.0
            for j in range(bs):
                y = int(batch.block_labels[i, kk, j])
                if y == IGNORE:
                    continue
                log_q = torch.log_softmax(logits[i, nc + kk * bs + j], -1)
                if vocab is not None and y not in vocab:
                    survive = 0.0  # an undraftable token: no block survives it
                    continue
                w = survive if cfg.position_weighting == "survival" else math.exp(-(j + offset - 1) / cfg.decay)
                survive *= math.exp(float(log_q[y]))
                sums["ce"][0] += w * -float(log_q[y])
                sums["ce"][1] += w
                pairs = [(int(t), float(lp)) for t, lp in zip(batch.block_topk_ids[i, kk, j], batch.block_topk_logprobs[i, kk, j])
                         if int(t) != IGNORE]
                kept = [(t, lp) for t, lp in pairs if vocab is None or t in vocab]
                dropped += len(pairs) - len(kept)
                if kept:
                    z = sum(math.exp(lp) for _, lp in kept)
                    sums["kd"][0] += w * sum(math.exp(lp) / z * -float(log_q[t]) for t, lp in kept)
                    sums["kd"][1] += w
        ce.append(sums["ce"][0] / sums["ce"][1])
        kd.append(sums["kd"][0] / sums["kd"][1])
    return {"ce": sum(ce) / b, "kd": sum(kd) / b, "dropped": dropped}


@pytest.mark.parametrize("weighting", ["exp", "survival"])
@pytest.mark.parametrize("labels", ["same-position", "next-token"])
def test_kd_and_ce_equal_a_direct_computation(tiny_llama_dir, labels, weighting):
    model = load_decoder(tiny_llama_dir).double()
    batch = topk_batch(labels)
    cfg = LossConfig(block_size=4, lambda_ar=0.5, gamma=1.5, labels=labels, ce_weight=1.0, kd_weight=10.0,
                     position_weighting=weighting)
    want = reference(model, batch, cfg)
    parts = drafter_losses(model, batch, cfg)
    assert parts.diff.item() == pytest.approx(want["ce"], rel=1e-9)
    assert parts.kd.item() == pytest.approx(want["kd"], rel=1e-9)
    assert parts.total.item() == pytest.approx(want["ce"] + 10.0 * want["kd"] + 0.5 * parts.ar.item(), rel=1e-9)
    assert int(parts.kd_rows) == int(parts.diff_rows) == 3 + 3 + 3 + 1 + 3 + 2 and int(parts.kd_dropped) == 0


def test_kd_with_a_drafting_vocabulary_drops_and_renormalises(tiny_llama_dir):
    model = load_decoder(tiny_llama_dir).double()
    batch = topk_batch("next-token", seed=1)
    labelled = batch.block_labels[batch.block_labels != IGNORE].unique().tolist()
    vocab = sorted(set(range(0, VOCAB, 2)) | set(labelled[: len(labelled) - 2]))  # some labels and top-k outside
    for weighting in ("exp", "survival"):
        cfg = LossConfig(block_size=4, gamma=1.5, labels="next-token", kd_weight=1.0, position_weighting=weighting)
        want = reference(model, batch, cfg, vocab)
        parts = drafter_losses(model, batch, cfg, vocab=VocabSubset.from_ids(torch.tensor(vocab), VOCAB))
        assert parts.diff.item() == pytest.approx(want["ce"], rel=1e-9)
        assert parts.kd.item() == pytest.approx(want["kd"], rel=1e-9)
        assert int(parts.kd_dropped) == want["dropped"] > 0


def test_kd_on_a_one_token_topk_at_log_prob_zero_is_the_cross_entropy(tiny_qwen3_dir):
    model = load_decoder(tiny_qwen3_dir).double()
    batch = topk_batch("same-position")
    labelled = batch.block_labels != IGNORE
    batch.block_topk_ids = torch.where(labelled, batch.block_labels, IGNORE)[..., None]
    batch.block_topk_logprobs = torch.zeros_like(batch.block_topk_ids, dtype=torch.float32)
    grads = []
    for ce_weight, kd_weight in ((1.0, 0.0), (0.0, 1.0)):
        model.zero_grad()
        cfg = LossConfig(block_size=4, lambda_ar=0.0, ce_weight=ce_weight, kd_weight=kd_weight)
        parts = drafter_losses(model, batch, cfg)
        parts.total.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    assert parts.kd.item() == pytest.approx(parts.diff.item(), rel=1e-12)
    assert parts.total.item() == pytest.approx(parts.kd.item(), rel=1e-12)  # KD alone: the hard labels untrained
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-9)


def test_survival_weights_are_the_product_of_the_earlier_probabilities():
    p = torch.tensor([[[1.0, 0.5, 0.4, 0.9], [0.8, 0.0, 0.7, 1.0]]], dtype=torch.float64)
    want = [[1.0, 1.0, 0.5, 0.2], [1.0, 0.8, 0.0, 0.0]]  # w_j = prod_{i<j} p_i
    torch.testing.assert_close(survival_weights(p), torch.tensor([want], dtype=torch.float64))


def test_survival_weights_carry_no_gradient(tiny_llama_dir):
    """The gradient of the survival-weighted loss is that of the weighted sum with the weights held fixed."""
    model = load_decoder(tiny_llama_dir).double()
    batch = topk_batch("next-token")
    cfg = LossConfig(block_size=4, lambda_ar=0.0, labels="next-token", position_weighting="survival")
    drafter_losses(model, batch, cfg).total.backward()
    got = model.model.layers[0].mlp.gate_up_proj.weight.grad.clone()
    model.zero_grad()
    logits = model(batch.rows())[:, batch.input_ids.shape[1]:].reshape(*batch.block_labels.shape, -1)
    labels = batch.block_labels
    log_q = torch.log_softmax(logits, -1).gather(-1, labels.clamp_min(0)[..., None])[..., 0]  # [b, k, B]
    p = torch.where(labels != IGNORE, log_q.detach().exp(), torch.ones_like(log_q))
    w = torch.where(labels != IGNORE, survival_weights(p), torch.zeros_like(p))
    per_example = (w * -log_q).sum((1, 2)) / w.sum((1, 2))
    per_example.mean().backward()
    torch.testing.assert_close(got, model.model.layers[0].mlp.gate_up_proj.weight.grad, atol=1e-12, rtol=1e-9)


# ---------------------------------------------------------------------------------------------
# Training runs


def kd_config(tmp_path, model_dir, data, **overrides) -> TrainConfig:
    settings = dict(
        data=[str(data)], target=str(model_dir), num_layers=2, block_size=4, num_anchors=4, labels="next-token",
        ce_weight=1.0, kd_weight=10.0, position_weighting="survival", lr=3e-3, warmup_steps=1, batch_size=2,
        grad_accum=1, max_steps=5, save_every=0, eval_every=0, output_dir=str(tmp_path / "run"),
    )
    return TrainConfig(**(settings | overrides))


def train_records(run_dir) -> list[dict]:
    records = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]
    return [r for r in records if r["kind"] == "train"]


def test_kd_without_topk_data_is_a_one_line_error(tmp_path, tiny_chat_model_dir, topk_data, capsys):
    rows = [json.loads(line) for line in topk_data.read_text().splitlines()]
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps({k: r[k] for k in ("id", "prompt_ids", "response_ids")}) + "\n" for r in rows))
    with pytest.raises(D3DError, match="has none: generate it with `d3d data --top-k-logits"):
        train(kd_config(tmp_path, tiny_chat_model_dir, plain))
    assert main(["train", "--data", str(plain), "--target", str(tiny_chat_model_dir), "--kd-weight", "1",
                 "--output-dir", str(tmp_path / "cli")]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if not line.startswith("[d3d] ")]  # progress lines aside
    assert len(errors) == 1 and "--kd-weight needs the target's top-k" in errors[0] and "Traceback" not in err
    with pytest.raises(D3DError, match="position weighting must be one of exp, survival"):
        train(kd_config(tmp_path, tiny_chat_model_dir, topk_data, position_weighting="linear"))
    with pytest.raises(D3DError, match="ce weight and kd weight are both 0"):
        train(kd_config(tmp_path, tiny_chat_model_dir, topk_data, ce_weight=0.0, kd_weight=0.0))


def test_kd_and_ce_training_finishes_and_resumes_exactly(tmp_path, tiny_chat_model_dir, topk_data):
    """KD 10 : CE 1 with survival weights on `d3d data --top-k-logits` rows, interrupted after step 2 and resumed."""
    whole = train(kd_config(tmp_path, tiny_chat_model_dir, topk_data, output_dir=str(tmp_path / "whole")))
    assert (whole / "drafter_config.json").is_file()

    def interrupt(trainer):
        if trainer.progress.step == 2:
            raise KeyboardInterrupt

    split_cfg = kd_config(tmp_path, tiny_chat_model_dir, topk_data, output_dir=str(tmp_path / "split"))
    with pytest.raises(KeyboardInterrupt):
        train(split_cfg, on_step=interrupt)
    train(split_cfg)
    a, b = train_records(tmp_path / "whole"), train_records(tmp_path / "split")
    assert [r["step"] for r in b] == [1, 2, 3, 4, 5] and all(r["kd_rows_per_step"] > 0 for r in b)
    for x, y in zip(a, b):
        for key in ("loss", "loss_diff", "loss_kd", "loss_ar", "grad_norm", "rows_seen"):
            assert x[key] == pytest.approx(y[key], rel=1e-6, abs=1e-6), (x["step"], key)
    assert a[-1]["loss_kd"] < a[0]["loss_kd"]
    assert all(r["loss"] == pytest.approx(r["loss_diff"] + 10 * r["loss_kd"] + r["loss_ar"], rel=1e-5) for r in a)
    train(kd_config(tmp_path, tiny_chat_model_dir, topk_data, position_weighting="exp", max_steps=1,
                    output_dir=str(tmp_path / "exp")))
    first_exp = train_records(tmp_path / "exp")[0]  # the same weights and rows, weighted exp(-(j-1)/gamma)
    assert first_exp["loss_ar"] == pytest.approx(a[0]["loss_ar"], rel=1e-6)
    assert abs(first_exp["loss_diff"] - a[0]["loss_diff"]) > 1e-4
    data_record = json.loads((tmp_path / "whole/log.jsonl").read_text().splitlines()[0])
    assert data_record["kind"] == "data" and data_record["topk"] == data_record["kept"] == 8
