"""The fault and soak test (`d3d/serving/soak.py`), slow tier: 200 requests from 16 clients on a
tiny random model over loopback, 20% of the clients leaving every answer midway, bad bodies mixed
in, SIGTERM under load. No hung or unclean request, greedy answers equal plain decoding, RSS
within 10% of warm-up, exit status 0. With D3D_SOAK_REAL=1 it also runs on the embedded model."""

from __future__ import annotations

import json
import os

import pytest

from d3d.serving.soak import SoakConfig, run_soak
from tests.conftest import save_tiny_model, save_tiny_tokenizer


def word_prompts(path) -> str:
    path.write_text("".join(json.dumps({"prompt": " ".join(f"w{10 + (i * 7 + j) % 80}" for j in range(3 + i))}) + "\n"
                            for i in range(8)))
    return str(path)


@pytest.mark.slow
def test_soak_on_a_tiny_model(tmp_path, capsys):
    model = save_tiny_tokenizer(save_tiny_model(tmp_path / "tiny", "llama", max_position_embeddings=4096))
    os.environ["D3D_CACHE"] = str(tmp_path / "cache")  # the server's pass costs, measured for this model
    cfg = SoakConfig(target=str(model), dtype="float32", device="cpu", suite=word_prompts(tmp_path / "p.jsonl"),
                     drain_s=20.0, deadline_s=120.0, log=str(tmp_path / "server.log"))
    report = run_soak(cfg)
    table = capsys.readouterr().out
    print(table)
    d = report.as_dict()
    assert d["requests"] == cfg.requests + cfg.clients
    assert d["hung"] == 0 and d["unclean"] == 0, (d, (tmp_path / "server.log").read_text()[-3000:])
    assert d["results"].get("disconnected", 0) >= 10 and d["results"]["bad_body_4xx"] == 20
    assert d["results"]["ok"] >= 120
    assert d["greedy_mismatches"] == 0
    assert d["rss_growth"] <= cfg.rss_tolerance
    assert d["drain_exit_status"] == 0
    assert json.loads(table.strip().splitlines()[-1]) == d


@pytest.mark.slow
@pytest.mark.real_model
@pytest.mark.skipif(os.environ.get("D3D_SOAK_REAL") != "1", reason="the real-model soak: set D3D_SOAK_REAL=1")
def test_soak_on_the_embedded_model(tmp_path):
    report = run_soak(SoakConfig(dtype="float32", max_tokens=24, drain_tokens=48, log=str(tmp_path / "server.log")))
    assert report.passed(0.10), report.as_dict()
