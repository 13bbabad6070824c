"""The ship gate: the continued runs' rule applied to measured numbers, cached measurements, clear errors."""

from __future__ import annotations

import json

import pytest
import torch

from d3d.errors import D3DError
from d3d.evaluation import ship_gate as gate
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.evaluation.test_eval_drafter import greedy_rows

BASE = {"pool": 2.3557, "chat": 2.1077, "dev_mix": 2.5811, "dev_tasks4": 2.8964, "dev_tasks5": 2.85,
        "dev_tasks6": 2.9127, "dev_tasks7": 2.6522, "dev_tasks8": 2.9659}
BASE["task_mean"] = sum(BASE[k] for k in gate.TASK_SETS) / 5


def records(numbers: dict[str, float]) -> tuple[dict, dict]:
    """The two eval-drafter records (sets by file, dev+dev2 by source) that give `numbers`."""
    sets = {"by_data": {f"data/smollm2/{name}.jsonl": {"tau_sim": numbers.get(name, 2.0)} for name in gate.SETS}}
    halves = {"tau_sim": numbers["pool"], "by_source": {"self-instruct": {"tau_sim": numbers["chat"]},
                                                        "code": {"tau_sim": 2.5}}}
    return sets, halves


def test_gate_numbers_read_both_records_and_average_the_task_sets() -> None:
    numbers = gate.gate_numbers(*records(BASE))
    assert numbers == pytest.approx(BASE)


def test_a_candidate_at_every_bar_passes_and_one_below_any_bar_fails() -> None:
    at_bars = {k: v + gate.OFFLINE_OFFSETS.get(k, gate.OFFLINE_OFFSETS["task"]) for k, v in BASE.items()}
    at_bars["task_mean"] = BASE["task_mean"] + 0.01
    # the five task sets at their own bars average below the mean's bar: lift one set to make up the mean
    at_bars["dev_tasks4"] += 5 * (at_bars["task_mean"] - sum(at_bars[k] for k in gate.TASK_SETS) / 5)
    checks = gate.offline_checks(at_bars, BASE)
    assert all(c.ok for c in checks) and len(checks) == 9
    for name in ("pool", "chat", "dev_mix", "dev_tasks7"):
        below = dict(at_bars, **{name: at_bars[name] - 0.0002})
        failed = [c.name for c in gate.offline_checks(below, BASE) if not c.ok]
        assert name in failed
    assert gate.verdict(gate.offline_checks(at_bars, BASE), None).startswith("offline passes")


def test_the_thirty_ninth_fails_on_dev_mix_alone() -> None:
    """Session 50's verdict, recomputed: every condition passes except dev_mix (2.5690 < 2.5711)."""
    e39 = {"pool": 2.3634, "chat": 2.1077, "dev_mix": 2.5690, "dev_tasks4": 2.9127, "dev_tasks5": 2.8606,
           "dev_tasks6": 2.9229, "dev_tasks7": 2.6736, "dev_tasks8": 2.9826}
    e39["task_mean"] = sum(e39[k] for k in gate.TASK_SETS) / 5
    checks = gate.offline_checks(e39, BASE)
    assert [c.name for c in checks if not c.ok] == ["dev_mix"]
    assert gate.verdict(checks, []) == "does not ship (offline)"


def summary(sync_tau: float, cand_tau: float, sync_speed: float, cand_speed: float, divergences: int = 0) -> dict:
    return {"ar": {"tau": 1.0}, "pld": {"tau": 1.2, "divergences": 0},
            "sync": {"tau": sync_tau, "speedup_per_token": sync_speed, "divergences": 0},
            "sync@e9": {"tau": cand_tau, "speedup_per_token": cand_speed, "divergences": divergences}}


def test_bench_conditions_allow_each_suites_drop_and_no_divergence() -> None:
    ok = gate.bench_checks("humaneval", summary(4.0, 4.0, 2.0, 1.98), "e9")
    assert all(c.ok for c in ok)
    assert not all(c.ok for c in gate.bench_checks("humaneval", summary(4.0, 3.99, 2.0, 2.1), "e9"))
    assert all(c.ok for c in gate.bench_checks("mixed", summary(2.0, 1.92, 1.4, 1.35), "e9"))
    assert not all(c.ok for c in gate.bench_checks("mixed", summary(2.0, 1.91, 1.4, 1.4), "e9"))
    diverged = gate.bench_checks("mixed", summary(2.0, 2.0, 1.4, 1.4, divergences=1), "e9")
    assert [c.name for c in diverged if not c.ok] == ["mixed divergences (negated)"]
    with pytest.raises(D3DError, match="sync@e8"):
        gate.bench_checks("mixed", summary(2.0, 2.0, 1.4, 1.4), "e8")


