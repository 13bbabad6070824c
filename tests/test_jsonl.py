"""The one resumable JSONL format (`d3d.jsonl`): a torn last line is repaired, damage elsewhere is a D3DError,
and every log that resumes (training, pruning, the results page's reader) reads through it."""

from __future__ import annotations

import json

import pytest

from d3d.errors import D3DError
from d3d.jsonl import JsonlFile, read_records


def write(path, text: str):
    path.write_bytes(text.encode())
    return path


@pytest.mark.parametrize("tail,kept,after", [
    ('{"a": 3', [1, 2], '{"a": 1}\n{"a": 2}\n'),  # cut mid-record: dropped
    ('{"a": 3}', [1, 2, 3], '{"a": 1}\n{"a": 2}\n{"a": 3}\n'),  # complete but for its newline: kept
    ('{"a": 3\n', [1, 2], '{"a": 1}\n{"a": 2}\n'),  # a bad last line ending in a newline: dropped
    ('', [1, 2], '{"a": 1}\n{"a": 2}\n'),
])
def test_a_torn_last_line_is_repaired(tmp_path, tail, kept, after):
    path = write(tmp_path / "log.jsonl", '{"a": 1}\n{"a": 2}\n' + tail)
    assert [r["a"] for r in read_records(path)] == kept  # the read-only reader skips it too
    log = JsonlFile(path)
    assert [r["a"] for r in log.read()] == kept
    assert path.read_text() == after and log.repaired == bool(tail)
    log.append({"a": 9})
    assert [r["a"] for r in JsonlFile(path).read()] == kept + [9]


def test_damage_before_the_last_line_is_a_one_line_error(tmp_path):
    path = write(tmp_path / "log.jsonl", '{"a": 1}\nnot json\n{"a": 2}\n')
    with pytest.raises(D3DError, match="line 2"):
        JsonlFile(path, what="pruning log").read()


def test_rewrite_and_missing_file(tmp_path):
    log = JsonlFile(tmp_path / "sub" / "log.jsonl")
    assert log.read() == []
    log.rewrite([{"x": 1}, {"x": 2}])
    assert json.loads((tmp_path / "sub" / "log.jsonl").read_text().splitlines()[1]) == {"x": 2}


def test_prune_log_and_results_reader_survive_a_torn_line(tmp_path):
    from d3d.evaluation.results_optional import read_prune_log
    from d3d.training.prune import PruneLog

    stage = {"kind": "stage", "stage": 1, "layers": [0, 1]}
    path = write(tmp_path / "log.jsonl", json.dumps(stage) + '\n{"kind": "stage", "stage": 2, "lay')
    assert read_prune_log(path) == [stage]
    log = PruneLog(path)  # resuming `d3d prune` (a raw JSONDecodeError before)
    assert log.records == [stage]
    log.write({"kind": "stage", "stage": 2})
    assert [r["stage"] for r in PruneLog(path).records] == [1, 2]
