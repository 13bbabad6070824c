"""How often each prefill selector keeps a suite prompt's evidence: no decoding, no timing.

For every prompt of a scored long-context suite and every selector, runs the selection exactly
as `d3d bench` does (`prefill.select_prompt`, the same protected tokens, stopwords and layers)
and checks whether a chunk holding the prompt's evidence (the pass-key sentence, the asked code,
the planted fact, the function's header) was kept. A selector that drops the evidence cannot
score on that prompt, so this table bounds the bench's scores from above and explains them. It
reads each prompt with the drafter (probe) and the target's first layers (target-layers) only.

    .venv/bin/python scripts/prefill_evidence_kept.py --suite longctx2 --keep 0.1,0.2,0.3 --layers 3-7
"""

from __future__ import annotations

import argparse
import json

import torch

from d3d.evaluation.probe_calibration import evidence_chunks
from d3d.evaluation.suites import load_suite
from d3d.inference.pipeline import Pipeline
from d3d.inference.prefill import DEFAULT_CHUNK_SIZE, PrefillConfig, keep_best_chunks, select_prompt
from d3d.inference.prompt_layout import protected_tokens
from d3d.inference.selectors import SELECTORS, PromptChunks, parse_probe_layers, parse_selectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default="longctx2", help="a scored long-context suite (longctx, longctx2)")
    parser.add_argument("--limit", type=int, default=None, help="first N prompts only")
    parser.add_argument("--keep", default="0.1,0.2,0.3", help="retentions rho")
    parser.add_argument("--select", default=",".join(SELECTORS), help="selectors (comma list)")
    parser.add_argument("--layers", default="3-7", help="target layers of the target-layers selectors")
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE, help="tokens per chunk")
    parser.add_argument("--dtype", default="auto", help="as the bench's --dtype")
    args = parser.parse_args()

    keeps = tuple(float(k) for k in args.keep.split(","))
    selects, layers = parse_selectors(args.select), parse_probe_layers(args.layers)
    pipe = Pipeline.load(dtype=args.dtype)
    target, tokenizer = pipe.target.native("evidence check"), pipe.target.tokenizer
    kept = {(s, k): [] for s in selects for k in keeps}
    for prompt in load_suite(args.suite, args.limit):
        ids = pipe.target.encode_chat(prompt.text)
        protected = protected_tokens(tokenizer, ids[0].cpu(), pipe.target.chat_frame)
        for select in selects:  # score once, then select at every retention from the same scores
            config = PrefillConfig(keeps[0], args.chunk_size, select, layers=layers, stop_ids=pipe.target.stopword_ids)
            scored, _ = select_prompt(pipe.drafter.drafter, ids, protected, config, target)
            chunks = PromptChunks(ids, scored.protected, scored.chunk_starts, scored.chunk_ends)
            where = evidence_chunks(tokenizer, ids, chunks, prompt.evidence)
            for keep in keeps:
                selection = keep_best_chunks(chunks, scored.chunk_scores, keep)
                kept[select, keep].append(bool(where) and bool(selection.chunk_kept[where].any()))
        print(prompt.id, " ".join(f"{s}@{k:g}={int(kept[s, k][-1])}" for s in selects for k in keeps), flush=True)
    print(f"\n{'selector':<22}" + "".join(f" {'rho ' + format(k, 'g'):>8}" for k in keeps))
    for select in selects:
        print(f"{select:<22}" + "".join(f" {sum(kept[select, k]) / len(kept[select, k]):>8.2f}" for k in keeps))
    print(json.dumps({f"{s}@{k:g}": round(sum(v) / len(v), 4) for (s, k), v in kept.items()}))


if __name__ == "__main__":
    with torch.inference_mode():
        main()
