"""Bad input on the command line gives one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import pytest

from d3d.cli import EXIT_BAD_INPUT, main


def run_cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["generate", "--prompt", "hi", "--target", "/no/such/model"], "model not found"),
        (["generate", "--prompt", "hi", "--temperature", "-1"], "temperature"),
        (["generate", "--prompt", "hi", "--temperature", "nan"], "temperature"),
        (["generate", "--prompt", "hi", "--top-p", "1.5"], "top_p"),
        (["generate", "--prompt", "hi", "--top-k", "-3"], "top_k"),
        (["generate", "--prompt", "hi", "--block-size", "1"], "block size"),
        (["generate", "--prompt", "hi", "--max-new-tokens", "0"], "max new tokens"),
        (["bench", "--limit", "0"], "--limit"),
        (["cost", "--sizes", "a,b"], "--sizes"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == EXIT_BAD_INPUT
    assert err.startswith("d3d: error:") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bench_flags_and_config_share_one_definition():
    """Every BenchConfig field is a bench flag of the same name with the same default (dtype aside:
    the command line defaults to auto, the library to exact float32 on a CPU)."""
    from dataclasses import fields

    from d3d.cli import build_parser
    from d3d.evaluation.bench import BenchConfig

    args = build_parser().parse_args(["bench"])
    defaults = BenchConfig()
    for f in fields(BenchConfig):
        assert hasattr(args, f.name), f"no bench flag for BenchConfig.{f.name}"
        if f.name not in ("dtype", "modes", "sweep", "prefill_keep", "drafter_variants"):
            assert getattr(args, f.name) == getattr(defaults, f.name), f.name
    assert args.dtype == "auto" and defaults.dtype is None
    assert args.drafter_variants == [] and defaults.drafter_variants == ()


def test_cost_save_replaces_the_cached_pass_cost_table_decoding_reads(capsys, monkeypatch, tmp_path, tiny_chat_model_dir):
    import json

    from d3d.inference import pass_costs
    from d3d.inference.pipeline import load_target

    monkeypatch.setattr(pass_costs, "CACHE_DIR", tmp_path / "pass_costs")
    model = load_target(str(tiny_chat_model_dir), "cpu", "float32").native("test")
    path = pass_costs.cache_path(model)
    stale = {str(k): 9.0 for k in pass_costs.COST_SIZES}  # a table measured under load: 9 s a pass
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"seconds": stale}))
    assert pass_costs.machine_pass_costs(model).seconds(1) == 9.0  # read, not measured
    code, out, err = run_cli(capsys, "cost", "--save", "--target", str(tiny_chat_model_dir), "--dtype", "float32",
                             "--device", "cpu")
    assert code == 0 and f"saved {path}" in out, err
    fresh = pass_costs.machine_pass_costs(model)
    assert set(fresh.table) == set(pass_costs.COST_SIZES) and max(fresh.table.values()) < 1.0


def test_cost_batch_prints_the_batched_passes(capsys, tiny_chat_model_dir):
    import json

    code, out, err = run_cli(capsys, "cost", "--batch", "3", "--repeats", "1", "--target", str(tiny_chat_model_dir),
                             "--dtype", "float32", "--device", "cpu")
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert sorted(result["batches"]) == ["1", "2", "3"] and result["block_size"] >= 2
    for row in result["batches"].values():
        assert row["plain_ms"] > 0 and row["draft_ms"] > 0 and row["break_even_tokens"] > 0
    assert out.count("\n") == 5  # the header, three batch sizes, the JSON line


@pytest.mark.parametrize("flags", [["--batch", "-1"], ["--batch", "2", "--profile"], ["--batch", "2", "--save"]])
def test_cost_batch_refuses_bad_flags_in_one_line(capsys, flags):
    code, _, err = run_cli(capsys, "cost", *flags)
    assert code == EXIT_BAD_INPUT and "--batch" in err and err.count("\n") == 1


def test_cost_save_with_profile_is_one_line(capsys):
    code, _, err = run_cli(capsys, "cost", "--save", "--profile")
    assert code == EXIT_BAD_INPUT and "one at a time" in err and err.count("\n") == 1


def test_text_streamer_writes_to_the_stdout_of_call_time_and_holds_back_split_characters(capsys):
    """The streamer prints to whatever sys.stdout is when it is made (a default bound at import
    time would write past a redirect), and a character split across tokens waits for its end."""
    from d3d.cli import TextStreamer

    pieces = {1: b"caf", 2: b"\xc3", 3: b"\xa9!"}
    streamer = TextStreamer(lambda ids: b"".join(pieces[i] for i in ids).decode("utf-8", errors="replace"))
    streamer.push([1])
    assert capsys.readouterr().out == "caf"
    streamer.push([2])
    assert capsys.readouterr().out == ""
    streamer.push([3])
    streamer.close()
    assert capsys.readouterr().out == "\u00e9!\n"
