"""A drafting vocabulary (`Drafter.set_draft_vocab`, `d3d draft-vocab`) changes what the drafter may
propose and nothing else: logits on the subset are the full projection's, outputs stay lossless."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch
from safetensors.torch import load_file

from d3d.cli import main
from d3d.errors import D3DError
from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import GenerationConfig, speculative_decode
from d3d.inference.pipeline import Pipeline, load_target
from d3d.inference.sampling import SamplingConfig
from d3d.models.decoder import load_decoder
from d3d.models.drafter import DRAFT_VOCAB_KEY, WEIGHTS_NAME, Drafter
from d3d.training.draft_vocab import extended_tokens, frequent_tokens
from tests.helpers import MASK_ID, assert_follows, count_positions, exact_marginals, prompt, small_vocab_target
from tests.helpers import run_decode as run


def tiny_drafter(model_dir, layers=(0, 1)) -> tuple:
    target = load_decoder(model_dir, dtype=torch.float64)
    drafter = Drafter.from_base(model_dir, list(layers), 4, MASK_ID, "", target=target, dtype=torch.float64)
    return target, drafter


def test_subset_logits_equal_the_full_projection_and_minus_inf_elsewhere(tiny_llama_dir):
    target, drafter = tiny_drafter(tiny_llama_dir)
    ids = prompt(0)
    full = drafter.draft_logits(drafter.new_cache(), ids)
    subset = torch.tensor([50, 3, 17, 3, 90])  # unsorted, with a duplicate
    drafter.set_draft_vocab(subset)
    assert drafter.draft_vocab.tolist() == [3, 17, 50, 90] and drafter.config.draft_vocab_size == 4
    got = drafter.draft_logits(drafter.new_cache(), ids)
    keep = torch.zeros(full.shape[-1], dtype=torch.bool)
    keep[[3, 17, 50, 90]] = True
    torch.testing.assert_close(got[..., keep], full[..., keep], rtol=1e-12, atol=1e-12)
    assert torch.isneginf(got[..., ~keep]).all()
    drafter.set_draft_vocab(None)
    torch.testing.assert_close(drafter.draft_logits(drafter.new_cache(), ids), full)
    with pytest.raises(Exception, match="within"):
        drafter.set_draft_vocab(torch.tensor([97]))


def reference_greedy(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The greedy proposal as computed before `Drafter.most_likely`: softmax and max over every column."""
    top = torch.softmax(logits.float(), -1).max(-1)
    return top.indices, top.values


@pytest.mark.parametrize("subset", [None, torch.randperm(97, generator=torch.Generator().manual_seed(3))[:40]])
def test_greedy_proposals_equal_the_whole_vocabulary_softmax_bit_for_bit(tiny_llama_dir, subset):
    """`most_likely` reads only the drafting vocabulary's columns; tokens and confidences (which pick
    the verification length) stay those of the max over the whole row, ties included."""
    target, drafter = tiny_drafter(tiny_llama_dir)
    drafter.set_draft_vocab(subset)
    for seed in range(4):
        ids = prompt(seed, n=5 + 3 * seed)
        draft = DrafterSource(drafter, SamplingConfig()).propose(ids, 3)
        tokens, confidence = reference_greedy(drafter.draft_logits(drafter.new_cache(), ids)[0, :3])
        assert torch.equal(draft.tokens, tokens) and torch.equal(draft.confidence, confidence)
    allowed = torch.arange(97) if subset is None else drafter.draft_vocab
    flat = torch.randn(64, len(allowed), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    logits = torch.full((64, 97), float("-inf"), dtype=torch.float64).index_copy_(-1, allowed, flat)
    logits[:4, allowed[[4, 9, 20]]] = 9.0  # a three-way tie for the top: the first id wins
    tokens, confidence = drafter.most_likely(logits)  # q spread over many tokens: a softmax over the
    want_tokens, want_confidence = reference_greedy(logits)  # subset alone would round its sum differently
    assert torch.equal(tokens, want_tokens) and torch.equal(confidence, want_confidence)
    assert (tokens[:4] == allowed[4]).all()


@pytest.mark.parametrize("subset", [None, torch.arange(0, 97, 2)])
@pytest.mark.parametrize("blocks", [1, 3])
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_projection_multiplies_the_head_once_without_copying_it(tiny_llama_dir, subset, blocks, dtype):
    """The predicting rows of a block are a strided view; `project` must not let matmul broadcast the
    head to a batched product (which, in bfloat16, copies the head's weight on every drafting pass)."""
    from torch.profiler import profile

    target = load_decoder(tiny_llama_dir, dtype=dtype)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], 4, MASK_ID, "", target=target, dtype=dtype)
    drafter.set_draft_vocab(subset)
    bs, width = drafter.block_size, drafter.model.spec.hidden_size
    pass_rows = torch.randn(1, 5 + blocks * bs, width, dtype=dtype)  # 5 clean rows, then the blocks
    hidden = pass_rows[0, 5:].view(blocks, bs, width)[:, 1:]  # as `block_hidden` hands it over
    drafter.project(hidden)  # the head's drafting rows are cut once, on the first call
    with torch.inference_mode(), profile(record_shapes=True) as prof:
        got = drafter.project(hidden)
    head_numel = width * (drafter.model.spec.vocab_size if subset is None else len(subset))
    ops = [(e.name, e.input_shapes) for e in prof.events()]
    copied = max((torch.Size(shapes[0]).numel() for name, shapes in ops if name == "aten::copy_"), default=0)
    assert "aten::bmm" not in [name for name, _ in ops] and copied < head_numel, ops
    assert torch.equal(got, drafter.project(hidden.clone(memory_format=torch.contiguous_format)))
    full = (hidden @ drafter.model.lm_head.weight.T).double()
    keep = torch.ones(97, dtype=torch.bool) if subset is None else torch.isin(torch.arange(97), subset)
    tol = 1e-12 if dtype == torch.float64 else 2e-2
    torch.testing.assert_close(got[..., keep].double(), full[..., keep], rtol=tol, atol=tol)
    assert torch.isneginf(got[..., ~keep]).all()


