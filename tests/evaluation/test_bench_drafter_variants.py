"""`d3d bench --drafter-variant NAME=DIR`: modes sync@NAME, tree@NAME ... with another drafter on the
run's target, side by side with the run's drafter."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from d3d.cli import EXIT_BAD_INPUT, main
from d3d.errors import D3DError
from d3d.evaluation.bench import BenchConfig, run_bench
from d3d.evaluation.bench_summary import format_table, summarize
from d3d.evaluation.variants import (
    Variant, calibration_warnings, check_drafter_modes, cross_target, drafter_variant_of, parse_drafter_variants, parse_variant, reference_of,
    split_variant, with_references,
)


def fake_drafter_dir(path: Path) -> Path:
    """A directory `is_drafter_dir` accepts (enough for everything that loads no weights)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "drafter_config.json").write_text("{}")
    return path


# --- names (pure) ----------------------------------------------------------------------------


def test_drafter_variant_mode_names():
    assert split_variant("sync@new") == ("sync", "new") and split_variant("tree@new") == ("tree", "new")
    assert split_variant("sync@new+b8") == ("sync", "new+b8")
    assert parse_variant("new+b8") == Variant(block_size=8, drafter="new")
    assert drafter_variant_of("async@deep-3_l") == "deep-3_l" and drafter_variant_of("sync@b8") is None
    assert drafter_variant_of("sync@int8") is None and drafter_variant_of("sync") is None
    assert reference_of("sync@new") == "ar" and not cross_target("sync@new")  # the run's target: compared with ar
    assert with_references(["ar", "sync", "sync@new", "tree@new"]) == ["ar", "sync", "sync@new", "tree@new"]
    assert split_variant("ar@new") == ("ar@new", None)  # plain decoding has no drafter: not a mode
    assert split_variant("sync@keep1") == ("sync@keep1", None) and split_variant("async@2,1") == ("async@2,1", None)
    assert split_variant("sync@new+new") == ("sync@new+new", None) and split_variant("sync@a.b") == ("sync@a.b", None)


def test_parse_drafter_variants(tmp_path):
    a, b = fake_drafter_dir(tmp_path / "a"), fake_drafter_dir(tmp_path / "b")
    assert parse_drafter_variants((f"new={a}", f" deep_3 = {b} ")) == {"new": str(a), "deep_3": str(b)}
    assert parse_drafter_variants(()) == {}


@pytest.mark.parametrize("spec, message", [
    ("new", "takes NAME=DIR, got 'new'"),
    ("=DIR", "takes NAME=DIR"),
    ("new=", "takes NAME=DIR"),
    ("int8=DIR", "bad drafter variant name 'int8'"),
    ("float32=DIR", "bad drafter variant name 'float32'"),
    ("dense=DIR", "bad drafter variant name 'dense'"),
    ("b8=DIR", "bad drafter variant name 'b8'"),
    ("b1=DIR", "bad drafter variant name 'b1'"),
    ("keep1=DIR", "bad drafter variant name 'keep1'"),
    ("a.b=DIR", "bad drafter variant name 'a.b'"),
    ("a+b=DIR", "bad drafter variant name 'a\\+b'"),
    ("new=/no/such/drafter", "/no/such/drafter is not a saved drafter directory"),
])
def test_bad_drafter_variant_is_a_d3d_error(tmp_path, spec, message):
    fake_drafter_dir(tmp_path / "DIR")
    with pytest.raises(D3DError, match=message):
        parse_drafter_variants((spec.replace("=DIR", f"={tmp_path / 'DIR'}"),))


def test_a_name_registered_twice_is_a_d3d_error(tmp_path):
    a, b = fake_drafter_dir(tmp_path / "a"), fake_drafter_dir(tmp_path / "b")
    with pytest.raises(D3DError, match="'new' is registered twice"):
        parse_drafter_variants((f"new={a}", f"new={b}"))


@pytest.mark.parametrize("modes, message", [
    (("sync@old",), r"unknown mode 'sync@old'.*--drafter-variant old=DIR"),
    (("sync@new", "ar@new"), "'ar@new' is not a mode: plain decoding uses no drafter"),
    (("sync@int8+new",), "'sync@int8\\+new': a drafter variant runs on the run's target and joins no dtype"),
    (("sync@float32+new",), "joins no dtype or weight format"),
    (("sync",), "drafter variant 'new' is used by no mode"),
])
def test_bad_drafter_variant_modes_are_d3d_errors(modes, message):
    with pytest.raises(D3DError, match=message):
        check_drafter_modes(modes, {"new": "DIR"})
    check_drafter_modes(("sync@new", "async@new+b8", "tree@new", "sync@int8"), {"new": "DIR"})  # fine


