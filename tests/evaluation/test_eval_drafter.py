"""`d3d eval-drafter`: offline acceptance from the command line, the real check beside it, `--save`,
and bad input as one line with exit status 2."""

from __future__ import annotations

import json

import torch

from d3d.cli import main
from d3d.inference.engine import DecodeStats, GenerationConfig, autoregressive_decode
from d3d.inference.stopping import StopChecker
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter


def greedy_rows(target, count: int, max_new: int = 12) -> list[dict]:
    """Rows whose responses are the target's greedy output (float32, as eval-drafter runs it)."""
    g = torch.Generator().manual_seed(0)
    rows = []
    for i in range(count):
        prompt = torch.randint(5, 90, (1, 6), generator=g)
        chunks = autoregressive_decode(target, prompt, GenerationConfig(max_new_tokens=max_new),
                                       StopChecker(max_new, ()), DecodeStats("ar"))
        rows.append({"id": str(i), "prompt_ids": prompt[0].tolist(), "response_ids": [t for c in chunks for t in c]})
    return rows


def test_eval_drafter_reports_saves_and_matches_real_decoding(tiny_chat_model_dir, tmp_path, capsys):
    target = load_decoder(tiny_chat_model_dir)
    drafter_dir = tmp_path / "drafter"
    Drafter.from_base(tiny_chat_model_dir, [0, 1, 2, 3], 4, 96, "", target=target,
                      labels="next-token").save_pretrained(drafter_dir)
    data = tmp_path / "dev.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in greedy_rows(target, 3)))
    args = ["eval-drafter", "--target", str(tiny_chat_model_dir), "--drafter", str(drafter_dir), "--data", str(data)]
    assert main(args + ["--compare-real", "--save", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    record = json.loads(out.strip().splitlines()[-1])
    assert record["rows"] == 2 and record["tau_real"] == record["tau_sim"] and record["rows_equal_stored"] == 2
    saved = json.loads((drafter_dir / "acceptance.json").read_text())
    assert len(saved["alpha"]) == 3 and saved["calibration"]["edges"][-1] == 1.0 and saved["data"] == str(data)
    assert "tau (simulated sync)" in out


def test_eval_drafter_measures_the_drafter_at_int8_runtime_weights(tiny_chat_model_dir, tmp_path, capsys, monkeypatch):
    """`--drafter-weights int8` evaluates the drafter an int8 run would draft with (its layers int8, the
    target dense), and the record says which weights it measured."""
    import d3d.inference.pipeline as pipeline
    from d3d.models.quantize import Int8Linear

    target = load_decoder(tiny_chat_model_dir)
    drafter_dir = tmp_path / "drafter"
    Drafter.from_base(tiny_chat_model_dir, [0, 1], 4, 96, "", target=target).save_pretrained(drafter_dir)
    data = tmp_path / "dev.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in greedy_rows(target, 2)))
    loaded = []
    real_load = pipeline.load_drafter
    monkeypatch.setattr(pipeline, "load_drafter", lambda *a, **k: loaded.append(real_load(*a, **k)) or loaded[-1])
    records = {}
    for weights in ("auto", "int8"):
        assert main(["eval-drafter", "--target", str(tiny_chat_model_dir), "--drafter", str(drafter_dir),
                     "--data", str(data), "--drafter-weights", weights]) == 0
        records[weights] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert records["auto"]["drafter_weights"] == "dense" and records["int8"]["drafter_weights"] == "int8"
    layers = [choice.drafter.model.model.layers[0].self_attn.qkv_proj for choice in loaded]
    assert type(layers[0]) is torch.nn.Linear and isinstance(layers[1], Int8Linear)


def test_eval_drafter_bad_input_is_one_line(tiny_chat_model_dir, tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code = main(["eval-drafter", "--target", str(tiny_chat_model_dir), "--drafter", str(tmp_path / "none"),
                 "--data", str(empty)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_several_data_files_pool_and_each_file_is_reported_as_if_measured_alone(tiny_chat_model_dir, tmp_path, capsys):
    target = load_decoder(tiny_chat_model_dir)
    drafter_dir = tmp_path / "drafter"
    Drafter.from_base(tiny_chat_model_dir, [0, 1, 2, 3], 4, 96, "", target=target,
                      labels="next-token").save_pretrained(drafter_dir)
    rows = greedy_rows(target, 5, max_new=16)
    first, second = tmp_path / "dev.jsonl", tmp_path / "other.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    second.write_text("".join(json.dumps(r) + "\n" for r in rows[2:]))
    base = ["eval-drafter", "--target", str(tiny_chat_model_dir), "--drafter", str(drafter_dir), "--data"]
    records = {}
    for name, files in (("dev", [first]), ("other", [second]), ("both", [first, second])):
        assert main(base + [str(f) for f in files] + (["--save"] if name == "both" else [])) == 0
        records[name] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    both = records["both"]
    assert both["rows"] == 5 and "by_data" not in records["dev"]
    for name, path in (("dev", first), ("other", second)):
        alone = records[name]
        assert both["by_data"][str(path)] == {k: alone[k] for k in ("tau_sim", "mean_accepted", "alpha", "rows")}
    pooled = (records["dev"]["tokens"] + records["other"]["tokens"]) / (records["dev"]["rounds"] + records["other"]["rounds"])
    assert both["tau_sim"] == pooled
    counts = [a + b for a, b in zip(records["dev"]["calibration"]["count"], records["other"]["calibration"]["count"])]
    assert both["calibration"]["count"] == counts
    saved = json.loads((drafter_dir / "acceptance.json").read_text())
    assert saved["by_data"] == both["by_data"]


def test_group_by_source_reports_each_source_as_if_its_rows_were_measured_alone(tiny_chat_model_dir, tmp_path, capsys):
    """`--group-by source` splits the pooled rows by their `source` field across files (dev+dev2's chat and
    code halves): each source's numbers equal a run on a file of that source's rows alone."""
    target = load_decoder(tiny_chat_model_dir)
    drafter_dir = tmp_path / "drafter"
    Drafter.from_base(tiny_chat_model_dir, [0, 1, 2, 3], 4, 96, "", target=target,
                      labels="next-token").save_pretrained(drafter_dir)
    rows = greedy_rows(target, 6, max_new=16)
    for i, row in enumerate(rows):
        row["source"] = "self-instruct" if i % 3 == 0 else "code_prompts.jsonl"
    files = {name: tmp_path / f"{name}.jsonl" for name in ("dev", "dev2", "chat", "code")}
    parts = {"dev": rows[:4], "dev2": rows[4:], "chat": [r for r in rows if r["source"] == "self-instruct"],
             "code": [r for r in rows if r["source"] != "self-instruct"]}
    for name, part in parts.items():
        files[name].write_text("".join(json.dumps(r) + "\n" for r in part))
    base = ["eval-drafter", "--target", str(tiny_chat_model_dir), "--drafter", str(drafter_dir), "--data"]
    records = {}
    for name, paths, extra in (("chat", ["chat"], []), ("code", ["code"], []),
                               ("split", ["dev", "dev2"], ["--group-by", "source"]), ("files", ["dev", "dev2"], [])):
        assert main(base + [str(files[p]) for p in paths] + extra) == 0
        records[name] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    split = records["split"]
    assert set(split["by_source"]) == {"self-instruct", "code_prompts.jsonl"} and "by_data" not in split
    assert split["by_source"]["self-instruct"]["rows"] == 2 and split["by_source"]["code_prompts.jsonl"]["rows"] == 4
    for name, source in (("chat", "self-instruct"), ("code", "code_prompts.jsonl")):
        alone = records[name]
        assert split["by_source"][source] == {k: alone[k] for k in ("tau_sim", "mean_accepted", "alpha", "rows")}
    assert split["tau_sim"] == records["files"]["tau_sim"] and set(records["files"]["by_data"]) == {
        str(files["dev"]), str(files["dev2"])}
