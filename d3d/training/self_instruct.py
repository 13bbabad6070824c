"""Self-instruct prompts (Magpie): the instruct target completes its own chat template's user-turn prefix.

Every sample and its verdict (kept, duplicate, unfinished, degenerate) go to a JSONL journal, so a
rerun resumes without sampling again. This module knows nothing about answering the prompts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from d3d.errors import D3DError
from d3d.inference.pipeline import Target
from d3d.inference.sampling import SamplingConfig
from d3d.training.data_journal import append_rows, log, read_journal
from d3d.training.decontamination import normalize_text
from d3d.training.generation import generate_batch, pad_token_id, row_seed
from d3d.training.prompts import LoadedPrompts, PromptRecord

PLACEHOLDER = "D3DUSERTURNPLACEHOLDER"  # stands for a user message when cutting the chat template


@dataclass(frozen=True)
class SelfInstructConfig:
    """How the target writes user turns, and which of them are kept."""

    temperature: float = 1.0  # Magpie samples user turns at temperature 1
    top_p: float = 0.95  # trims the far tail of the distribution
    max_new_tokens: int = 80  # a user turn not finished within this budget is dropped
    attempts_per_prompt: int = 4  # give up after count * this many samples
    min_chars: int = 16  # shorter text is degenerate
    min_words: int = 3  # fewer words is degenerate
    min_alpha_fraction: float = 0.5  # letters among the non-space characters, at least
    repeat_ngram: int = 3  # word n-gram size of the repetition check
    max_repeats: int = 2  # an n-gram occurring more often than this is a loop

    @property
    def sampling(self) -> SamplingConfig:
        return SamplingConfig(temperature=self.temperature, top_p=self.top_p)


def user_turn_template(tokenizer) -> tuple[str, str]:
    """The chat template's text before and after a user message: the Magpie prefix, the turn end.

    For SmolLM2 the prefix is its default system turn followed by `<|im_start|>user\\n`.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise D3DError("self-instruct needs a chat template, and the target's tokenizer has none")
    rendered = tokenizer.apply_chat_template([{"role": "user", "content": PLACEHOLDER}], tokenize=False)
    if not isinstance(rendered, str) or rendered.count(PLACEHOLDER) != 1:
        raise D3DError("cannot locate the user message in the target's rendered chat template")
    before, after = rendered.split(PLACEHOLDER)
    return before, after


def turn_end_ids(tokenizer, after: str, eos_ids: Iterable[int]) -> frozenset[int]:
    """Tokens that end a user turn: the special token opening `after` (e.g. `<|im_end|>`), and eos."""
    ids = tokenizer(after, add_special_tokens=False)["input_ids"]
    special = set(tokenizer.all_special_ids) | {int(i) for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    return frozenset(ids[:1] if ids and ids[0] in special else []) | frozenset(eos_ids)


def degenerate_reason(text: str, cfg: SelfInstructConfig = SelfInstructConfig()) -> str | None:
    """Why a generated user turn is unusable, or None if it is fine."""
    stripped = text.strip()
    words = stripped.lower().split()
    visible = [c for c in stripped if not c.isspace()]
    if not stripped:
        return "empty"
    if len(stripped) < cfg.min_chars or len(words) < cfg.min_words:
        return "too short"
    if sum(c.isalpha() for c in visible) < cfg.min_alpha_fraction * len(visible):
        return "mostly non-alphabetic"
    grams = Counter(zip(*(words[i:] for i in range(cfg.repeat_ngram))))
    if grams and max(grams.values()) > cfg.max_repeats:
        return "repeated n-grams"
    return None


def self_instruct_prompts(
    target: Target,
    count: int,
    batch_size: int = 8,
    seed: int = 0,
    journal: Path | None = None,
    cfg: SelfInstructConfig = SelfInstructConfig(),
    progress: bool = True,
) -> LoadedPrompts:
    """`count` user turns written by the instruct target itself, deduplicated and filtered.

    Sample k is seeded from (seed, k); every sample and its verdict is appended to `journal`, so
    a rerun continues after the last recorded sample. Stops after count * attempts_per_prompt.
    """
    model = target.native("self-instruct")
    before, after = user_turn_template(target.tokenizer)
    prefix = target.tokenizer(before, add_special_tokens=False)["input_ids"]
    stops = turn_end_ids(target.tokenizer, after, target.eos_token_ids)
    samples = read_journal(journal) if journal is not None else []
    kept = [s for s in samples if s["reason"] is None]
    seen, tries = {normalize_text(s["prompt"]) for s in kept}, count * cfg.attempts_per_prompt
    bar = tqdm(total=count, initial=min(len(kept), count), desc="self-instruct", unit="prompt", disable=not progress)
    while len(kept) < count and len(samples) < tries:
        attempts = range(len(samples), min(len(samples) + batch_size, tries))
        seeds = [row_seed(seed, f"self-instruct:{a}") for a in attempts]
        outs = generate_batch(model, [prefix] * len(attempts), cfg.max_new_tokens, cfg.sampling, stops, seeds,
                              pad_token_id(target.tokenizer))
        batch = [_screen_user_turn(seed, a, target.decode(o.tokens).strip(), o.finish_reason, seen, cfg)
                 for a, o in zip(attempts, outs)]
        if journal is not None:
            append_rows(journal, batch)
        samples += batch
        kept += [s for s in batch if s["reason"] is None]
        bar.update(min(count, len(kept)) - bar.n)
    bar.close()
    _log_self_instruct(samples, kept, count)
    return LoadedPrompts([PromptRecord(s["id"], s["prompt"], "self-instruct") for s in kept[:count]])


def _screen_user_turn(seed: int, attempt: int, text: str, finish: str, seen: set[str],
                      cfg: SelfInstructConfig) -> dict:
    """One journal row; its id names the seed, so shards drawn with two seeds never share an id."""
    reason = "unfinished" if finish != "eos" else degenerate_reason(text, cfg)
    if reason is None and normalize_text(text) in seen:
        reason = "duplicate"
    if reason is None:
        seen.add(normalize_text(text))
    return {"id": f"self-instruct-s{seed}-{attempt}", "attempt": attempt, "prompt": text, "reason": reason}


def _log_self_instruct(samples: list[dict], kept: list[dict], count: int) -> None:
    reasons = Counter(s["reason"] for s in samples if s["reason"])
    dropped = ", ".join(f"{k} {n}" for k, n in reasons.most_common()) or "none"
    log(f"self-instruct: kept {min(len(kept), count)} of {count} wanted from {len(samples)} samples (dropped: {dropped})")
