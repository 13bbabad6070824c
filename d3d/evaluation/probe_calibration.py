"""Which target layers locate the fact: ranks of the evidence chunk under each candidate scorer.

For each calibration prompt (`longctx_facts.calibration_prompts`, disjoint from the suites) the
target reads the whole prompt once (`layer_head_mass`: the last prompt token's attention in every
layer and head), and each candidate scorer ranks the prompt's chunks as selective prefill would
(`prefill.chunk_bounds`, protected tokens left out). A prompt's evidence (the pass-key sentence,
the asked code, the planted fact, the asked function's header) lies in one or two chunks
(`evidence_chunks`); per scorer we record the best rank of those chunks and whether selection at
rho 0.1 / 0.2 / 0.3 (`prefill.keep_best_chunks`) would keep one of them. Candidates:

    layer L          one layer's mass, summed over its heads
    layers A-B       a contiguous window, summed; it costs (B+1)/N of a full prefill
    layers A-B+lex   that window fused with the lexical selector (reciprocal rank fusion)
    head L.H         one head (reported for the docs, not a selector)
    lexical, probe   BM25 against the question; the drafter's one-[M] probe

`summarize` averages over prompts; `recommend` picks the window to ship as `--prefill-layers`
(for `target-layers`, or fused with lexical for `target-layers+lexical`).
This module knows nothing about the command line (`scripts/calibrate_probe_layers.py` runs it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from d3d.inference.prefill import chunk_bounds, keep_best_chunks
from d3d.inference.selectors import PromptChunks, bm25, probe_scores, ranks
from d3d.models.attention import AttentionProbe, Rows
from d3d.models.decoder import DecoderModel
from d3d.models.drafter import Drafter

KEEPS = (0.1, 0.2, 0.3)  # retentions at which "the evidence survives selection" is counted
FUSION_K = 60  # as selectors.FUSION_K


@dataclass
class PromptRanks:
    """One calibration prompt's evidence ranks, per candidate scorer."""

    prompt_id: str
    num_chunks: int
    rank: dict[str, int] = field(default_factory=dict)  # scorer -> best rank of an evidence chunk (1 = first)
    kept: dict[str, list[bool]] = field(default_factory=dict)  # scorer -> evidence kept at each of KEEPS


def layer_head_mass(model: DecoderModel, prompt: Tensor) -> Tensor:
    """[layers, heads, L] attention of the last token of prompt [1, L] in every layer and head."""
    probe = AttentionProbe(torch.tensor([prompt.shape[1] - 1], device=prompt.device), keep_heads=True)
    model.hidden_states(Rows.clean(prompt, 0), None, probe)
    return torch.stack([probe.by_layer[i][0, :, 0].cpu() for i in sorted(probe.by_layer)])


def evidence_chunks(tokenizer, prompt: Tensor, chunks: PromptChunks, evidence: str) -> list[int]:
    """Chunks overlapping the first place where `evidence` appears in the decoded prompt [1, L]
    ([] if it cannot be found, e.g. split inside a multi-byte character)."""
    ids = prompt[0].tolist()
    pieces = tokenizer.batch_decode([[t] for t in ids])  # byte-level BPE: the pieces spell the text
    ends = torch.tensor([len(p) for p in pieces]).cumsum(0)  # [L] one past each token's last character
    start = "".join(pieces).find(evidence)
    if start < 0:  # tokenizers that drop spaces between pieces: decode every prefix instead (slow, exact)
        ends = torch.tensor([len(tokenizer.decode(ids[: i + 1])) for i in range(len(ids))])
        start = tokenizer.decode(ids).find(evidence)
    if start < 0:
        return []
    first = int((ends <= start).sum())  # the token holding the evidence's first character
    last = int((ends < start + len(evidence)).sum())  # ... and its last
    return [c for c in range(chunks.num_chunks) if chunks.starts[c] <= last and chunks.ends[c] > first]


def rank_prompt(prompt_id: str, candidates: dict[str, Tensor], chunks: PromptChunks, evidence: list[int]) -> PromptRanks:
    """Evidence ranks and survival under each candidate's chunk scores [c]."""
    out = PromptRanks(prompt_id, chunks.num_chunks)
    for name, scores in candidates.items():
        out.rank[name] = int(ranks(scores)[evidence].min())
        out.kept[name] = [bool(keep_best_chunks(chunks, scores, k).chunk_kept[evidence].any()) for k in KEEPS]
    return out


