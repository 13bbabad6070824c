"""`d3d bench`: suites, the JSON-last output contract, interleaving, resume, and bad input."""

from __future__ import annotations

import io
import json
from collections import Counter

import pytest

from d3d.errors import D3DError
from d3d.evaluation import bench
from d3d.evaluation.bench import BenchConfig, mode_order, run_bench, summarize
from d3d.evaluation.suites import HUMANEVAL_TEMPLATE, load_suite

PROMPTS = ["w10 w11 w12 w13 w10 w11 w12", "w20 w30 w40", "user w50 w60 w77 w50 w60", "w90 w91"]


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{i}", "prompt": p}) + "\n" for i, p in enumerate(PROMPTS)))
    return path


@pytest.fixture
def config(tiny_chat_model_dir, suite, tmp_path):
    def make(**overrides) -> BenchConfig:
        base = dict(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=12, device="cpu",
                    out=str(tmp_path / "results.jsonl"))
        return BenchConfig(**{**base, **overrides})

    return make


@pytest.fixture
def generations(monkeypatch) -> Counter:
    """Counts generations per mode (warm-up included)."""
    counts: Counter = Counter()
    for name, runner in list(bench.MODES.items()):
        def counted(*args, _name=name, _runner=runner):
            counts[_name] += 1
            return _runner(*args)

        monkeypatch.setitem(bench.MODES, name, counted)
    return counts


def run(cfg: BenchConfig) -> tuple[dict, list[str]]:
    out = io.StringIO()
    summary = run_bench(cfg, out)
    return summary, out.getvalue().splitlines()


def test_json_line_last_with_every_mode(config, capsys):
    summary, lines = run(config(limit=2, modes=("sync", "hf", "pld")))
    assert capsys.readouterr().out == ""  # the table and JSON go to `out`; progress to stderr
    assert json.loads(lines[-1]) == summary
    assert list(summary) == ["ar", "sync", "hf", "pld"]
    assert lines[0].split()[:4] == ["mode", "tau", "tok/s", "speedup"]
    for mode, s in summary.items():
        assert {"tau", "speedup", "tokens_per_s", "identical"} <= set(s)
        assert s["identical"] is True, mode
        assert s["tau"] >= 1 and s["tokens_per_s"] > 0 and s["speedup"] > 0
        assert s["n_prompts"] == 2
    assert summary["ar"]["tau"] == 1.0 and summary["ar"]["speedup"] == 1.0
    assert "UNTRAINED" in summary["sync"]["drafter"]


def test_resume_skips_finished_prompts(config, generations, tmp_path):
    first, _ = run(config(limit=2, modes=("hf",)))
    assert generations == {"ar": 3, "hf": 3}  # one warm-up + two prompts each
    generations.clear()
    again, _ = run(config(limit=2, modes=("hf",)))
    assert generations == {} and again == first  # nothing left to run: no model call at all
    _, lines = run(config(limit=3, modes=("hf",)))
    assert generations == {"ar": 2, "hf": 2}  # warm-up + the one new prompt
    rows = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(rows) == 1 + 3 and json.loads(lines[-1])["hf"]["n_prompts"] == 3


def test_torn_last_line_is_rerun(config, generations, tmp_path):
    run(config(limit=2, modes=()))
    path = tmp_path / "results.jsonl"
    path.write_text(path.read_text().rstrip("\n")[:-5])  # as if killed mid-write
    generations.clear()
    summary, _ = run(config(limit=2, modes=()))
    assert generations == {"ar": 2} and summary["ar"]["n_prompts"] == 2
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_results_file_of_another_config_is_an_error(config):
    run(config(limit=1, modes=()))
    with pytest.raises(D3DError, match="differs in max_new_tokens"):
        run(config(limit=1, modes=(), max_new_tokens=5))
    summary, _ = run(config(limit=1, modes=(), max_new_tokens=5, fresh=True))
    assert summary["ar"]["n_prompts"] == 1


