"""Where the sync engine's drafting pass spends its time, part by part, in its real call path.

Runs greedy sync decoding of the embedded target (bfloat16 by default) with its shipped drafter on
HumanEval prompts, verifying the whole block every round (so that the passes do not depend on
timing), and times each part of `DrafterSource.propose` (the body's layers, attention, MLP, the LM
head projection, the greedy softmax/max) in thread CPU time: time the process spends preempted by
other jobs does not count, so the shares are usable on a loaded machine (cache and memory-bandwidth
interference still count). Parts nest: a share is of the whole pass. `--out` writes every
proposal (tokens and confidences) and output, to compare two versions of the code bit for bit.

    OMP_NUM_THREADS=1 python scripts/drafter_pass_breakdown.py --prompts 3 --tokens 64
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

import torch
import torch.nn.functional as F

from d3d.evaluation.suites import load_suite
from d3d.inference import drafting
from d3d.inference.engine import GenerationConfig
from d3d.inference.pipeline import Pipeline, load_target
from d3d.models import attention, decoder
from d3d.models import drafter as drafter_module

PARTS = [  # (owner, attribute, label): indentation shows nesting
    (drafter_module.Drafter, "block_hidden", "  block_hidden (the body)"),
    (attention.Rows, "with_blocks", "    Rows.with_blocks"),
    (decoder.DecoderModel, "rope", "    rope"),
    (decoder.PassContext, "__init__", "    masks (PassContext)"),
    (decoder.DecoderLayer, "forward", "    layers"),
    (decoder.Attention, "forward", "      attention"),
    (decoder.PassContext, "keys_values", "        cache write + key/value view"),
    (F, "scaled_dot_product_attention", "        sdpa"),
    (decoder.MLP, "forward", "      mlp"),
    (decoder.RMSNorm, "forward", "      rmsnorms (final norm included)"),
    (drafter_module.Drafter, "project", "  project (LM head)"),
    (drafter_module.Drafter, "_scatter_vocab", "    scatter to the whole vocabulary"),
    (drafter_module.Drafter, "most_likely", "  softmax + max (most_likely)"),
]
TOTAL = "propose (total)"


class PartTimer:
    """Thread CPU time per labelled function, counted only inside a drafting pass."""

    def __init__(self) -> None:
        self.ns: dict[str, int] = defaultdict(int)
        self.calls: dict[str, int] = defaultdict(int)
        self.inside = False

    def wrap(self, owner: object, attribute: str, label: str, outermost: bool = False) -> None:
        function = getattr(owner, attribute)

        def timed(*args, **kwargs):
            if not (self.inside or outermost):
                return function(*args, **kwargs)
            self.inside = True
            start = time.thread_time_ns()
            try:
                return function(*args, **kwargs)
            finally:
                self.ns[label] += time.thread_time_ns() - start
                self.calls[label] += 1
                self.inside = self.inside and not outermost

        setattr(owner, attribute, timed)

    def clear(self) -> None:
        self.ns.clear()
        self.calls.clear()

    def report(self) -> str:
        passes, total = self.calls[TOTAL], self.ns[TOTAL]
        lines = [f"{passes} drafting passes, {total / passes / 1e6:.2f} ms CPU each (shares of the pass below)"]
        for label in [TOTAL] + [label for _, _, label in PARTS if label in self.ns]:
            ns = self.ns[label]
            lines.append(f"{label:40s} {ns / passes / 1e6:7.3f} ms {100 * ns / total:5.1f}%  "
                         f"calls/pass {self.calls[label] / passes:5.1f}")
        return "\n".join(lines)


def record_proposals(proposals: list) -> None:
    """Keep every greedy proposal (tokens, confidences) that `DrafterSource.propose` returns."""
    propose = drafting.DrafterSource.propose

    def recorded(self, committed, num_tokens):
        draft = propose(self, committed, num_tokens)
        proposals.append((draft.tokens.tolist(), None if draft.confidence is None else draft.confidence.tolist()))
        return draft

    drafting.DrafterSource.propose = recorded


def decode_all(pipe: Pipeline, texts: list[str], cfg: GenerationConfig) -> list[list[int]]:
    return [pipe.generate(pipe.target.encode_chat(text), "sync", cfg)[0] for text in texts]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=3, help="HumanEval prompts (the first N)")
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per prompt")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--out", help="write the proposals and outputs here (JSON)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    pipe = Pipeline(load_target(None, "cpu", args.dtype))
    pipe.draft_length = pipe.drafter.drafter.block_size  # verify the whole block: passes independent of timing
    texts = [p.text for p in load_suite("humaneval", args.prompts)]
    cfg = GenerationConfig(max_new_tokens=args.tokens)
    timer = PartTimer()
    timer.wrap(drafting.DrafterSource, "propose", TOTAL, outermost=True)
    for owner, attribute, label in PARTS:
        timer.wrap(owner, attribute, label)
    proposals: list = []
    record_proposals(proposals)  # outside the timed pass
    decode_all(pipe, texts, cfg)  # warm-up
    timer.clear()
    proposals.clear()
    outputs = decode_all(pipe, texts, cfg)
    print(timer.report())
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"outputs": outputs, "proposals": proposals}, handle)


if __name__ == "__main__":
    main()