def test_greedy_output_is_identical_with_a_drafting_vocabulary(tiny_llama_dir):
    target, drafter = tiny_drafter(tiny_llama_dir)
    reference, _ = run(speculative_decode, target, DrafterSource(drafter, SamplingConfig()), prompt(1), max_new=30)
    drafter.set_draft_vocab(torch.arange(0, 97, 2))  # half the vocabulary: the target writes the other half too
    out, stats = run(speculative_decode, target, DrafterSource(drafter, SamplingConfig()), prompt(1), max_new=30)
    assert out == reference and any(t % 2 for t in out)


def test_sampling_with_a_drafting_vocabulary_preserves_the_target_distribution(tmp_path):
    """Positions 1 and 2 are speculative (drafted, recovered or the bonus); position 0 is the prefill's."""
    target = small_vocab_target(tmp_path, layers=2)
    drafter = Drafter.from_base(tmp_path, [0], 4, 11, "", target=target, dtype=torch.float64)
    drafter.set_draft_vocab(torch.tensor([0, 2, 4, 5, 7]))  # q = 0 on 7 of the 12 tokens
    sampling, depth, n_runs = SamplingConfig(temperature=1.3, top_k=4, top_p=0.95), 3, 1500
    p = torch.tensor([[1, 2, 3]])
    want = exact_marginals(target, p, sampling, depth)
    outputs = []
    for seed in range(n_runs):
        cfg = GenerationConfig(max_new_tokens=depth, sampling=sampling, seed=seed)
        source = DrafterSource(drafter, cfg.sampling, torch.Generator().manual_seed(10_000 + seed))
        outputs.append(run(speculative_decode, target, source, p, cfg=cfg)[0])
    counts = count_positions(outputs, depth, 12)
    for k in (1, 2):
        assert_follows(counts[k], want[k], f"position {k}")


def test_frequent_tokens_rank_by_count_then_id():
    counts = Counter({5: 3, 9: 3, 2: 1, 7: 10})
    assert frequent_tokens(counts, 2) == [5, 7] and frequent_tokens(counts, 3, always=[0]) == [0, 5, 7, 9]
    assert frequent_tokens(counts, 6, vocab_size=100) == [0, 1, 2, 5, 7, 9]  # filled with the lowest unseen ids