def test_default_results_path_depends_on_config_not_limit(config):
    a = config(out=None, limit=1).results_path()
    assert a == config(out=None, limit=5).results_path()
    assert a != config(out=None, max_new_tokens=7).results_path()
    assert a.parent.as_posix() == "runs/bench" and a.suffix == ".jsonl"


def test_sampling_reports_identical_as_null(config):
    summary, lines = run(config(limit=1, modes=("sync",), temperature=1.0, top_k=10))
    assert summary["sync"]["identical"] is None
    assert json.loads(lines[-1])["ar"]["identical"] is None


@pytest.mark.parametrize("overrides, message", [
    (dict(modes=("ar", "turbo")), "unknown mode 'turbo'"),
    (dict(block_size=1), "block size must be at least 2"),
    (dict(limit=0), "limit must be at least 1"),
    (dict(max_new_tokens=0), "max new tokens"),
    (dict(top_p=0.0), "top_p"),
])
def test_bad_config_is_a_d3d_error(config, overrides, message):
    with pytest.raises(D3DError, match=message):
        run(config(**overrides))


def test_mode_order_rotates_per_prompt():
    modes = ("ar", "sync", "hf")
    assert [mode_order(modes, i) for i in range(4)] == [
        ["ar", "sync", "hf"], ["sync", "hf", "ar"], ["hf", "ar", "sync"], ["ar", "sync", "hf"]]


def _record(total_s, tokens, rounds, round_tokens):
    return {"new_tokens": len(tokens), "total_s": total_s, "rounds": rounds, "round_tokens": round_tokens,
            "draft_s": 0.01 * rounds, "verify_s": 0.02 * rounds, "tokens": tokens}


def test_summary_ratios():
    rows = [
        {"results": {"ar": _record(2.0, [1, 2, 3, 4], 3, 3), "sync": _record(1.0, [1, 2, 3, 4], 1, 3)}},
        {"results": {"ar": _record(2.0, [5, 6], 1, 1), "sync": _record(0.5, [5, 7], 1, 1)}},
    ]
    s = summarize(rows, ("ar", "sync"), greedy=True, drafter="d")
    assert s["ar"]["tau"] == 1.0 and s["ar"]["speedup"] == 1.0 and s["ar"]["identical"] is True
    assert s["sync"]["tau"] == 2.0 and s["sync"]["speedup"] == round(4.0 / 1.5, 4)
    assert s["sync"]["tokens_per_s"] == 4.0 and s["sync"]["identical"] is False
    assert s["sync"]["mean_verify_ms"] == 20.0 and s["sync"]["drafter"] == "d" and "drafter" not in s["ar"]


def test_summary_counts_skipped_rounds_and_the_priced_t_d():
    sync = [_record(1.0, [1, 2], 1, 2) | {"draft_lengths": {"1": 5, "4": 2}, "skipped_rounds": 3, "policy_draft_s": 0.009},
            _record(1.0, [3, 4], 1, 2) | {"draft_lengths": {"1": 2}, "skipped_rounds": 1, "policy_draft_s": 0.009}]
    rows = [{"results": {"ar": _record(2.0, t["tokens"], 2, 2), "sync": t}} for t in sync]
    s = summarize(rows, ("ar", "sync"), greedy=True, drafter="d")["sync"]
    assert s["draft_lengths"] == {"1": 7, "4": 2} and s["skipped_rounds"] == 4 and s["policy_td_ms"] == 9.0


# --- suites ----------------------------------------------------------------------------------


def test_humaneval_suite():
    prompts = load_suite("humaneval", None)
    assert len(prompts) == 164 and [p.id for p in prompts[:2]] == ["HumanEval/0", "HumanEval/1"]
    assert prompts[0].text.startswith(HUMANEVAL_TEMPLATE.split("{")[0]) and prompts[0].text.endswith("```")
    assert "def has_close_elements" in prompts[0].text
    assert len(load_suite("humaneval", 3)) == 3


def test_mixed_suite_interleaves_four_categories():
    prompts = load_suite("mixed", None)
    assert len(prompts) == 40 and len({p.id for p in prompts}) == 40
    assert [p.id.split("-")[0] for p in prompts[:8]] == ["math", "code", "chat", "writing"] * 2
    assert {p.id.split("-")[0] for p in load_suite("MIXED", 4)} == {"math", "code", "chat", "writing"}


