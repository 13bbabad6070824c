"""Mode tree end to end: `d3d generate --mode tree`, `--tree-branches`, and the bench's tree modes."""

from __future__ import annotations

import io
import json

from d3d.cli import EXIT_BAD_INPUT, main
from d3d.evaluation.bench import BenchConfig, run_bench
from d3d.inference.engine import GenerationConfig
from d3d.inference.pipeline import Pipeline


def test_pipeline_tree_equals_ar_with_each_branch_set(tiny_chat_model_dir):
    pipe = Pipeline.load(str(tiny_chat_model_dir), block_size=4)
    ids = pipe.target.encode_chat("w10 w11 w12 w10 w11")
    ar, _ = pipe.generate(ids, "ar", GenerationConfig(max_new_tokens=20))
    for branches in [("drafter", "lookup"), ("lookup",), ("drafter",)]:
        pipe.tree_branches = branches
        tree, stats = pipe.generate(ids, "tree", GenerationConfig(max_new_tokens=20))
        assert tree == ar, branches
        assert stats.as_dict()["wins"] == stats.wins and sum(stats.wins.values()) == stats.rounds


def test_generate_mode_tree_reports_the_tree(tiny_chat_model_dir, capsys):
    code = main(["generate", "--prompt", "w9 w10 w9 w10", "--target", str(tiny_chat_model_dir), "--max-new-tokens", "12",
                 "--block-size", "4", "--mode", "tree", "--compare", "--json", "--draft-length", "6"])
    out = capsys.readouterr().out
    assert code == 0 and "identical output: yes" in out
    assert "nodes per round" in out and "accepted path from" in out
    stats = json.loads(out.strip().splitlines()[-1])["stats"]
    assert set(stats["nodes_hist"]) <= {"0", "5"}  # --draft-length 6: five nodes a round (0 at the budget's end)


def test_generate_defaults_to_the_tree(tiny_chat_model_dir, capsys):
    """No --mode: `d3d generate` (and so `make demo`) decodes with the tree, losslessly."""
    code = main(["generate", "--prompt", "w9 w10 w9 w10", "--target", str(tiny_chat_model_dir), "--max-new-tokens", "12",
                 "--block-size", "4", "--compare", "--json"])
    out = capsys.readouterr().out
    assert code == 0 and "identical output: yes" in out
    assert json.loads(out.strip().splitlines()[-1])["stats"]["mode"] == "tree"


def test_bad_tree_branches_is_one_line(tiny_chat_model_dir, capsys):
    code = main(["generate", "--prompt", "w9", "--target", str(tiny_chat_model_dir), "--mode", "tree",
                 "--tree-branches", "drafter,beam"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "--tree-branches" in err and err.count("\n") == 1


def test_bench_tree_modes_report_the_tree_shape(tiny_chat_model_dir, tmp_path):
    suite = tmp_path / "prompts.jsonl"
    suite.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in ["w10 w11 w12 w10 w11", "w20 w30 w20 w30"]))
    cfg = BenchConfig(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=12, device="cpu",
                      out=str(tmp_path / "results.jsonl"), modes=("tree", "tree-drafter", "tree-lookup"), block_size=4)
    out = io.StringIO()
    summary = run_bench(cfg, out)
    assert json.loads(out.getvalue().splitlines()[-1]) == summary
    for mode in ("tree", "tree-drafter", "tree-lookup"):
        s = summary[mode]
        assert s["identical"] is True and s["n_prompts"] == 2
        assert s["mean_nodes"] is not None and s["mean_accepted_depth"] >= 0
        assert sum(s["wins"].values()) == s["rounds"]
    assert summary["tree-lookup"]["drafter_share"] == 0 and "drafter" not in summary["tree-lookup"]["wins"]
    assert "lookup" not in summary["tree-drafter"]["wins"] and "both" not in summary["tree-drafter"]["wins"]
