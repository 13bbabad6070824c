"""Prompt sources of `d3d data`: JSONL files of prompts and Hugging Face datasets (name or local path).

A source yields `PromptRecord`s (id, user text, source name) and counts the rows it could not use.
Self-instruct prompts (the target writing user turns itself) live in `self_instruct.py`.
This module knows nothing about models, generation or output files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from d3d.errors import D3DError
from d3d.models import hub
from d3d.training.data_journal import log

DATA_FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet", ".txt": "text"}


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
