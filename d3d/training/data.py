"""Training data for the drafter: prompts in, the target's own responses out (`d3d data`).

Job (DESIGN.md "Training"): collect prompts, keep held-out evaluation prompts out of them, answer
each with the target and write one row per prompt:

    id, source, prompt, prompt_ids, response, response_ids, finish_reason
    [topk_ids, topk_logprobs]   with --top-k-logits K: per response position, the target's K
               likeliest tokens and their log-probabilities (temperature 1, 3 decimals), for
               distillation; position i is the distribution response_ids[i] was chosen from

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
    eval only  `--eval-only` answers held-out evaluation prompts themselves (say, HumanEval in the
               bench's wording from `d3d bench --write-prompts`) for offline acceptance: nothing is
               held out, every row carries `"eval_only": true`, and training refuses such a file
               (`packing.load_examples`); `d3d eval-drafter` and dev sets read it
    settings   target, tokenizer fingerprint, sampling, budget and seed go to `<stem>.meta.json`
               next to the output; resuming with different settings is refused

Resume: finished rows are appended to a JSONL file (the output itself, or `<out>.journal.jsonl`
for a Parquet output) and fsynced after every batch. A rerun with the same `--out` skips the
prompt ids already written, so an interruption neither duplicates nor loses a row; a torn last
line is cut off. `kill` (SIGTERM) finishes and appends the batch in flight, then stops as Ctrl-C
does (a second SIGTERM stops at once); background jobs ignore SIGINT. A Parquet output is rewritten from its earlier rows plus the journal when the run
ends. `--skip-answered OTHER` leaves out the prompt ids another output already holds, so one prompt
file can be continued into a new output (another dtype, another machine) without answering a prompt
twice. Self-instruct keeps every sample and its verdict in `<stem>.self-instruct.jsonl` and resumes
from it the same way. Responses shorter than 2 tokens are counted and dropped (a rerun retries them).

Modules: `prompts.py` (prompt files and datasets), `self_instruct.py`, `decontamination.py`,
`generation.py` (batched generation on the native runtime), `endpoint.py` (OpenAI-compatible
servers), `data_journal.py` (durable output and settings), `rescore.py` (`--rescore`: top-k for rows
written without it). This one holds the settings and the run.

It does not know training (packing, anchors and losses live in `train*.py`), nor how the runtime
attends: it hands the model left-padded rows and reads logits.

    d3d data --out data/train.jsonl --prompts mine.jsonl --self-instruct 500
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from d3d import __version__
from d3d.errors import D3DError
from d3d.inference.pipeline import Target, load_target
from d3d.inference.sampling import SamplingConfig
from d3d.models import hub
from d3d.training.data_journal import (
    DataWriter, meta_path, read_rows, reconcile_meta, self_instruct_journal, write_json_atomic,
)
from d3d.training.decontamination import (
    NGRAM_WORDS, Decontaminator, check_decontaminated, held_out_prompts, normalize_text,
)
from d3d.training.endpoint import EndpointConfig, EndpointResponses
from d3d.training.generation import PendingPrompt, Response, ResponseSource, TargetResponses
from d3d.training.interrupts import StopRequest, sigterm_after_step
from d3d.training.prompts import PromptRecord, read_prompt_dataset, read_prompt_jsonl
from d3d.training.self_instruct import SelfInstructConfig, self_instruct_prompts

MIN_RESPONSE_TOKENS = 2  # a shorter response holds no training anchor (1 <= s < T)


DEFAULT_SAMPLING = SamplingConfig(temperature=0.7, top_p=0.9)  # when the target recommends none


OUTPUT_SUFFIXES = (".jsonl", ".parquet")


WINDOW_BATCHES = 16  # prompts are sorted by length within windows of this many batches


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
    skip_answered: tuple[Path, ...] = ()  # other `d3d data` outputs whose prompt ids are not answered again
    device: str | None = None  # cpu, cuda ... (default: cuda if available)
    dtype: str | None = None  # auto, bfloat16, float16, float32 (default: float32 on a CPU, bfloat16 on CUDA)
    top_k_logits: int = 0  # record the target's k likeliest tokens and log-probabilities per response position
    eval_only: bool = False  # answer held-out evaluation prompts: nothing held out, rows marked, training refuses them
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
        if not 0 <= self.top_k_logits <= 64:
            raise D3DError(f"--top-k-logits must be between 0 and 64, got {self.top_k_logits}")
        if self.top_k_logits and self.endpoint:
            raise D3DError("--top-k-logits needs the local target (an endpoint returns text, not logits)")
        if self.greedy and (self.temperature is not None or self.top_p is not None):
            raise D3DError("--greedy conflicts with --temperature/--top-p")
        if any(path.resolve() == self.out.resolve() for path in self.skip_answered):
            raise D3DError(f"--skip-answered names the output itself ({self.out}); a rerun resumes it anyway")
        if self.endpoint and not re.match(r"^https?://", self.endpoint):
            raise D3DError(f"--endpoint must be an http(s) URL, got {self.endpoint}")
        if self.eval_only and (self.exclude or self.self_instruct):
            raise D3DError("--eval-only answers evaluation prompts as given: it takes --prompts or --dataset, "
                           "not --exclude or --self-instruct")


@dataclass
class DataReport:
    """What one run did; every dropped prompt or response is counted under its reason."""

    prompts: int = 0  # usable prompts after deduplication, decontamination and --limit
    bad_rows: int = 0  # malformed input rows, skipped
    duplicates: int = 0  # prompts repeating an earlier id or normalised text
    contaminated: int = 0  # prompts overlapping a held-out evaluation prompt
    already_done: int = 0  # prompts answered by an earlier run
    answered_elsewhere: int = 0  # prompts already in a --skip-answered output
    too_long: int = 0  # prompts leaving no room for a response in the context
    short: int = 0  # responses under MIN_RESPONSE_TOKENS tokens, dropped
    contaminated_responses: int = 0  # responses overlapping a held-out prompt, dropped
    written: int = 0  # rows written by this run
    rows: int = 0  # rows in the output at the end
    tokens: int = 0  # response tokens produced by this run, kept or not
    seconds: float = 0.0  # wall clock of answering
    overlaps: int = -1  # output rows overlapping a held-out prompt (checked at the end; want 0)
    eval_only: bool = False  # --eval-only: nothing was held out; the rows are marked and never train

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict:
        return asdict(self) | {"seconds": round(self.seconds, 3), "tokens_per_s": round(self.tokens_per_s, 2)}


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
        return load_target(cfg.target, cfg.device, cfg.dtype)
    model_dir = hub.resolve_model_dir(cfg.target)
    tokenizer, why = hub.load_tokenizer(model_dir), "responses come from an endpoint"
    return Target(cfg.target or hub.DEFAULT_TARGET, model_dir, tokenizer, None, why, device=torch.device("cpu"))


def make_response_source(cfg: DataConfig, target: Target, sampling: SamplingConfig) -> ResponseSource:
    if cfg.endpoint:
        endpoint = EndpointConfig(cfg.endpoint, cfg.endpoint_model)
        return EndpointResponses(endpoint, target.tokenizer, sampling, cfg.max_new_tokens, cfg.seed)
    return TargetResponses(target, sampling, cfg.max_new_tokens, cfg.seed, cfg.top_k_logits)


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
        "decontamination": None if cfg.eval_only else {"held_out": ["humaneval", *map(str, cfg.exclude)],
                                                       "ngram_words": NGRAM_WORDS},
        "eval_only": cfg.eval_only,
        "skip_answered": [str(p) for p in cfg.skip_answered],
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


def answered_ids(outputs: tuple[Path, ...]) -> set[str]:
    """Prompt ids held by other `d3d data` outputs (`--skip-answered`), e.g. an earlier shard in another dtype."""
    ids: set[str] = set()
    for path in outputs:
        ids.update(str(row["id"]) for row in read_rows(path) if isinstance(row, dict) and "id" in row)
    return ids


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
    batch: list[PendingPrompt], answers: list[Response], held_out: Decontaminator, report: DataReport,
    eval_only: bool = False,
) -> list[dict]:
    """Output rows for the answers worth keeping; short or contaminated ones are counted. `eval_only` marks
    each row so that training refuses it."""
    rows = []
    for pending, answer in zip(batch, answers):
        if len(answer.ids) < MIN_RESPONSE_TOKENS:
            report.short += 1
        elif held_out.overlaps(answer.text):
            report.contaminated_responses += 1
        else:
            r = pending.record
            row = {"id": r.id, "source": r.source, "prompt": r.text, "prompt_ids": pending.ids,
                   "response": answer.text, "response_ids": answer.ids, "finish_reason": answer.finish_reason}
            if answer.topk_ids is not None:
                row |= {"topk_ids": answer.topk_ids, "topk_logprobs": answer.topk_logprobs}
            rows.append(row | ({"eval_only": True} if eval_only else {}))
    return rows


def answer_prompts(
    pending: list[PendingPrompt],
    responses: ResponseSource,
    writer: DataWriter,
    held_out: Decontaminator,
    cfg: DataConfig,
    report: DataReport,
    on_batch: Callable[[int], None] | None = None,
    stop: StopRequest | None = None,
) -> None:
    """Answer, screen and durably append batch after batch; `on_batch(i)` runs after batch i.

    A `stop` request (the first SIGTERM) is honoured between batches: the batch in flight is answered
    and appended first, then KeyboardInterrupt ends the run as Ctrl-C does."""
    bar = tqdm(total=len(pending), desc="d3d data", unit="row", disable=not cfg.progress)
    started = time.perf_counter()
    try:
        for index, batch in enumerate(length_sorted_batches(pending, cfg.batch_size)):
            answers = responses.respond(batch)
            rows = screen_rows(batch, answers, held_out, report, cfg.eval_only)
            writer.append(rows)
            report.written += len(rows)
            report.tokens += sum(len(a.ids) for a in answers)
            report.seconds = time.perf_counter() - started
            bar.update(len(batch))
            bar.set_postfix_str(f"{report.tokens_per_s:.1f} tokens/s")
            if on_batch is not None:
                on_batch(index)
            if stop is not None:
                stop.check()
    finally:
        bar.close()


def generate_dataset(
    cfg: DataConfig, target: Target | None = None, on_batch: Callable[[int], None] | None = None
) -> DataReport:
    """Run `d3d data` (see the module docstring); `target` skips loading, `on_batch` is for tests."""
    cfg.validate()
    report = DataReport(eval_only=cfg.eval_only)
    target = target or load_data_target(cfg)
    sampling, origin = resolve_sampling(cfg, target.model_dir)
    responses = make_response_source(cfg, target, sampling)
    writer = DataWriter(cfg.out)
    meta = reconcile_meta(meta_path(cfg.out), build_meta(cfg, target, responses, sampling, origin), bool(writer.done_ids))
    write_json_atomic(meta_path(cfg.out), meta)
    held_out = Decontaminator([] if cfg.eval_only else held_out_prompts(cfg.exclude))
    records = collect_prompts(cfg, target, held_out, report)
    elsewhere = answered_ids(cfg.skip_answered)
    fresh = [r for r in records if r.id not in elsewhere]
    report.answered_elsewhere = len(records) - len(fresh)
    todo = [r for r in fresh if r.id not in writer.done_ids]
    report.already_done = len(fresh) - len(todo)
    with sigterm_after_step() as stop:
        answer_prompts(encode_prompts(todo, target, report), responses, writer, held_out, cfg, report, on_batch, stop)
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
        f"resumed     {r.already_done} already in the output, {r.answered_elsewhere} in --skip-answered outputs",
        f"written     {r.written} rows (short responses dropped {r.short}, responses overlapping "
        f"held-out prompts {r.contaminated_responses}); {r.rows} rows in the output",
        f"throughput  {r.tokens} tokens in {r.seconds:.1f} s ({r.tokens_per_s:.1f} tokens/s)",
        "check       off (--eval-only: nothing held out; the rows are marked eval_only and never train)"
        if r.eval_only else f"check       {r.overlaps} overlaps with held-out prompts",
    ])