def write_set_files(data_dir, target) -> None:
    """The eight gate sets as greedy rows of a tiny target; dev and dev2 mix chat and code sources."""
    data_dir.mkdir()
    rows = greedy_rows(target, 4, max_new=10)
    for name in gate.SETS:
        tagged = [dict(r, source="self-instruct" if i % 2 else "code") for i, r in enumerate(rows)]
        (data_dir / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in tagged))


def test_gate_measures_both_drafters_once_then_reads_its_cache(tiny_chat_model_dir, tmp_path, capsys, monkeypatch):
    target = load_decoder(tiny_chat_model_dir)
    data_dir, work = tmp_path / "sets", tmp_path / "work"
    write_set_files(data_dir, target)
    torch.manual_seed(0)
    for name, layers in (("base", [0, 1]), ("cand", [0, 1, 2, 3])):
        Drafter.from_base(tiny_chat_model_dir, layers, 4, 96, "", target=target,
                          labels="next-token").save_pretrained(tmp_path / name)
    args = ["--candidate", str(tmp_path / "cand"), "--base", str(tmp_path / "base"), "--data-dir", str(data_dir),
            "--target", str(tiny_chat_model_dir), "--work", str(work)]
    assert gate.main(args) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert len(list(work.glob("*-sets.json"))) == 2 and len(list(work.glob("*-halves.json"))) == 2
    assert len(first["checks"]) == 9 and first["verdict"] in ("does not ship (offline)",
                                                                "offline passes; the benches decide (pass --bench)")
    assert all(c["ok"] == (round(c["value"], 4) >= round(c["bar"], 4)) for c in first["checks"])

    import d3d.evaluation.eval_drafter as eval_drafter

    monkeypatch.setattr(eval_drafter, "measure_acceptance", lambda *a, **k: pytest.fail("measured twice"))
    assert gate.main(args) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == first
    (data_dir / "dev_mix.jsonl").write_text((data_dir / "dev_mix.jsonl").read_text().splitlines()[0] + "\n")
    with pytest.raises(BaseException, match="measured twice"):  # new data, new key: measured again
        gate.main(args)


def test_bad_input_is_one_line_and_status_2(tmp_path, capsys) -> None:
    (tmp_path / "cand").mkdir()
    assert gate.main(["--candidate", str(tmp_path / "cand"), "--base", str(tmp_path / "cand")]) == 2
    assert "holds no model.safetensors" in capsys.readouterr().err
    assert gate.main(["--candidate", "x", "--bench", "humaneval=a.txt"]) == 2
    assert "needs both suites" in capsys.readouterr().err
    assert gate.main(["--candidate", "x", "--bench", "humaneval=a", "--bench", "mixed=b"]) == 2
    assert "needs --variant" in capsys.readouterr().err


def test_save_table_writes_the_candidates_acceptance_table_once(tiny_chat_model_dir, tmp_path, capsys, monkeypatch):
    """`--save-table` leaves the candidate the eight-set table `d3d eval-drafter --save` would, which the next run reads."""
    target = load_decoder(tiny_chat_model_dir)
    data_dir = tmp_path / "sets"
    write_set_files(data_dir, target)
    for name in ("base", "cand"):
        Drafter.from_base(tiny_chat_model_dir, [0, 1], 4, 96, "", target=target).save_pretrained(tmp_path / name)
    args = ["--candidate", str(tmp_path / "cand"), "--base", str(tmp_path / "base"), "--data-dir", str(data_dir),
            "--target", str(tiny_chat_model_dir), "--work", str(tmp_path / "work"), "--save-table"]
    assert gate.main(args) == 0
    table = json.loads((tmp_path / "cand" / "acceptance.json").read_text())
    assert table["data"] == ",".join(str(data_dir / f"{n}.jsonl") for n in gate.SETS) and len(table["by_data"]) == 8
    assert not (tmp_path / "base" / "acceptance.json").exists()  # only the candidate's table is written
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    import d3d.evaluation.eval_drafter as eval_drafter

    monkeypatch.setattr(eval_drafter, "measure_acceptance", lambda *a, **k: pytest.fail("measured twice"))
    assert gate.main(args) == 0  # the saved table fits: nothing is measured again
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == first
