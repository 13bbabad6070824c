"""Packed multi-anchor examples: exact logits against unpacked blocks, labels, sampling, batching, input checks."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from d3d.errors import D3DError
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from d3d.training.packing import (
    IGNORE,
    Example,
    PackedBatch,
    PackedDataset,
    PackingConfig,
    TokenBudgetBatchSampler,
    collate,
    load_examples,
    pack_example,
    read_meta,
    sample_anchors,
)
from tests.helpers import MASK_ID


def make_example(prompt_len: int, response_len: int, seed: int) -> Example:
    g = np.random.default_rng(seed)
    return Example(g.integers(0, 90, prompt_len).astype(np.int32), g.integers(0, 90, response_len).astype(np.int32))


def block_alone(model, example: Example, anchor: int, block: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Logits [B, V] of one block run alone on its prefix (every token strictly before the anchor);
    a causal block is run as plain causal rows prefix + block, without any block mask."""
    ids = torch.as_tensor(np.concatenate([example.prompt_ids, example.response_ids]), dtype=torch.long)[None]
    pos = len(example.prompt_ids) + anchor
    if causal:
        return model(Rows.clean(torch.cat([ids[:, :pos], block[None]], 1), 0), logits_from=pos)[0]
    rows = Rows.with_blocks(Rows.clean(ids[:, :pos], 0), block[None, None], torch.tensor([[pos]]))
    return model(rows, logits_from=pos)[0]


@pytest.mark.parametrize("causal", [False, True])  # block attention: bidirectional (the paper's) or causal
@pytest.mark.parametrize("anchors", [[0, 1, 2, 7, 8, 18], list(range(19))])  # adjacent, and every anchor
def test_packed_block_logits_equal_each_block_alone(tiny_llama_dir, anchors, causal):
    model = load_decoder(tiny_llama_dir).double()
    cfg = PackingConfig(block_size=6, num_anchors=len(anchors), mask_token_id=MASK_ID)
    example = make_example(5, 20, seed=0)
    packed = pack_example(example, np.array(anchors), cfg)
    batch = PackedBatch.from_dict(collate([packed], MASK_ID))
    with torch.no_grad():
        logits = model(batch.rows(causal))[0]  # [L + k*B, V]
        clean = model(Rows.clean(batch.input_ids, 0))[0]
        torch.testing.assert_close(logits[:25], clean, atol=1e-10, rtol=1e-10)
        for k, a in enumerate(anchors):
            got = logits[25 + 6 * k : 25 + 6 * (k + 1)]
            want = block_alone(model, example, a, packed.blocks[k], causal)
            torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10)


def test_padded_batch_gives_each_examples_own_logits(tiny_qwen3_dir):
    model = load_decoder(tiny_qwen3_dir).double()
    cfg = PackingConfig(block_size=4, num_anchors=5, mask_token_id=MASK_ID)
    examples = [make_example(3, 12, seed=1), make_example(7, 4, seed=2)]  # second: 3 anchors (clamped), shorter
    anchors = [sample_anchors(len(e.response_ids), 5, np.random.default_rng(i)) for i, e in enumerate(examples)]
    packed = [pack_example(e, a, cfg) for e, a in zip(examples, anchors)]
    batch = PackedBatch.from_dict(collate(packed, MASK_ID))
    assert batch.blocks.shape == (2, 5, 4) and batch.input_ids.shape == (2, 15)
    with torch.no_grad():
        both = model(batch.rows())
        for i, p in enumerate(packed):
            alone = model(PackedBatch.from_dict(collate([p], MASK_ID)).rows())[0]
            n, m = p.input_ids.numel(), p.blocks.numel()
            torch.testing.assert_close(both[i, :n], alone[:n], atol=1e-10, rtol=1e-10)
            torch.testing.assert_close(both[i, 15 : 15 + m], alone[n:], atol=1e-10, rtol=1e-10)
    assert not batch.valid[1, 11:].any() and (batch.block_labels[1, 3:] == IGNORE).all()


def test_labels_follow_the_index_conventions():
    example = Example(np.array([10, 11], dtype=np.int32), np.array([20, 21, 22, 23, 24, 25], dtype=np.int32))
    packed = pack_example(example, np.array([0, 3, 4]), PackingConfig(block_size=4, mask_token_id=MASK_ID))
    assert packed.input_ids.tolist() == [10, 11, 20, 21, 22, 23, 24, 25]
    assert packed.ar_labels.tolist() == [IGNORE, 20, 21, 22, 23, 24, 25, IGNORE]  # T labels: r_1..r_T
    assert packed.blocks.tolist() == [[20, 96, 96, 96], [23, 96, 96, 96], [24, 96, 96, 96]]
    assert packed.anchor_pos.tolist() == [2, 5, 6]  # len(prompt) + response index
    # supervised rows: min(B-1, T-1-a) = 3, 2, 1 (the paper's min(B-1, T-s) with s = a+1)
    assert packed.block_labels.tolist() == [[IGNORE, 21, 22, 23], [IGNORE, 24, 25, IGNORE], [IGNORE, 25, IGNORE, IGNORE]]
    no_prompt = Example(np.zeros(0, np.int32), example.response_ids)
    no_prompt = pack_example(no_prompt, np.array([0]), PackingConfig(4, 1, MASK_ID))
    assert no_prompt.ar_labels.tolist() == [21, 22, 23, 24, 25, IGNORE]  # r_1 has no predecessor


