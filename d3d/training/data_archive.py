"""A compact, lossless archive of a `d3d data` JSONL file, small enough to commit.

Generated data takes hours of CPU to make and lives in git-ignored run folders; this archive keeps it
beyond one machine. Token ids are stored as uint16 (when the vocabulary fits), the top-k
log-probabilities (3 decimals in the JSONL) as int16 thousandths, the texts and the other fields as
JSON, and the whole as one xz (LZMA) stream of a NumPy `.npz`. `unpack` writes the rows back
exactly as they were (same keys, same values, same order, the same bytes: a log-probability that
rounded to -0.0 stays -0.0); a log-probability below -32.767 (never seen in practice) is clamped there
and counted when packing.

    python -m d3d.training.data_archive pack runs/data/mix.jsonl data/smollm2/mix.npz.xz
    python -m d3d.training.data_archive unpack data/smollm2/mix.npz.xz runs/data/mix.jsonl

A file that keeps growing (a resumed `d3d data` run) is committed in parts, so that a part already in
git history never changes: `pack --start N` archives the rows from row N on, and `unpack` takes the
parts in order and writes them back as one file.

    python -m d3d.training.data_archive pack runs/data/mix_bf16.jsonl data/smollm2/mix_bf16.part2.npz.xz --start 4128
    python -m d3d.training.data_archive unpack data/smollm2/mix_bf16.npz.xz data/smollm2/mix_bf16.part2.npz.xz runs/data/mix_bf16.jsonl

It knows the row layout of `d3d data` and nothing about models or training.
"""

from __future__ import annotations

import argparse
import io
import json
import lzma
import sys
from pathlib import Path

import numpy as np

from d3d.errors import D3DError
from d3d.training.data_journal import read_rows

ID_FIELDS = ("prompt_ids", "response_ids")  # flat token lists, concatenated with offsets
TOPK_FIELDS = ("topk_ids", "topk_logprobs")  # [T][k] per row, stored as [sum T, k]
LOGPROB_SCALE = 1000  # thousandths: the JSONL keeps 3 decimals
LOGPROB_FLOOR = -32767 / LOGPROB_SCALE
NEG_ZERO = "topk_logprobs_neg_zero"  # flat indices of the log-probabilities written as -0.0


def _ids_dtype(rows: list[dict]) -> type:
    top = max((max(r[f], default=0) for r in rows for f in ID_FIELDS), default=0)
    top = max(top, max((max((max(p) for p in r.get("topk_ids") or [[0]]), default=0) for r in rows), default=0))
    return np.uint16 if top < 2**16 else np.int32


def pack_rows(rows: list[dict]) -> tuple[dict[str, np.ndarray], int]:
    """The archive's arrays for `rows`, and how many log-probabilities were clamped."""
    if not rows:
        raise D3DError("nothing to pack: the data file holds no rows")
    dtype = _ids_dtype(rows)
    arrays: dict[str, np.ndarray] = {}
    for field in ID_FIELDS:
        arrays[field] = np.asarray([t for r in rows for t in r[field]], dtype=dtype)
        arrays[field + "_len"] = np.asarray([len(r[field]) for r in rows], dtype=np.int32)
    with_topk = [r for r in rows if "topk_ids" in r]
    clamped = 0
    if with_topk:
        if len(with_topk) != len(rows):
            raise D3DError("some rows have top-k log-probabilities and some do not: pack them separately")
        arrays["topk_ids"] = np.asarray([p for r in rows for p in r["topk_ids"]], dtype=dtype)
        logprobs = np.asarray([p for r in rows for p in r["topk_logprobs"]], dtype=np.float64)
        clamped = int((logprobs < LOGPROB_FLOOR).sum())
        arrays["topk_logprobs"] = np.round(np.maximum(logprobs, LOGPROB_FLOOR) * LOGPROB_SCALE).astype(np.int16)
        # a tiny negative log-probability rounds to -0.0 in the JSONL; int16 has no sign for zero
        arrays[NEG_ZERO] = np.flatnonzero((logprobs == 0) & np.signbit(logprobs)).astype(np.int64)
    rest = [{k: v for k, v in r.items() if k not in ID_FIELDS + TOPK_FIELDS} for r in rows]
    order = [list(r.keys()) for r in rows]
    arrays["rest"] = np.frombuffer(json.dumps({"rows": rest, "keys": order}).encode(), dtype=np.uint8)
    return arrays, clamped