def candidate_scores(mass: Tensor, chunks: PromptChunks, lexical: Tensor, probe: Tensor | None,
                     max_layer: int) -> dict[str, Tensor]:
    """Chunk scores [c] of every candidate from mass [layers, heads, L] (`layer_head_mass`), the
    lexical scores [c] and the drafter probe's [c] (None: not run). Windows end at `max_layer`."""
    per_head = torch.stack([torch.stack([chunks.chunk_sums(h) for h in layer]) for layer in mass])  # [layers, heads, c]
    per_layer = per_head.sum(1)  # [layers, c]
    out = {f"layer {i}": per_layer[i] for i in range(per_layer.shape[0])}
    out |= {f"head {i}.{h}": per_head[i, h] for i in range(per_head.shape[0]) for h in range(per_head.shape[1])}
    for b in range(min(max_layer, per_layer.shape[0] - 1) + 1):
        for a in range(b + 1):
            window = per_layer[a : b + 1].sum(0)
            out[f"layers {a}-{b}"] = window
            out[f"layers {a}-{b}+lex"] = 1.0 / (FUSION_K + ranks(window)) + 1.0 / (FUSION_K + ranks(lexical))
    out["lexical"] = lexical
    if probe is not None:
        out["probe"] = probe
    return out


def calibrate_prompt(target: DecoderModel, drafter: Drafter | None, tokenizer, prompt_ids: Tensor, protected: Tensor,
                     evidence: str, prompt_id: str, chunk_size: int, stop_ids: frozenset[int], max_layer: int) -> PromptRanks | None:
    """Every candidate's evidence rank on one prompt [1, L] (None when the evidence is not found)."""
    starts, ends = chunk_bounds(protected, chunk_size)
    chunks = PromptChunks(prompt_ids, protected, starts, ends)
    where = evidence_chunks(tokenizer, prompt_ids, chunks, evidence)
    if not where:
        return None
    with torch.inference_mode():
        mass = layer_head_mass(target, prompt_ids)
        probe = None if drafter is None else chunks.chunk_sums(probe_scores(drafter, drafter.new_cache(prompt_ids.shape[1] + 1), prompt_ids))
    lexical = bm25([[t for t in c if t not in stop_ids] for c in chunks.chunk_ids()],
                   {t for t in chunks.query_ids() if t not in stop_ids})
    return rank_prompt(prompt_id, candidate_scores(mass, chunks, lexical, probe, max_layer), chunks, where)


def summarize(results: list[PromptRanks]) -> dict[str, dict]:
    """Per candidate: mean rank, mean rank / chunks, and the share of prompts whose evidence
    survives selection at each of KEEPS (`kept@0.2` ...)."""
    out = {}
    for name in results[0].rank:
        rows = [r for r in results if name in r.rank]
        out[name] = {
            "mean_rank": round(sum(r.rank[name] for r in rows) / len(rows), 2),
            "mean_rank_share": round(sum(r.rank[name] / r.num_chunks for r in rows) / len(rows), 4),
            **{f"kept@{k:g}": round(sum(r.kept[name][i] for r in rows) / len(rows), 4) for i, k in enumerate(KEEPS)},
        }
    return out


def window_cost(name: str, num_layers: int) -> float | None:
    """Share of a full prefill that a "layers A-B[+lex]" candidate costs: (B+1)/N (None otherwise)."""
    if not name.startswith("layers "):
        return None
    return (int(name.split("-")[1].split("+")[0]) + 1) / num_layers


def recommend(summary: dict[str, dict], num_layers: int, max_cost: float, keep: float = 0.2,
              fused: bool = False) -> str | None:
    """The window (`fused`: fused with lexical) that keeps the evidence most often at `keep`, among
    those costing at most `max_cost` of a prefill; ties: lower mean rank share, then cheaper."""
    windows = [(n, s) for n, s in summary.items()
               if (window_cost(n, num_layers) or 2.0) <= max_cost and n.endswith("+lex") == fused]
    if not windows:
        return None
    key = f"kept@{keep:g}"
    return min(windows, key=lambda w: (-w[1][key], w[1]["mean_rank_share"], window_cost(w[0], num_layers)))[0]
