"""How often each prefill selector keeps a prompt's evidence: no decoding, no timing.

For every prompt of a scored long-context suite (or of the calibration set, `--calibration N`)
and every selector, runs the selection exactly as `d3d bench` does (`prefill.select_prompt`, the
same protected tokens, stopwords and layers) and checks whether the chunks holding the prompt's
evidence (the pass-key sentence, the asked code, the planted fact, the function's header) were
kept: `any` (at least one of them: the evidence can be found) and `whole` (all of them: a
sentence cut by a chunk boundary keeps both halves, so the answer that ends it survives too). A
selector that drops the evidence cannot score on that prompt, so this table bounds the bench's
scores from above and explains them. It reads each prompt with the drafter (probe) and the
target's first layers (target-layers) only. `--lexical-spread 0,0.5,1` adds the lexical selector
at other neighbour spreads (`selectors.spread_to_neighbours`) as extra rows.

    .venv/bin/python scripts/prefill_evidence_kept.py --suite longctx2 --keep 0.1,0.2,0.3 --layers 3-7
    .venv/bin/python scripts/prefill_evidence_kept.py --calibration 3 --select lexical --lexical-spread 0,0.25,0.5,1
"""

from __future__ import annotations

import argparse
import json

import torch

from d3d.evaluation.longctx_facts import calibration_prompts
from d3d.evaluation.probe_calibration import evidence_chunks
from d3d.evaluation.suites import load_suite
from d3d.inference.pipeline import Pipeline
from d3d.inference.prefill import DEFAULT_CHUNK_SIZE, PrefillConfig, keep_best_chunks, select_prompt
from d3d.inference.prompt_layout import protected_tokens
from d3d.inference.selectors import SELECTORS, LexicalScorer, PromptChunks, parse_probe_layers, parse_selectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default="longctx2", help="a scored long-context suite (longctx, longctx2)")
    parser.add_argument("--calibration", type=int, default=0, metavar="N",
                        help="use N calibration prompts per task and length instead of the suite")
    parser.add_argument("--limit", type=int, default=None, help="first N prompts only")
    parser.add_argument("--keep", default="0.1,0.2,0.3", help="retentions rho")
    parser.add_argument("--select", default=",".join(SELECTORS), help="selectors (comma list)")
    parser.add_argument("--lexical-spread", default="", help="extra lexical rows at these neighbour spreads (comma list)")
    parser.add_argument("--layers", default="3-7", help="target layers of the target-layers selectors")
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE, help="tokens per chunk")
    parser.add_argument("--dtype", default="auto", help="as the bench's --dtype")
    args = parser.parse_args()

    keeps = tuple(float(k) for k in args.keep.split(","))
    selects, layers = parse_selectors(args.select), parse_probe_layers(args.layers)
    spreads = [float(s) for s in args.lexical_spread.split(",") if s.strip()]
    rows = [*selects, *(f"lexical~{s:g}" for s in spreads)]
    prompts = calibration_prompts(args.calibration)[: args.limit] if args.calibration else load_suite(args.suite, args.limit)
    pipe = Pipeline.load(dtype=args.dtype)
    target, tokenizer = pipe.target.native("evidence check"), pipe.target.tokenizer
    kept = {(r, k, w): [] for r in rows for k in keeps for w in ("any", "whole")}
    for prompt in prompts:
        ids = pipe.target.encode_chat(prompt.text)
        protected = protected_tokens(tokenizer, ids[0].cpu(), pipe.target.chat_frame)
        scored_by = {}
        for select in selects:  # score once, then select at every retention from the same scores
            config = PrefillConfig(keeps[0], args.chunk_size, select, layers=layers, stop_ids=pipe.target.stopword_ids)
            scored, _ = select_prompt(pipe.drafter.drafter, ids, protected, config, target)
            chunks = PromptChunks(ids, scored.protected, scored.chunk_starts, scored.chunk_ends)
            scored_by[select] = scored.chunk_scores
        for spread in spreads:
            scored_by[f"lexical~{spread:g}"] = LexicalScorer(pipe.target.stopword_ids, spread).score(chunks, None)
        where = evidence_chunks(tokenizer, ids, chunks, prompt.evidence)
        for row, scores in scored_by.items():
            for keep in keeps:
                held = keep_best_chunks(chunks, scores, keep).chunk_kept[where] if where else torch.zeros(1, dtype=torch.bool)
                kept[row, keep, "any"].append(bool(held.any()))
                kept[row, keep, "whole"].append(bool(held.all()))
        print(prompt.id, " ".join(f"{r}@{k:g}={int(kept[r, k, 'any'][-1])}{int(kept[r, k, 'whole'][-1])}"
                                  for r in rows for k in keeps), flush=True)
    print(f"\n{'selector':<22}" + "".join(f" {w + ' ' + format(k, 'g'):>10}" for w in ("any", "whole") for k in keeps))
    for row in rows:
        print(f"{row:<22}" + "".join(f" {sum(v := kept[row, k, w]) / len(v):>10.2f}" for w in ("any", "whole") for k in keeps))
    print(json.dumps({f"{r}@{k:g}/{w}": round(sum(v) / len(v), 4) for (r, k, w), v in kept.items()}))


if __name__ == "__main__":
    with torch.inference_mode():
        main()
