"""Resumed bench records judged by an older agreement rule are judged again by the current rule: records
without a pass log are generated again (untimed) to get one (`bench.rejudge`)."""

from __future__ import annotations

import io
import json

from d3d.evaluation.agreement import AGREEMENT_RULE
from d3d.evaluation.bench import BenchConfig, run_bench


def test_an_old_near_tie_record_is_rerun_and_judged_by_replay(tiny_chat_model_dir, tmp_path):
    suite = tmp_path / "prompts.jsonl"
    suite.write_text("".join(json.dumps({"id": f"p{i}", "prompt": f"w{10 + i} w{20 + i}"}) + "\n" for i in range(2)))
    out = tmp_path / "results.jsonl"
    cfg = BenchConfig(suite=str(suite), target=str(tiny_chat_model_dir), modes=("ar", "sync"), max_new_tokens=10,
                      device="cpu", dtype="float32", out=str(out))
    run_bench(cfg, io.StringIO())
    lines = out.read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    for row in rows:
        if "results" in row:  # as rule 2 wrote it: no pass log, a (made-up) different output called a near tie
            sync = row["results"]["sync"]
            assert sync["passes"] and sync["target_capacity"] > 0
            sync.pop("passes"), sync.pop("target_capacity")
            sync |= {"agreement": "near_tie", "agreement_rule": 2, "tokens": sync["tokens"][:-1] + [5]}
    out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    summary = run_bench(cfg, io.StringIO())
    assert AGREEMENT_RULE == 4
    assert (summary["sync"]["identical_prompts"], summary["sync"]["near_ties"]) == (2, 0)  # the rerun, judged