def test_next_token_labels_shift_by_one_row():
    example = Example(np.array([10, 11], dtype=np.int32), np.array([20, 21, 22, 23, 24, 25], dtype=np.int32))
    cfg = PackingConfig(block_size=4, mask_token_id=MASK_ID, labels="next-token")
    packed = pack_example(example, np.array([0, 3, 4]), cfg)
    # row j predicts r_{a+j+1}: the anchor row the first drafted token, the last row nothing; same counts
    assert packed.block_labels.tolist() == [[21, 22, 23, IGNORE], [24, 25, IGNORE, IGNORE], [25, IGNORE, IGNORE, IGNORE]]
    assert packed.blocks.tolist() == [[20, 96, 96, 96], [23, 96, 96, 96], [24, 96, 96, 96]]


def test_anchors_without_replacement_clamped_and_seeded():
    for t, k in [(2, 128), (10, 4), (10, 9), (300, 128)]:
        a = sample_anchors(t, k, np.random.default_rng(0))
        assert len(a) == min(k, t - 1) and len(set(a.tolist())) == len(a)
        assert a.min() >= 0 and a.max() <= t - 2 and (np.diff(a) > 0).all()
    data = PackedDataset([make_example(3, 40, seed=s) for s in range(3)], PackingConfig(4, 8, MASK_ID), seed=7)
    first = data[1].anchor_pos.tolist()
    assert data[1].anchor_pos.tolist() == first
    data.set_epoch(1)
    assert data[1].anchor_pos.tolist() != first


def test_batch_sampler_respects_caps_and_covers_every_example_once():
    lengths = [10, 50, 20, 30, 40, 5, 60, 15]
    sampler = TokenBudgetBatchSampler(lengths, max_examples=3, max_tokens=100, seed=3)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        assert sorted(i for b in batches for i in b) == list(range(8))
        assert all(len(b) <= 3 and (len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 100) for b in batches)
        assert batches == sampler.plan(epoch) and len(sampler) == len(batches)
    assert sampler.plan(0) != sampler.plan(1)


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_bad_rows_are_counted_and_skipped(tmp_path):
    good = {"id": "a", "prompt": "p", "prompt_ids": [1, 2], "response": "r", "response_ids": [3, 4, 5]}
    rows = [
        good, "not json", [1, 2], {"prompt_ids": [1]}, {"prompt_ids": [1], "response_ids": [3, "x"]},
        {"prompt_ids": [1], "response_ids": [3, 97]},  # out of the vocabulary
        {"prompt_ids": [1], "response_ids": [3]}, {"prompt_ids": [1], "response_ids": []},  # too short
        {"prompt_ids": list(range(20)), "response_ids": list(range(30))},  # truncated
    ]
    file = write_jsonl(tmp_path / "d.jsonl", rows)
    examples, report = load_examples([file], vocab_size=97, max_length=24, num_anchors=4)
    counts = (report.rows, report.kept, report.malformed, report.short, report.truncated, report.clamped)
    assert counts == (9, 2, 5, 2, 1, 1)
    long = examples[1]
    assert len(long.prompt_ids) + len(long.response_ids) == 24 and len(long.response_ids) == 12
    assert long.prompt_ids.tolist() == list(range(8, 20)) and long.response_ids.tolist() == list(range(12))
    assert "skipped 5 malformed, 2 with a response under 2 tokens" in report.summary()


def test_bad_files_raise_one_line_errors(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    cases = {
        str(empty): "is empty",
        str(write_jsonl(tmp_path / "junk.jsonl", ["{not json", '{"text": 1}'])): "malformed",
        str(tmp_path / "missing.jsonl"): "not found",
        str(tmp_path / "folder"): "no .jsonl or .parquet",
    }
    (tmp_path / "folder").mkdir()
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 garbage")
    for path, message in cases.items():
        with pytest.raises(D3DError, match=message):
            load_examples([path], vocab_size=97, max_length=64)
    with pytest.raises(D3DError, match="cannot read Parquet"):
        load_examples([tmp_path / "bad.parquet"], vocab_size=97, max_length=64)
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(D3DError, match="not UTF-8"):
        load_examples([tmp_path / "bin.jsonl"], vocab_size=97, max_length=64)


def test_parquet_folder_and_meta(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"id": str(i), "prompt_ids": [1, 2], "response_ids": [3, 4, 5 + i]} for i in range(3)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "part-0.parquet")
    (tmp_path / "meta.json").write_text(json.dumps({"tokenizer_fingerprint": "abc"}))
    examples, report = load_examples([tmp_path], vocab_size=97, max_length=64)
    assert report.kept == 3 and examples[2].response_ids.tolist() == [3, 4, 7] and examples[2].row_id == "2"
    assert read_meta([tmp_path / "part-0.parquet"]) == [{"tokenizer_fingerprint": "abc"}]
