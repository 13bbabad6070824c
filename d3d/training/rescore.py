"""Top-k log-probabilities for rows that were written without them (`d3d data --rescore`).

A `d3d data` output made without `--top-k-logits` holds the target's responses but not the
distributions they came from, which distillation needs (`topk_distill.py`). Regenerating would
cost hours; one teacher-forced pass of the same target over prompt_ids + response_ids gives them
for a fraction of that. Per row, position t of `topk_ids` / `topk_logprobs` ([T][K], temperature 1,
3 decimals, `generation.top_logprobs`) is the distribution that predicted `response_ids[t]`: exactly
the fields `d3d data --top-k-logits K` would have written, up to float rounding of a batched pass
versus a cached one. Every other field stays as it was, in its order; the two fields come last.

Rows are batched in input order, prompts left-padded so they end in one column (as generation lays
them out), responses after them and right-padded. Positions whose recorded token is not the pass's
argmax are counted (about 0 on greedy data from the same target and dtype; sampled data has many);
no row is dropped. The output is appended after every batch; a rerun checks that the rows already
there are the input's first rows, in order, and continues after them. `<out stem>.meta.json` is the
input's meta.json with `responses.top_k_logits` and a `rescored` entry.

    d3d data --rescore data/smollm2/train.jsonl --out runs/data/train_top8.jsonl --top-k-logits 8
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import Tensor
from tqdm import tqdm

from d3d.errors import D3DError
from d3d.inference.pipeline import Target, load_target
from d3d.jsonl import read_records
from d3d.models import hub
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel
from d3d.training.data_journal import DataWriter, log, meta_path, read_journal, read_rows, write_json_atomic
from d3d.training.generation import left_pad, pad_token_id, top_logprobs

MAX_TOP_K = 64  # as `d3d data --top-k-logits`
SUFFIXES = (".jsonl", ".parquet")
PARQUET_FIELDS = ("id", "source", "prompt", "prompt_ids", "response", "response_ids", "finish_reason")


@dataclass
class RescoreConfig:
    """One `d3d data --rescore` run."""

    source: Path  # rows without top-k (.jsonl or .parquet)
    out: Path  # the same rows with top-k (.jsonl or .parquet); resumed when it exists
    top_k: int  # K likeliest tokens per response position
    target: str | None = None  # hub id, local directory or .gguf (default: embedded SmolLM2)
    device: str | None = None  # cpu, cuda ... (default: cuda if available)
    dtype: str | None = None  # as `d3d data --dtype` (default: float32 on a CPU, bfloat16 on CUDA)
    batch_size: int = 8  # rows per forward pass
    progress: bool = True


@dataclass
class RescoreReport:
    rows: int = 0  # rows in the input (and in the output at the end)
    already_done: int = 0  # rows an earlier run had written
    written: int = 0  # rows written by this run
    tokens: int = 0  # response positions scored by this run
    mismatches: int = 0  # positions of the output whose recorded token is not the target's argmax
    mismatched_rows: int = 0  # output rows with at least one such position (earlier runs' rows: top-1 != token)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        rate = self.tokens / self.seconds if self.seconds else 0.0
        return asdict(self) | {"seconds": round(self.seconds, 3), "tokens_per_s": round(rate, 2)}


def check_config(cfg: RescoreConfig) -> None:
    """D3DError for a bad K, file name or batch size, before anything is read."""
    if not 1 <= cfg.top_k <= MAX_TOP_K:
        raise D3DError(f"--rescore needs --top-k-logits between 1 and {MAX_TOP_K}, got {cfg.top_k}")
    if cfg.batch_size < 1:
        raise D3DError(f"--batch-size must be at least 1, got {cfg.batch_size}")
    if not cfg.source.is_file():
        raise D3DError(f"data file to rescore not found: {cfg.source}")
    for path in (cfg.source, cfg.out):
        if path.suffix.lower() not in SUFFIXES:
            raise D3DError(f"{path} must end in .jsonl or .parquet")
    if cfg.out.resolve() == cfg.source.resolve():
        raise D3DError(f"--out must differ from the rescored file {cfg.source} (it is only read)")
    if meta_path(cfg.out).resolve() == meta_path(cfg.source).resolve():
        raise D3DError(f"--out {cfg.out} would overwrite {meta_path(cfg.source)}: give it another stem")


def read_source(path: Path) -> list[dict]:
    """The input rows, read without repairing anything (the input is never written)."""
    return read_records(path, "data file") if path.suffix.lower() == ".jsonl" else read_rows(path)


def _ids(value) -> bool:
    return isinstance(value, list) and len(value) > 0 and all(isinstance(i, int) for i in value)


def check_rows(rows: list[dict], vocab_size: int, context: int, parquet_out: bool) -> None:
    """D3DError unless every row has an id, prompt and response ids in the vocabulary, and no top-k."""
    if not rows:
        raise D3DError("the file to rescore holds no rows")
    for n, row in enumerate(rows, 1):
        name = f"row {n} ({row.get('id', 'no id')})"
        if "topk_ids" in row or "topk_logprobs" in row:
            raise D3DError(f"{name} already has top-k log-probabilities: nothing to rescore")
        if "id" not in row or not _ids(row.get("prompt_ids")) or not _ids(row.get("response_ids")):
            raise D3DError(f"{name} lacks an id, prompt_ids or response_ids: is it a file written by d3d data?")
        ids = row["prompt_ids"] + row["response_ids"]
        if min(ids) < 0 or max(ids) >= vocab_size:
            raise D3DError(f"{name} has token ids outside the target's vocabulary ({vocab_size})")
        if len(ids) - 1 > context:
            raise D3DError(f"{name} is longer than the target's context ({context} tokens)")
        extra = sorted(set(row) - set(PARQUET_FIELDS))
        if parquet_out and extra:
            raise D3DError(f"{name} has fields a Parquet output cannot keep ({extra}): write a .jsonl output")


def source_meta(cfg: RescoreConfig, target: Target) -> dict:
    """The input's meta.json ({} without one); D3DError when it names another tokenizer than the target's."""
    path = meta_path(cfg.source)
    if not path.is_file():
        log(f"no {path} beside the data: its tokenizer cannot be checked against the target's")
        return {}
    try:
        meta = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise D3DError(f"malformed {path}: {err}") from None
    recorded, ours = meta.get("tokenizer_fingerprint"), hub.tokenizer_fingerprint(target.tokenizer)
    if recorded and recorded != ours:
        raise D3DError(f"{cfg.source} was tokenized with another tokenizer ({recorded}) than the target's ({ours})")
    return meta


def output_meta(cfg: RescoreConfig, target: Target, meta: dict) -> dict:
    """The input's meta plus `responses.top_k_logits` and the `rescored` entry."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    rescored = {"source": str(cfg.source), "target": target.name, "target_dir": str(Path(target.model_dir).resolve()),
                "dtype": str(target.dtype).removeprefix("torch."), "top_k_logits": cfg.top_k, "date": now}
    responses = meta.get("responses") if isinstance(meta.get("responses"), dict) else {}
    fingerprint = {"tokenizer_fingerprint": hub.tokenizer_fingerprint(target.tokenizer)}
    return fingerprint | meta | {"responses": responses | {"top_k_logits": cfg.top_k}, "rescored": rescored,
                                 "format": cfg.out.suffix.lower().lstrip("."), "updated": now}


