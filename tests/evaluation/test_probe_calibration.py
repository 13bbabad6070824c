"""Probe calibration: locating the evidence chunk, per-layer masses, ranks, the recommended window."""

from __future__ import annotations

import pytest
import torch

from d3d.evaluation.probe_calibration import (
    KEEPS, calibrate_prompt, evidence_chunks, layer_head_mass, recommend, summarize, window_cost,
)
from d3d.inference.pipeline import load_target
from d3d.inference.prefill import chunk_bounds
from d3d.inference.selectors import PromptChunks, layer_attention_mass

WORDS = " ".join(f"w{10 + i % 70}" for i in range(120))


@pytest.fixture(scope="module")
def target(tiny_chat_model_dir):
    return load_target(str(tiny_chat_model_dir), "cpu", "float32")


def encoded(target, text: str):
    ids = target.encode_chat(text)
    protected = torch.zeros(ids.shape[1], dtype=torch.bool)
    protected[:4] = protected[-6:] = True
    return ids, protected


def test_evidence_chunks_find_the_tokens_that_spell_it(target):
    text = WORDS + " w88 w89 w90 " + WORDS
    ids, protected = encoded(target, text)
    starts, ends = chunk_bounds(protected, 8)
    chunks = PromptChunks(ids, protected, starts, ends)
    where = evidence_chunks(target.tokenizer, ids, chunks, "w88 w89 w90")
    position = ids[0].tolist().index(target.tokenizer.convert_tokens_to_ids("w88"))
    assert where and all(chunks.starts[c] <= position + 2 and chunks.ends[c] > position for c in where)
    assert evidence_chunks(target.tokenizer, ids, chunks, "w91 w90") == []


def test_layer_head_mass_agrees_with_the_target_layers_selector(target):
    ids, _ = encoded(target, WORDS)
    model = target.native("test")
    with torch.no_grad():
        mass = layer_head_mass(model, ids)  # [layers, heads, L]
        want = layer_attention_mass(model, ids, (1, 2))
    assert mass.shape == (4, 4, ids.shape[1])
    torch.testing.assert_close(mass[[1, 2]].sum((0, 1)), want)
    torch.testing.assert_close(mass.sum(-1), torch.ones(4, 4))  # each head's row is a distribution


def test_calibration_ranks_every_candidate_and_recommends_an_affordable_window(target, tiny_chat_model_dir):
    ids, protected = encoded(target, WORDS + " w88 w89 w90 " + WORDS + "\n\nw88 w90 ?")
    row = calibrate_prompt(target.native("test"), None, target.tokenizer, ids, protected, "w88 w89 w90", "p", 8,
                           frozenset(), max_layer=2)
    assert row is not None and {"layer 0", "layers 0-2", "layers 1-2+lex", "lexical", "head 3.3"} <= set(row.rank)
    assert "layers 0-3" not in row.rank and "probe" not in row.rank
    assert all(1 <= r <= row.num_chunks for r in row.rank.values())
    assert row.rank["lexical"] == 1 and row.kept["lexical"] == [True] * len(KEEPS)  # the question's rare words
    summary = summarize([row, row])
    assert summary["lexical"]["mean_rank"] == 1 and summary["lexical"]["kept@0.2"] == 1.0
    choice = recommend(summary, num_layers=4, max_cost=0.5)
    assert choice.startswith("layers ") and not choice.endswith("+lex") and window_cost(choice, 4) <= 0.5
    assert recommend(summary, num_layers=4, max_cost=0.5, fused=True).endswith("+lex")
    assert recommend(summary, num_layers=4, max_cost=0.1) is None