def test_bench_config_checks_drafter_variants_before_loading(tmp_path):
    d = fake_drafter_dir(tmp_path / "d")
    BenchConfig(modes=("sync", "sync@new"), drafter_variants=(f"new={d}",), device="cpu").validate()
    with pytest.raises(D3DError, match="unknown mode 'sync@int3'"):
        BenchConfig(modes=("sync@int3",), device="cpu").validate()
    with pytest.raises(D3DError, match="not a saved drafter directory"):
        BenchConfig(modes=("sync@new",), drafter_variants=(f"new={tmp_path}",), device="cpu").validate()


def test_bad_drafter_variant_on_the_command_line_is_one_line(tmp_path, capsys):
    code = main(["bench", "--modes", "ar,sync@new", "--drafter-variant", f"new={tmp_path / 'nothing'}",
                 "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "not a saved drafter directory" in err and err.count("\n") == 1
    code = main(["bench", "--modes", "sync@other", "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "unknown mode 'sync@other'" in err and err.count("\n") == 1


def test_results_key_records_each_variant_directory(tmp_path, monkeypatch):
    """The same NAME with another DIR is another configuration (never resumed as the same run);
    runs without drafter variants keep the key they had."""
    monkeypatch.chdir(tmp_path)
    a, b = fake_drafter_dir(tmp_path / "a"), fake_drafter_dir(tmp_path / "b")
    with_a = BenchConfig(modes=("sync", "sync@new"), drafter_variants=("new=a",), device="cpu")
    with_b = BenchConfig(modes=("sync", "sync@new"), drafter_variants=("new=b",), device="cpu")
    assert with_a.results_key()["drafter_variants"] == {"new": str(a.resolve())}
    assert with_a.results_key()["modes"] == ["ar", "sync", "sync@new"]
    assert with_a.results_path() != with_b.results_path()
    assert "drafter_variants" not in BenchConfig(modes=("sync",), device="cpu").results_key()


def test_cli_flag_is_repeatable():
    from d3d.cli import build_parser

    args = build_parser().parse_args(["bench", "--drafter-variant", "a=x", "--drafter-variant", "b=y"])
    assert args.drafter_variants == ["a=x", "b=y"]


def test_a_variant_calibrated_unlike_the_run_drafter_is_warned_about(tmp_path):
    """A drafter folder without acceptance.json picks its verification lengths from raw confidences:
    compared with a calibrated run drafter, its t_d, t_v and speed differ for that reason alone."""
    run_dir = fake_drafter_dir(tmp_path / "run")
    bare, calibrated = fake_drafter_dir(tmp_path / "bare"), fake_drafter_dir(tmp_path / "cal")
    (calibrated / "acceptance.json").write_text("{}")
    assert calibration_warnings(run_dir, {"a": str(bare)}) == []  # neither has a table
    assert "has an acceptance.json" in calibration_warnings(run_dir, {"b": str(calibrated)})[0]
    (run_dir / "acceptance.json").write_text("{}")
    warnings = calibration_warnings(run_dir, {"a": str(bare), "b": str(calibrated)})
    assert len(warnings) == 1 and "'a'" in warnings[0] and "has no acceptance.json" in warnings[0]
    assert "eval-drafter" in warnings[0] and "--save" in warnings[0]
    assert calibration_warnings(None, {"b": str(calibrated)})[0].startswith("drafter variant 'b'")  # no run drafter dir


# --- summary and table (pure) ----------------------------------------------------------------


def _record(total_s, tokens, rounds):
    return {"new_tokens": len(tokens), "total_s": total_s, "rounds": rounds, "round_tokens": len(tokens),
            "draft_s": 0.01 * rounds, "verify_s": 0.02 * rounds, "tokens": tokens}


def test_summary_and_table_name_each_modes_drafter():
    rows = [{"results": {"ar": _record(2.0, [1, 2, 3, 4], 4), "sync": _record(1.0, [1, 2, 3, 4], 2),
                         "sync@deep": _record(0.8, [1, 2, 3, 4], 1)}}]
    deep = "drafter runs/deep (trained, 3 layers, B=16)"
    run = "drafter runs/d (trained, 5 layers, B=16)"
    s = summarize(rows, ("ar", "sync", "sync@deep"), True, run, {"sync@deep": deep})
    assert s["sync@deep"]["drafter"] == deep and s["sync"]["drafter"] == run and "drafter" not in s["ar"]
    assert s["sync@deep"]["identical"] is True and s["sync@deep"]["speedup"] == 2.5 and s["sync@deep"]["tau"] == 4.0
    table = format_table(s).splitlines()
    assert table[4].split()[0] == "sync@deep"
    assert table[-2:] == [f"drafter of sync: {run}", f"drafter of sync@deep: {deep}"]
    one_drafter = format_table(summarize(rows, ("ar", "sync"), True, run)).splitlines()
    assert not any(line.startswith("drafter of") for line in one_drafter)


# --- end to end on the tiny model (a few seconds each) ----------------------------------------


def save_drafter(model_dir: Path, layers: list[int], path: Path) -> Path:
    """An untrained drafter from the tiny target's `layers`, saved in `path`."""
    import torch

    from d3d.inference.pipeline import load_target
    from d3d.models import hub
    from d3d.models.drafter import Drafter

    target = load_target(str(model_dir), "cpu", torch.float32)
    drafter = Drafter.from_base(model_dir, layers, 4, hub.choose_mask_token_id(target.tokenizer),
                                hub.tokenizer_fingerprint(target.tokenizer), target=target.model)
    drafter.save_pretrained(path)
    return path


@pytest.fixture
def drafters(tiny_chat_model_dir, tmp_path) -> tuple[Path, Path]:
    """A one-layer drafter (the run's) and a three-layer drafter (the variant's)."""
    return (save_drafter(tiny_chat_model_dir, [0], tmp_path / "shallow"),
            save_drafter(tiny_chat_model_dir, [0, 1, 2], tmp_path / "deep"))


@pytest.fixture
def suite(tmp_path) -> Path:
    path = tmp_path / "prompts.jsonl"
    prompts = ["w10 w11 w12 w10 w11 w12", "w40 w9 w40 w9"]
    path.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts)))
    return path


def test_sync_on_a_drafter_variant_runs_the_other_drafter(tiny_chat_model_dir, drafters, suite, tmp_path):
    """sync with the run's one-layer drafter beside sync@deep and tree@deep with a three-layer one, on
    the same target in one run: every output equals the run's ar (no ar@deep is added), each mode's
    drafter description names its own drafter, and the results file records the variant."""
    shallow, deep = drafters
    out = tmp_path / "r.jsonl"
    cfg = BenchConfig(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=10, device="cpu",
                      dtype="float32", modes=("sync", "sync@deep", "tree@deep"), drafter=str(shallow),
                      drafter_variants=(f"deep={deep}",), out=str(out))
    text = io.StringIO()
    summary = run_bench(cfg, text)
    assert list(summary) == ["ar", "sync", "sync@deep", "tree@deep"]
    for mode in ("sync", "sync@deep", "tree@deep"):
        assert summary[mode]["identical"] is True and summary[mode]["divergences"] == 0, mode
        assert summary[mode]["tau"] >= 1 and summary[mode]["tokens_per_s"] > 0 and summary[mode]["speedup"] > 0, mode
    assert "1 layers" in summary["sync"]["drafter"] and str(shallow) in summary["sync"]["drafter"]
    for mode in ("sync@deep", "tree@deep"):
        assert "3 layers" in summary[mode]["drafter"] and str(deep) in summary[mode]["drafter"], mode
    lines = text.getvalue().splitlines()
    assert json.loads(lines[-1]) == summary
    assert any(line.startswith("drafter of sync@deep, tree@deep:") for line in lines)
    header, *rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert header["config"]["drafter_variants"] == {"deep": str(deep.resolve())}
    assert header["config"]["content"]["drafter_variants"]["deep"] is not None
    assert "3 layers" in header["variant_drafters"]["sync@deep"]
    assert all(r["results"]["sync@deep"]["tokens"] == r["results"]["ar"]["tokens"] for r in rows)


def test_the_same_name_with_another_drafter_never_resumes(tiny_chat_model_dir, drafters, suite, tmp_path):
    shallow, deep = drafters
    base = dict(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=6, device="cpu", dtype="float32",
                modes=("sync@new",), limit=1, out=str(tmp_path / "r.jsonl"))
    first = run_bench(BenchConfig(**base, drafter_variants=(f"new={deep}",)), io.StringIO())
    assert "sync" not in first and "3 layers" in first["sync@new"]["drafter"]
    with pytest.raises(D3DError, match="differs in .*drafter_variants"):
        run_bench(BenchConfig(**base, drafter_variants=(f"new={shallow}",)), io.StringIO())
    again = run_bench(BenchConfig(**base, drafter_variants=(f"new={deep}",)), io.StringIO())
    assert again["sync@new"]["n_prompts"] == 1


def test_a_drafter_for_another_tokenizer_is_an_error_before_the_results_file(tiny_chat_model_dir, drafters, suite,
                                                                             tmp_path):
    _, deep = drafters
    config = json.loads((deep / "drafter_config.json").read_text())
    config["drafter"]["tokenizer_fingerprint"] = "another tokenizer"
    (deep / "drafter_config.json").write_text(json.dumps(config))
    out = tmp_path / "r.jsonl"
    cfg = BenchConfig(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=6, device="cpu",
                      dtype="float32", modes=("sync@deep",), drafter_variants=(f"deep={deep}",), out=str(out))
    with pytest.raises(D3DError, match="built for a different tokenizer"):
        run_bench(cfg, io.StringIO())
    assert not out.exists()
