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
