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