def unpack_arrays(arrays: dict[str, np.ndarray]) -> list[dict]:
    """The rows back from `pack_rows`' arrays, keys in their original order."""
    meta = json.loads(arrays["rest"].tobytes().decode())
    fields: dict[str, list] = {}
    for field in ID_FIELDS:
        ends = np.cumsum(arrays[field + "_len"])
        fields[field] = [chunk.tolist() for chunk in np.split(arrays[field], ends[:-1])]
    if "topk_ids" in arrays:
        ends = np.cumsum(arrays["response_ids_len"])[:-1]
        fields["topk_ids"] = [c.tolist() for c in np.split(arrays["topk_ids"], ends)]
        flat = np.round(arrays["topk_logprobs"].astype(np.float64) / LOGPROB_SCALE, 3)
        if NEG_ZERO in arrays:  # absent from archives packed before it was kept: there -0.0 comes back as 0.0
            flat.reshape(-1)[arrays[NEG_ZERO]] = -0.0
        fields["topk_logprobs"] = [c.tolist() for c in np.split(flat, ends)]
    rows = []
    for i, (rest, keys) in enumerate(zip(meta["rows"], meta["keys"])):
        values = rest | {f: fields[f][i] for f in fields}
        rows.append({k: values[k] for k in keys})
    return rows


def pack(source: Path, archive: Path, start: int = 0) -> dict:
    """Write the archive of a `d3d data` file's rows from row `start` on (0: all of them); a small
    report (rows, first row, tokens, bytes, clamped)."""
    rows = read_rows(source)
    if not 0 <= start < len(rows):
        raise D3DError(f"--start {start} is outside {source}'s {len(rows)} rows")
    rows = rows[start:]
    arrays, clamped = pack_rows(rows)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    archive.parent.mkdir(parents=True, exist_ok=True)
    staging = archive.with_name(f".{archive.name}.partial")
    staging.write_bytes(lzma.compress(buffer.getvalue(), preset=9 | lzma.PRESET_EXTREME))
    staging.replace(archive)
    return {"rows": len(rows), "start": start, "response_tokens": int(arrays["response_ids_len"].sum()),
            "bytes": archive.stat().st_size, "clamped_logprobs": clamped}


def read_archive(archive: Path) -> list[dict]:
    if not archive.is_file():
        raise D3DError(f"archive not found: {archive}")
    try:
        raw = lzma.decompress(archive.read_bytes())
        with np.load(io.BytesIO(raw)) as loaded:
            return unpack_arrays({k: loaded[k] for k in loaded.files})
    except (lzma.LZMAError, ValueError, KeyError) as err:
        raise D3DError(f"{archive} is not a d3d data archive ({err})") from None


def unpack(archives: Path | list[Path], out: Path) -> int:
    """Write the rows of one archive, or of several parts in order, as one JSONL file (refusing to
    overwrite); the number of rows. A row id in two parts is an error: the parts overlap."""
    if out.exists():
        raise D3DError(f"{out} exists; unpack into a new file")
    parts = [archives] if isinstance(archives, Path) else list(archives)
    rows, seen = [], set()
    for part in parts:
        part_rows = read_archive(part)
        ids = {r.get("id") for r in part_rows} - {None}
        if ids & seen:
            raise D3DError(f"{part} repeats rows of an earlier part (e.g. id {sorted(ids & seen)[0]!r}): the parts overlap")
        seen |= ids
        rows += part_rows
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f".{out.name}.partial")
    staging.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    staging.replace(out)
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="JSONL/Parquet from d3d data -> compact archive")
    p.add_argument("source", type=Path)
    p.add_argument("archive", type=Path)
    p.add_argument("--start", type=int, default=0, help="archive the rows from this row on (a later part)")
    u = sub.add_parser("unpack", help="compact archive(s) -> JSONL")
    u.add_argument("archives", type=Path, nargs="+", metavar="ARCHIVE", help="one archive, or its parts in order")
    u.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "pack":
            print(json.dumps(pack(args.source, args.archive, args.start)))
        else:
            print(f"{unpack(args.archives, args.out)} rows -> {args.out}")
    except D3DError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