def done_rows(cfg: RescoreConfig, source: list[dict], meta: dict) -> tuple[int, int, int]:
    """(rows, argmax mismatches, rows with one) an earlier run wrote to `cfg.out`; D3DError unless those
    rows are the input's first rows, in order, rescored with these settings."""
    journal = cfg.out.with_name(cfg.out.name + ".journal.jsonl") if cfg.out.suffix.lower() == ".parquet" else cfg.out
    written = read_rows(cfg.out) if journal != cfg.out and cfg.out.is_file() else []
    written += read_journal(journal) if journal.is_file() else []
    if not written:
        return 0, 0, 0
    if [r.get("id") for r in written] != [r["id"] for r in source[: len(written)]]:
        raise D3DError(f"{cfg.out} holds rows that are not the first rows of {cfg.source} in order: use another --out")
    old = json.loads(meta_path(cfg.out).read_text()).get("rescored", {}) if meta_path(cfg.out).is_file() else {}
    for key in ("source", "target_dir", "dtype", "top_k_logits"):
        if old and old.get(key) != meta["rescored"][key]:
            raise D3DError(f"{cfg.out} was rescored with other settings ({key}: {old.get(key)} -> "
                           f"{meta['rescored'][key]}); use another --out")
    if any(not r.get("topk_ids") or len(r["topk_ids"][0]) != cfg.top_k for r in written):
        raise D3DError(f"{cfg.out} holds rows without a top-{cfg.top_k}: use another --out")
    wrong = [sum(top[0] != token for top, token in zip(r["topk_ids"], r["response_ids"])) for r in written]
    return len(written), sum(wrong), sum(w > 0 for w in wrong)


