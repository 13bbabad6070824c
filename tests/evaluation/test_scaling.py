"""The scaling line (`scaling.py`): the least-squares fit of tau against log10(tokens seen)."""

from __future__ import annotations

import json
import math

import pytest

from d3d.errors import D3DError
from d3d.evaluation.scaling import DEFAULT_TABLE, ScalingPoint, fit_line, main, read_points

HEADER = "run,tokens_in_run,tokens_seen,humaneval_sync_tau,trained,how_measured\n"


def _write(tmp_path, rows: str):
    path = tmp_path / "scaling.csv"
    path.write_text(HEADER + rows)
    return path


def test_fit_recovers_an_exact_line_and_leaves_averages_out():
    points = [ScalingPoint(f"r{i}", 10 ** e, 0.5 * e - 1.0, True) for i, e in enumerate((6, 6.5, 7, 7.25))]
    points.append(ScalingPoint("avg", 10 ** 7, 9.0, False))  # far off the line: fitted, it would tilt it
    line = fit_line(points)
    assert line.points == 4
    assert line.slope == pytest.approx(0.5) and line.intercept == pytest.approx(-1.0)
    assert line.tau_at(1e8) == pytest.approx(3.0)
    assert line.tokens_for(3.0) == pytest.approx(1e8)


def test_fit_needs_two_trained_runs_at_different_token_counts():
    with pytest.raises(D3DError, match="at least two trained runs"):
        fit_line([ScalingPoint("a", 100, 2.0, True), ScalingPoint("b", 100, 2.5, True)])
    with pytest.raises(D3DError, match="at least two trained runs"):
        fit_line([ScalingPoint("a", 100, 2.0, True), ScalingPoint("b", 1000, 2.5, False)])


def test_a_flat_or_falling_line_never_reaches_a_higher_tau():
    line = fit_line([ScalingPoint("a", 100, 2.0, True), ScalingPoint("b", 1000, 1.5, True)])
    assert line.slope == pytest.approx(-0.5)
    assert math.isinf(line.tokens_for(4.0))


@pytest.mark.parametrize("rows, message", [
    ("a,1,ten,2.0,yes,x\n", "line 2: tokens_seen must be an integer"),
    ("a,1,100,2.0,maybe,x\n", "line 2: trained must be yes or no"),
    ("a,1,0,2.0,yes,x\n", "line 2: tokens_seen must be positive"),
    ("", "has no rows"),
])
def test_bad_tables_name_the_problem(tmp_path, rows, message):
    with pytest.raises(D3DError, match=message):
        read_points(_write(tmp_path, rows))


def test_missing_columns_and_files_are_named(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("run,tau\na,2.0\n")
    with pytest.raises(D3DError, match="lacks the column"):
        read_points(path)
    with pytest.raises(D3DError, match="not found"):
        read_points(tmp_path / "none.csv")


def test_main_prints_the_table_then_one_json_line(tmp_path, capsys):
    path = _write(tmp_path, "a,100,1000,2.0,yes,x\nb,9000,10000,2.5,yes,x\navg,0,10000,2.6,no,x\n")
    assert main(["--table", str(path), "--plot", str(tmp_path / "line.png")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("| run |") and "avg (not fitted)" in lines[-2]
    summary = json.loads(lines[-1])
    assert summary["slope_per_tenfold"] == pytest.approx(0.5)
    assert summary["tau_at_tenfold_more"] == pytest.approx(3.0)
    assert (tmp_path / "line.png").stat().st_size > 0


def test_main_reports_a_bad_table_as_an_error_not_a_traceback(tmp_path, capsys):
    assert main(["--table", str(tmp_path / "none.csv")]) == 2
    assert "error: scaling table not found" in capsys.readouterr().err


def test_the_committed_table_parses_and_rises():
    points = read_points(DEFAULT_TABLE)
    assert len(points) >= 18 and fit_line(points).slope > 0
