"""Tests for d3d.training.data_archive: the committed copy of generated data unpacks to the same rows."""

from __future__ import annotations

import json

import pytest

from d3d.errors import D3DError
from d3d.training import data_archive


def rows_with_topk(n: int = 5) -> list[dict]:
    rows = []
    for i in range(n):
        t = 3 + i
        rows.append({
            "id": f"r{i}", "source": "mix.jsonl", "prompt": f"question {i} \u00e9", "prompt_ids": list(range(i, i + 7)),
            "response": f"answer {i}", "response_ids": [49151 - j for j in range(t)], "finish_reason": "eos",
            "topk_ids": [[49151 - j, 5, 9] for j in range(t)],
            "topk_logprobs": [[round(-0.001 * j, 3) if j else (-0.0 if i % 2 else 0.0), -1.234, round(-7.5 - j, 3)] for j in range(t)],
        })
    return rows


def write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_pack_then_unpack_gives_back_the_same_rows_byte_for_byte(tmp_path):
    source = write(tmp_path / "d.jsonl", rows_with_topk())
    report = data_archive.pack(source, tmp_path / "d.npz.xz")
    assert report["rows"] == 5 and report["response_tokens"] == sum(range(3, 8)) and report["clamped_logprobs"] == 0
    assert data_archive.main(["unpack", str(tmp_path / "d.npz.xz"), str(tmp_path / "back.jsonl")]) == 0
    assert (tmp_path / "back.jsonl").read_bytes() == source.read_bytes()  # the format d3d data writes


def test_a_growing_file_is_committed_in_parts_that_unpack_to_the_whole(tmp_path):
    rows = rows_with_topk(6)
    first = write(tmp_path / "d.jsonl", rows[:4])
    data_archive.pack(first, tmp_path / "d.npz.xz")
    whole = write(tmp_path / "d.jsonl", rows)  # the run resumed and appended two rows
    report = data_archive.pack(whole, tmp_path / "d.part2.npz.xz", start=4)
    assert report["rows"] == 2 and report["start"] == 4
    parts = [str(tmp_path / "d.npz.xz"), str(tmp_path / "d.part2.npz.xz")]
    assert data_archive.main(["unpack", *parts, str(tmp_path / "back.jsonl")]) == 0
    assert (tmp_path / "back.jsonl").read_bytes() == whole.read_bytes()
    with pytest.raises(D3DError, match="overlap"):  # the same part twice
        data_archive.unpack([tmp_path / "d.npz.xz", tmp_path / "d.npz.xz"], tmp_path / "twice.jsonl")
    with pytest.raises(D3DError, match="outside"):
        data_archive.pack(whole, tmp_path / "none", start=6)


def test_rows_without_top_k_and_large_vocabularies_round_trip(tmp_path):
    rows = [{k: v for k, v in r.items() if not k.startswith("topk")} for r in rows_with_topk(3)]
    rows[1]["response_ids"] = [70000, 1]  # beyond uint16
    source = write(tmp_path / "d.jsonl", rows)
    data_archive.pack(source, tmp_path / "a")
    assert data_archive.read_archive(tmp_path / "a") == rows


def test_bad_input_is_one_clear_error(tmp_path, capsys):
    mixed = rows_with_topk(2)
    del mixed[0]["topk_ids"], mixed[0]["topk_logprobs"]
    with pytest.raises(D3DError, match="separately"):
        data_archive.pack_rows(mixed)
    (tmp_path / "junk").write_bytes(b"not an archive")
    with pytest.raises(D3DError, match="not a d3d data archive"):
        data_archive.read_archive(tmp_path / "junk")
    write(tmp_path / "exists.jsonl", [])
    assert data_archive.main(["unpack", str(tmp_path / "junk"), str(tmp_path / "exists.jsonl")]) == 2
    assert "exists" in capsys.readouterr().err