def drafter_and_data(model_dir, tmp_path):
    """A float32 target, a 2-layer bfloat16 drafter saved under tmp_path, and 20 data rows whose responses
    repeat tokens 20-22 in every row and 10-16 less often."""
    target = load_target(str(model_dir), "cpu", torch.float32)
    src = tmp_path / "drafter"
    Drafter.from_base(model_dir, [0, 1], 4, 3, "", target=target.model).save_pretrained(src, torch.bfloat16)
    data = tmp_path / "data.jsonl"
    rows = [{"id": str(i), "prompt_ids": [5, 6], "response_ids": [10 + i % 7, 20, 21, 22, 10 + i % 3]} for i in range(20)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return target, src, data


def test_extended_tokens_keep_every_existing_id_and_add_the_most_frequent_missing():
    counts = Counter({5: 3, 9: 3, 2: 1, 7: 10, 4: 8})
    assert extended_tokens([1, 7], counts, 4) == [1, 4, 5, 7]  # 7 kept (counted or not), then 4, then 5 by id
    assert extended_tokens([1, 7], counts, 2, always=[0]) == [0, 1, 7]
    assert extended_tokens([3], Counter({3: 1}), 3, vocab_size=10) == [0, 1, 3]  # filled with the lowest unseen ids
    with pytest.raises(D3DError, match="at least 2"):
        extended_tokens([1, 7], counts, 1)


def test_cli_extend_grows_the_vocabulary_and_output_stays_identical(tiny_chat_model_dir, tmp_path, capsys):
    target, src, data = drafter_and_data(tiny_chat_model_dir, tmp_path)
    args = ["--data", str(data), "--target", str(tiny_chat_model_dir)]
    assert main(["draft-vocab", "--drafter", str(src), "--size", "5", "--extend", "--out", str(tmp_path / "x"), *args]) == 2
    assert "proposes every token already" in capsys.readouterr().err
    small, wide = tmp_path / "small", tmp_path / "wide"
    assert main(["draft-vocab", "--drafter", str(src), "--size", "3", "--out", str(small), *args]) == 0
    before = load_file(str(small / WEIGHTS_NAME))[DRAFT_VOCAB_KEY].tolist()
    assert main(["draft-vocab", "--drafter", str(small), "--size", "8", "--extend", "--out", str(wide), *args]) == 0
    assert "grown from" in capsys.readouterr().out
    after = load_file(str(wide / WEIGHTS_NAME))[DRAFT_VOCAB_KEY].tolist()
    assert set(before) < set(after) and len(after) >= 8
    record = json.loads((wide / "drafter_config.json").read_text())["drafter"]["draft_vocab"]
    assert record["extended_from"] == len(before) and record["coverage"] > record["coverage_before"]
    assert main(["draft-vocab", "--drafter", str(small), "--size", "2", "--extend", "--out", str(tmp_path / "y"), *args]) == 2
    pipe = Pipeline(target, str(wide), async_config=None)
    assert pipe.drafter.drafter.draft_vocab.tolist() == after
    cfg = GenerationConfig(max_new_tokens=20)
    ids_in = target.encode_chat("w10 w11 w12 w10 w11")
    plain, _ = pipe.generate(ids_in, "ar", cfg)
    assert pipe.generate(ids_in, "sync", cfg)[0] == plain and pipe.generate(ids_in, "async", cfg)[0] == plain
    pipe.close()


def test_cli_writes_a_copy_whose_async_and_sync_output_is_identical(tiny_chat_model_dir, tmp_path, capsys):
    target, src, data = drafter_and_data(tiny_chat_model_dir, tmp_path)
    out = tmp_path / "small"
    code = main(["draft-vocab", "--drafter", str(src), "--data", str(data), "--size", "5", "--out", str(out),
                 "--target", str(tiny_chat_model_dir)])
    assert code == 0 and "5-token" not in capsys.readouterr().err
    weights = load_file(str(out / WEIGHTS_NAME))
    ids = weights.pop(DRAFT_VOCAB_KEY).tolist()
    assert {20, 21, 22, 10} <= set(ids) and len(ids) <= 5 + 2  # the 5 most frequent, plus end-of-sequence ids
    assert weights.keys() == load_file(str(src / WEIGHTS_NAME)).keys()  # the body is copied as it was
    config = json.loads((out / "drafter_config.json").read_text())["drafter"]
    assert config["draft_vocab_size"] == len(ids) and config["draft_vocab"]["coverage"] > 0.7
    pipe = Pipeline(target, str(out), async_config=None)
    assert pipe.drafter.drafter.draft_vocab.tolist() == ids
    cfg = GenerationConfig(max_new_tokens=20)
    for text in ("w10 w11 w12 w10 w11", "w20 w30"):
        ids_in = target.encode_chat(text)
        plain, _ = pipe.generate(ids_in, "ar", cfg)
        assert pipe.generate(ids_in, "sync", cfg)[0] == plain
        assert pipe.generate(ids_in, "async", cfg)[0] == plain
    pipe.close()
    assert main(["draft-vocab", "--drafter", str(src), "--data", str(data), "--out", str(src),
                 "--target", str(tiny_chat_model_dir)]) == 2


@pytest.mark.parametrize("vocab", [None, torch.tensor([3, 17, 50, 90])])
def test_first_rows_equal_the_full_blocks_first_rows(tiny_llama_dir, vocab):
    """`rows` projects only the first drafted positions of every block; the block pass is the same,
    so those logits are the full call's first rows (one block and two packed blocks)."""
    _, drafter = tiny_drafter(tiny_llama_dir)
    drafter.set_draft_vocab(vocab)
    ids = prompt(0)
    full = drafter.draft_logits(drafter.new_cache(), ids)
    for rows in (1, 2, 3):
        got = drafter.draft_logits(drafter.new_cache(), ids, rows)
        assert got.shape == (1, rows, full.shape[-1])
        torch.testing.assert_close(got, full[:, :rows], rtol=1e-12, atol=1e-12)
    n = ids.shape[1]
    anchors, pos = ids[0, [n - 3, n - 1]], torch.tensor([n - 3, n - 1])
    both = drafter.block_logits(drafter.new_cache(), ids[:, :-1], anchors, pos)
    two = drafter.block_logits(drafter.new_cache(), ids[:, :-1], anchors, pos, 2)
    torch.testing.assert_close(two, both[:, :2], rtol=1e-12, atol=1e-12)
