"""`d3d draft-vocab`: give a drafter a frequency-ranked drafting vocabulary (FR-Spec style).

On a small target the drafter's vocabulary projection dominates a drafting pass (SmolLM2-135M:
15 rows x 49,152 tokens x 576 is about 60% of the pass on a CPU). Restricting what the drafter may
propose to the N tokens the target writes most often in the training data cuts that projection by
49,152 / N, and costs acceptance only where the target writes a token outside the N (the
coverage, reported). Decoding stays lossless: the target verifies every token (`Drafter.set_draft_vocab`).

The vocabulary is counted over the response tokens of `d3d data` files (what the target itself
wrote), plus the target's end-of-sequence ids; ties are broken by the lower id. When the data
holds fewer distinct tokens than asked for, the rest are the lowest ids not seen (BPE vocabularies
are roughly ordered by merge frequency, so low ids are common tokens). The result is a
copy of the drafter whose weights file also holds the sorted ids (`draft_vocab_ids`).

With `--extend` the drafter keeps the vocabulary it has (the rows it was trained to propose) and gains
the most frequent tokens it lacks, up to `--size`: a vocabulary chosen on early data can grow as the
data does, without dropping a token the drafter already proposes.

    d3d draft-vocab --drafter runs/prune/drafter --data data/smollm2/train.jsonl --size 8192 --out shipped/
    d3d draft-vocab --drafter shipped/ --data runs/data/*.jsonl --size 12288 --extend --out wider/
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import save_file

from d3d.errors import D3DError
from d3d.models.drafter import CONFIG_NAME, DRAFT_VOCAB_KEY, WEIGHTS_NAME, read_drafter_config
from d3d.models.weight_storage import read_tensors
from d3d.training.packing import load_examples


def response_token_counts(paths: Sequence[str], vocab_size: int) -> Counter:
    """How often each token appears in the responses of the data files."""
    examples, report = load_examples(list(paths), vocab_size, max_length=1 << 30)
    if not examples:
        raise D3DError(f"no usable rows in {', '.join(paths)} ({report.summary()})")
    counts: Counter = Counter()
    for example in examples:
        counts.update(example.response_ids.tolist())
    return counts


def frequent_tokens(counts: Counter, size: int, always: Sequence[int] = (), vocab_size: int = 0) -> list[int]:
    """The `size` most frequent tokens (ties: lower id first), filled up to `size` with the lowest
    unseen ids below `vocab_size`, plus `always`; sorted."""
    if size < 1:
        raise D3DError(f"draft vocabulary size must be at least 1, got {size}")
    chosen = set(sorted(counts, key=lambda t: (-counts[t], t))[:size])
    for token in range(vocab_size):
        if len(chosen) >= size:
            break
        chosen.add(token)
    return sorted(chosen | set(always))


def extended_tokens(existing: Sequence[int], counts: Counter, size: int, always: Sequence[int] = (),
                    vocab_size: int = 0) -> list[int]:
    """`existing` plus the most frequent tokens it lacks (ties: lower id first), up to `size` tokens,
    filled with the lowest unseen ids below `vocab_size`, plus `always`; sorted."""
    have = set(existing)
    if size < len(have):
        raise D3DError(f"--extend keeps the drafter's {len(have)} tokens, so --size must be at least {len(have)}, got {size}")
    extra = Counter({t: n for t, n in counts.items() if t not in have})
    added = frequent_tokens(extra, size - len(have), vocab_size=0) if size > len(have) else []
    chosen = have | set(added)
    for token in range(vocab_size):
        if len(chosen) >= size:
            break
        chosen.add(token)
    return sorted(chosen | set(always))


def write_draft_vocab(
    drafter: str | Path, out: str | Path, data: Sequence[str], size: int, always: Sequence[int] = (),
    extend: bool = False,
) -> dict:
    """Copy `drafter` to `out` with a drafting vocabulary of `size` tokens (with `extend`, its own
    vocabulary plus the most frequent tokens it lacks); returns what was recorded."""
    drafter, out = Path(drafter), Path(out)
    config, _ = read_drafter_config(drafter)
    if out.resolve() == drafter.resolve():
        raise D3DError("--out must differ from --drafter (the input drafter is never modified)")
    counts = response_token_counts(data, config.vocab_size)
    weights, metadata = read_tensors(drafter / WEIGHTS_NAME)  # as stored (int8 storage stays int8)
    before = weights.get(DRAFT_VOCAB_KEY)
    if extend and before is None:
        raise D3DError(f"--extend needs a drafter with a drafting vocabulary; {drafter} proposes every token already")
    if extend:
        ids = extended_tokens(before.tolist(), counts, size, always, config.vocab_size)
    else:
        ids = frequent_tokens(counts, size, always, config.vocab_size)
    covered = sum(counts[t] for t in ids) / sum(counts.values())
    weights[DRAFT_VOCAB_KEY] = torch.tensor(ids, dtype=torch.long)
    meta = json.loads((drafter / CONFIG_NAME).read_text())
    record = {"size": len(ids), "data": list(data), "coverage": round(covered, 4), "distinct_in_data": len(counts)}
    if extend:
        record["extended_from"] = int(before.numel())
        record["coverage_before"] = round(sum(counts[t] for t in before.tolist()) / sum(counts.values()), 4)
    meta["drafter"]["draft_vocab_size"] = len(ids)
    meta["drafter"]["draft_vocab"] = record
    partial = out.parent / f".{out.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    save_file(weights, str(partial / WEIGHTS_NAME), metadata={"format": "pt", **metadata})
    (partial / CONFIG_NAME).write_text(json.dumps(meta, indent=2) + "\n")
    if out.exists():
        shutil.rmtree(out)
    partial.rename(out)
    return record
