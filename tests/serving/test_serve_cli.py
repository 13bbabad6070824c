"""`d3d serve` / `d3d loadtest` flags: help, and bad input as one line with exit status 2."""

from __future__ import annotations

import socket

import pytest

from d3d.cli import main


def test_serve_and_loadtest_are_subcommands(capsys):
    for command in ("serve", "loadtest"):
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0
        assert "--max-batch" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["loadtest", "--url", "http://example.com:8000"], "loopback"),
    (["loadtest", "--concurrency", "1,x"], "comma-separated"),
    (["loadtest", "--concurrency", "0"], "positive"),
    (["serve", "--port", "70000"], "--port"),
    (["serve", "--max-batch", "0"], "--max-batch"),
])
def test_bad_flags_are_one_line_errors(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_a_taken_port_is_reported_before_loading_anything(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port), "--target", "/nonexistent"]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