def batch_layout(rows: list[dict], pad_id: int, device: torch.device) -> tuple[Rows, int]:
    """Rows of one pass and the column of the last prompt token: prompts left-padded to end in one
    column (positions from 0 at each row's first real token), each response minus its last token
    after it, right-padded (the padding sits after every real token, so causality hides it)."""
    prompts = [r["prompt_ids"] for r in rows]
    ids, valid, start = left_pad(prompts, pad_id, device)
    width = max(len(r["response_ids"]) for r in rows) - 1
    tail = torch.full((len(rows), width), pad_id, dtype=torch.long, device=device)
    tail_valid = torch.zeros((len(rows), width), dtype=torch.bool, device=device)
    for i, row in enumerate(rows):
        fed = row["response_ids"][:-1]
        tail[i, : len(fed)] = torch.tensor(fed, dtype=torch.long)
        tail_valid[i, : len(fed)] = True
    full_valid = torch.cat([valid if valid is not None else torch.ones_like(ids, dtype=torch.bool), tail_valid], 1)
    padded = not bool(full_valid.all())
    return Rows.clean(torch.cat([ids, tail], 1), start, valid=full_valid if padded else None), ids.shape[1] - 1


@torch.inference_mode()
def score_batch(model: DecoderModel, rows: list[dict], k: int, pad_id: int) -> list[tuple[list[list[int]], list[list[float]], int]]:
    """(topk_ids [T][k], topk_logprobs [T][k], argmax mismatches) per row, by one teacher-forced pass."""
    passed, first = batch_layout(rows, pad_id, model.device)
    logits = model(passed, logits_from=first)  # [b, max T, V]; column t predicted response token t
    out = []
    for i, row in enumerate(rows):
        response = row["response_ids"]
        scores = logits[i, : len(response)]
        ids, logprobs = top_logprobs(scores, k)
        wrong = int((scores.argmax(-1).cpu() != torch.tensor(response)).sum())
        out.append((ids, logprobs, wrong))
    return out


def rescore(
    cfg: RescoreConfig, target: Target | None = None, on_batch: Callable[[int], None] | None = None
) -> RescoreReport:
    """Run `d3d data --rescore` (see the module docstring); `target` skips loading, `on_batch(i)` is for tests."""
    check_config(cfg)
    source = read_source(cfg.source)
    target = target or load_target(cfg.target, cfg.device, cfg.dtype)
    model = target.native("rescoring")
    check_rows(source, model.spec.vocab_size, target.context_length, cfg.out.suffix.lower() == ".parquet")
    if cfg.top_k > model.spec.vocab_size:
        raise D3DError(f"--top-k-logits {cfg.top_k} exceeds the vocabulary ({model.spec.vocab_size})")
    meta = output_meta(cfg, target, source_meta(cfg, target))
    report = RescoreReport(rows=len(source))
    report.already_done, report.mismatches, report.mismatched_rows = done_rows(cfg, source, meta)
    writer = DataWriter(cfg.out)
    write_json_atomic(meta_path(cfg.out), meta)
    pad = pad_token_id(target.tokenizer)
    bar = tqdm(total=len(source), initial=report.already_done, desc="d3d data --rescore", unit="row",
               disable=not cfg.progress)
    started = time.perf_counter()
    try:
        for index, lo in enumerate(range(report.already_done, len(source), cfg.batch_size)):
            batch = source[lo : lo + cfg.batch_size]
            scored = score_batch(model, batch, cfg.top_k, pad)
            writer.append([row | {"topk_ids": ids, "topk_logprobs": lps} for row, (ids, lps, _) in zip(batch, scored)])
            report.written += len(batch)
            report.tokens += sum(len(r["response_ids"]) for r in batch)
            report.mismatches += sum(w for _, _, w in scored)
            report.mismatched_rows += sum(w > 0 for _, _, w in scored)
            report.seconds = time.perf_counter() - started
            bar.update(len(batch))
            bar.set_postfix_str(f"{report.tokens / max(report.seconds, 1e-9):.1f} tokens/s")
            if on_batch is not None:
                on_batch(index)
    finally:
        bar.close()
    rows = writer.finish()
    meta["rescored"] |= {"argmax_mismatches": report.mismatches}
    write_json_atomic(meta_path(cfg.out), meta | {"rows": rows})
    return report


def format_report(report: RescoreReport) -> str:
    """A few readable lines; the CLI prints one JSON line after them."""
    r = report
    rate = r.tokens / r.seconds if r.seconds else 0.0
    return "\n".join([
        f"rescored    {r.written} rows this run ({r.already_done} already in the output); {r.rows} rows in all",
        f"throughput  {r.tokens} response tokens in {r.seconds:.1f} s ({rate:.1f} tokens/s)",
        f"check       {r.mismatches} positions in {r.mismatched_rows} rows where the recorded token is not "
        "the target's argmax (about 0 on greedy data from this target and dtype)",
    ])
