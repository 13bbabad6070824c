"""Where a drafting pass spends its time: the whole pass against its vocabulary projection alone,
next to a target step and a B-token verification (embedded SmolLM2, 256 cached tokens, medians).

    OMP_NUM_THREADS=1 python scripts/drafter_pass_cost.py d3d/drafters/smollm2-135m-instruct
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from d3d.inference.pipeline import load_target
from d3d.models.attention import Rows
from d3d.models.drafter import Drafter


def median_ms(fn, repeats: int = 20) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


@torch.inference_mode()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("drafter", help="drafter directory")
    parser.add_argument("--context", type=int, default=256)
    args = parser.parse_args()
    target = load_target(None, "cpu")
    model = target.model
    drafter = Drafter.from_pretrained(args.drafter, target=model)
    ids = torch.randint(100, 1000, (1, args.context))
    bs = drafter.block_size
    cache = drafter.new_cache()
    drafter.model(Rows.clean(ids, 0), cache)
    length = cache.length

    def draft() -> None:
        cache.crop(length)
        drafter.block_logits(cache, ids[:, :0], ids[0, -1:], torch.tensor([length - 1]))

    hidden = torch.randn(bs - 1, model.spec.hidden_size)
    tcache = model.new_cache()
    model(Rows.clean(ids, 0), tcache)
    tlen = tcache.length

    def target_pass(n: int):
        def run() -> None:
            tcache.crop(tlen)
            model(Rows.clean(ids[:, :n], tlen), tcache)
        return run

    vocab = drafter.config.draft_vocab_size or "full"
    rows = {
        f"drafter pass ({len(drafter.config.layers)} layers, vocab {vocab})": median_ms(draft),
        f"its vocabulary projection alone ({bs - 1} rows)": median_ms(lambda: drafter.project(hidden)),
        "target 1-token step": median_ms(target_pass(1)),
        f"target {bs}-token verification": median_ms(target_pass(bs)),
    }
    for name, ms in rows.items():
        print(f"{name:48s} {ms:8.2f} ms")


if __name__ == "__main__":
    main()