def test_jsonl_suite_ids_and_blank_lines(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"prompt": "a"}\n\n{"prompt": "b", "id": 7}\n')
    assert [(p.id, p.text) for p in load_suite(str(path), None)] == [("line-1", "a"), ("7", "b")]


@pytest.mark.parametrize("content, message", [
    ('{"prompt": "a"}\n{"prompt": \n', "line 2: not valid JSON"),
    ('{"prompt": "a"}\n{"prompt": "b"}\n{"text": "c"}\n', 'line 3: missing "prompt"'),
    ('{"prompt": 5}\n', 'line 1: missing "prompt"'),
    ('["a"]\n', "line 1: expected a JSON object"),
    ('{"prompt": "a", "id": "x"}\n{"prompt": "b", "id": "x"}\n', "duplicate prompt id 'x'"),
    ("\n\n", "holds no prompts"),
])
def test_malformed_jsonl_is_a_d3d_error(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(D3DError, match=message):
        load_suite(str(path), None)


def test_missing_or_unknown_suite(tmp_path):
    with pytest.raises(D3DError, match="suite file not found"):
        load_suite(str(tmp_path / "nope.jsonl"), None)
    with pytest.raises(D3DError, match="unknown suite 'mbpp'"):
        load_suite("mbpp", None)
    with pytest.raises(D3DError, match="limit must be at least 1"):
        load_suite("humaneval", 0)


def test_a_results_file_in_use_is_a_d3d_error(config, tmp_path):
    cfg = config(limit=1, modes=())
    with bench.ResultsFile(cfg.results_path(), {}).lock():
        with pytest.raises(D3DError, match="in use by another bench run"):
            run(cfg)


def test_low_precision_runs_classify_every_difference(config):
    """In bfloat16 each mode reports identical prompts, near ties and divergences, and a tiny model's
    differences are near ties (float32 top-2 gap under the bfloat16 threshold), never divergences."""
    out = io.StringIO()
    summary = run_bench(config(modes=("ar", "sync", "hf"), dtype="bfloat16"), out)
    for mode in ("sync", "hf"):
        s = summary[mode]
        assert s["identical_prompts"] + s["near_ties"] + s["divergences"] == len(PROMPTS)
        assert s["identical"] == (s["identical_prompts"] == len(PROMPTS))
        assert s["divergences"] == 0, (mode, s)


def test_a_changed_drafter_never_resumes_stale_rows(config, tiny_chat_model_dir, tmp_path, monkeypatch):
    """The default results file is keyed by the content of the models, not their paths: retraining
    the drafter in place gives a new file (rows of the old drafter are never reported)."""
    import torch

    from d3d.inference.pipeline import load_target
    from d3d.models import hub
    from d3d.models.drafter import Drafter

    monkeypatch.chdir(tmp_path)
    target = load_target(str(tiny_chat_model_dir), "cpu", torch.float32)
    fingerprint = hub.tokenizer_fingerprint(target.tokenizer)
    mask = hub.choose_mask_token_id(target.tokenizer)
    drafter = Drafter.from_base(tiny_chat_model_dir, [0], 4, mask, fingerprint, target=target.model)
    drafter.save_pretrained(tmp_path / "d")
    cfg = config(out=None, limit=1, modes=("ar", "sync"), drafter=str(tmp_path / "d"))
    run_bench(cfg, io.StringIO())
    with torch.no_grad():
        drafter.model.model.layers[0].mlp.down_proj.weight.mul_(0.5)
    drafter.save_pretrained(tmp_path / "d")  # same path, same flags, new weights
    run_bench(cfg, io.StringIO())
    files = sorted((tmp_path / "runs" / "bench").glob("*.jsonl"))
    assert len(files) == 2
    headers = [json.loads(f.read_text().splitlines()[0])["config"]["content"] for f in files]
    assert headers[0]["drafter"] != headers[1]["drafter"] and headers[0]["target"] == headers[1]["target"]
