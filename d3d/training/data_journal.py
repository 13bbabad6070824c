"""The output side of `d3d data`: durable appends, resume, Parquet, and the settings file beside the rows.

Finished rows are appended to a JSONL journal (`d3d.jsonl.JsonlFile`, fsynced after every batch):
the output itself for a JSONL output, `<out>.journal.jsonl` for a Parquet output, merged into the
Parquet file when the run ends (a temporary file, then one rename). A rerun skips the prompt ids
already written; a torn last line is cut off and its prompt answered again. `<stem>.meta.json`
records how the responses were produced, and resuming with other settings is refused.

This module knows nothing about prompts, models or generation.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from d3d.errors import D3DError
from d3d.jsonl import JsonlFile

SETTINGS_KEYS = ("target_dir", "tokenizer_fingerprint", "responses", "sampling", "max_new_tokens", "seed", "dtype")


def log(message: str) -> None:
    print(f"[d3d] {message}", file=sys.stderr, flush=True)


def read_journal(path: Path) -> list[dict]:
    """The rows of a JSONL journal written by d3d (a torn last line is cut off, and said so)."""
    journal = JsonlFile(path, durable=True, what="data file")
    rows = journal.read()
    if journal.repaired:
        log(f"{path}: repaired a torn last line (an interrupted write); a lost row will be answered again")
    return rows


def append_rows(path: Path, rows: list[dict]) -> None:
    """Append rows and make them durable (flush + fsync) before returning."""
    JsonlFile(path, durable=True, what="data file").append(*rows)


def meta_path(out: Path) -> Path:
    """`<stem>.meta.json` next to the output: how its responses were produced."""
    return out.with_name(out.stem + ".meta.json")


def self_instruct_journal(out: Path) -> Path:
    return out.with_name(out.stem + ".self-instruct.jsonl")


def read_rows(path: Path) -> list[dict]:
    """Every row of a `d3d data` output, JSONL or Parquet."""
    if not path.is_file():
        raise D3DError(f"data file not found: {path}")
    if path.suffix.lower() != ".parquet":
        return read_journal(path)
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def _row_schema(top_k: bool = False):
    import pyarrow as pa

    ids = pa.list_(pa.int32())
    fields = [("id", pa.string()), ("source", pa.string()), ("prompt", pa.string()), ("prompt_ids", ids),
              ("response", pa.string()), ("response_ids", ids), ("finish_reason", pa.string())]
    if top_k:
        fields += [("topk_ids", pa.list_(ids)), ("topk_logprobs", pa.list_(pa.list_(pa.float32())))]
    return pa.schema(fields)


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
        self.done_ids = {row["id"] for row in self._journal_rows()} | self._parquet_ids()

    def _journal_rows(self) -> list[dict]:
        rows = read_journal(self.journal) if self.journal.is_file() else []
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
            append_rows(self.journal, rows)
            self.done_ids.update(row["id"] for row in rows)

    def finish(self) -> int:
        """Merge the journal into the Parquet output (if any); the number of rows in the output."""
        if not self.parquet:
            return len(self._journal_rows()) if self.journal.is_file() else 0
        import pyarrow as pa
        import pyarrow.parquet as pq

        have = self._parquet_ids()
        fresh = [r for r in self._journal_rows() if r["id"] not in have]  # a crash may follow the rename
        top_k = any("topk_ids" in r for r in fresh) or (
            self.out.is_file() and "topk_ids" in pq.read_schema(self.out).names)
        schema = _row_schema(top_k)
        earlier = [pq.read_table(self.out).cast(schema)] if self.out.is_file() else []
        merged = pa.concat_tables(earlier + [pa.Table.from_pylist(fresh, schema=schema)])
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
    if bool(old.get("eval_only")) != bool(meta.get("eval_only")):  # older metas lack the key: not eval-only
        raise D3DError(f"the output was made {'with' if old.get('eval_only') else 'without'} --eval-only; "
                       f"the same flag must resume it (use another --out for the other kind)")
    for key in SETTINGS_KEYS:
        if old.get(key) != meta.get(key):
            raise D3DError(
                f"the output was made with different settings ({key}: {old.get(key)} -> {meta.get(key)}); "
                f"use another --out, or delete {path} to mix them"
            )
    sources = old.get("sources", []) + [s for s in meta["sources"] if s not in old.get("sources", [])]
    return meta | {"sources": sources, "created": old.get("created", meta["created"])}
