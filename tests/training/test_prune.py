"""`d3d prune` on a tiny model: the cheapest layer goes, stages resume from the log, bad input fails clearly."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from d3d.cli import main
from d3d.errors import D3DError
from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import DecodeStats, GenerationConfig, autoregressive_decode
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.models.decoder import load_decoder
from d3d.models.drafter import WEIGHTS_NAME, Drafter
from d3d.training.prune import PruneConfig, Pruner, prune
from d3d.training.train import train
from tests.training.test_train import tiny_config


def write_target_rows(path, target, count: int, seed: int) -> None:
    """Rows whose responses are the tiny target's own greedy continuations (what a drafter learns)."""
    g = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        prompt = g.integers(5, 90, 4).tolist()
        stats = DecodeStats("ar")
        chunks = autoregressive_decode(target, torch.tensor([prompt]), GenerationConfig(max_new_tokens=16),
                                       StopChecker(16, ()), stats)
        response = [t for chunk in chunks for t in chunk]
        rows.append({"id": f"{seed}-{i}", "source": "test", "prompt_ids": prompt, "response_ids": response})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def trained_drafter(tmp_path_factory, tiny_llama_dir):
    """A 3-layer drafter trained on the target's outputs until its layers matter; its middle layer
    is then made an identity (removing it costs exactly nothing)."""
    root = tmp_path_factory.mktemp("prune")
    target = load_decoder(tiny_llama_dir)
    write_target_rows(root / "data.jsonl", target, count=48, seed=0)
    write_target_rows(root / "layer_dev.jsonl", target, count=6, seed=1)
    write_target_rows(root / "select_dev.jsonl", target, count=6, seed=2)
    cfg = tiny_config(root, tiny_llama_dir, num_layers=3, max_steps=80, lr=1e-2, dev_data=[str(root / "layer_dev.jsonl")])
    out = train(cfg)
    weights = load_file(str(out / WEIGHTS_NAME))
    for name in ("model.layers.1.self_attn.o_proj.weight", "model.layers.1.mlp.down_proj.weight"):
        weights[name].zero_()  # layer 1 now adds nothing to the residual stream: removing it costs nothing
    save_file(weights, str(out / WEIGHTS_NAME), metadata={"format": "pt"})
    return root, out


def prune_config(root, drafter, **overrides) -> PruneConfig:
    settings = dict(drafter=str(drafter), output_dir=str(root / "pruned"), select_dev=[str(root / "select_dev.jsonl")],
                    min_layers=2, recovery_steps=2, eval_prompts=4, max_new_tokens=8, speed_prompts=2, save_every=1,
                    save_dtype="bfloat16")
    return PruneConfig(**(settings | overrides))


def log_of(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]


def walked_tau(drafter: Drafter, rows: list[dict]) -> float:
    """Greedy sync tau computed without the pruner's code: walk each stored greedy response, one
    single-pass draft (`DrafterSource`, as decoding drafts) per round, accepting the drafted prefix
    that matches the response; every round appends its accepted tokens plus the target's own."""
    source = DrafterSource(drafter, SamplingConfig())
    rounds = tokens = 0
    for row in rows:
        ids, p, t = row["prompt_ids"] + row["response_ids"], len(row["prompt_ids"]), len(row["response_ids"])
        s = 0  # response tokens committed after the first (the prefill's)
        while s < t - 1:
            n = min(drafter.block_size - 1, t - 1 - s)
            source.start(p + t + drafter.block_size)
            draft = source.propose(torch.tensor([ids[: p + s + 1]]), n).tokens.tolist()
            truth = ids[p + s + 1 : p + s + 1 + n]
            accepted = next((i for i, (d, r) in enumerate(zip(draft, truth)) if d != r), n)
            step = min(accepted + 1, t - 1 - s)
            rounds, tokens, s = rounds + 1, tokens + step, s + step
    return tokens / rounds


def test_a_stage_removes_the_cheapest_layer_and_resumes_from_its_log(trained_drafter, tiny_llama_dir):
    root, drafter_dir = trained_drafter
    before = (drafter_dir / WEIGHTS_NAME).read_bytes()
    final = prune(prune_config(root, drafter_dir))
    log = log_of(root / "pruned")
    stage0 = next(r for r in log if r["kind"] == "stage" and r["stage"] == 0)
    ablations = {r["layer"]: r for r in log if r["kind"] == "ablation" and r["stage"] == 1}
    assert sorted(ablations) == [0, 1, 2]
    # the ablations are real measurements: recomputed here by other code (real single-pass drafts
    # walked along the layer-choice rows the pruner uses), the drafter minus each layer gives the
    # logged tau, and the identity layer's removal changes nothing at all
    pruner = Pruner(prune_config(root, drafter_dir))
    rows = [json.loads(line) for line in (root / "layer_dev.jsonl").read_text().splitlines()][:4]  # eval_prompts
    full = pruner.load(drafter_dir)
    assert stage0["tau_layer_dev"] == pytest.approx(walked_tau(full, rows))
    for layer, record in ablations.items():
        without = pruner.load(drafter_dir, [i for i in (0, 1, 2) if i != layer])
        assert record["tau"] == pytest.approx(walked_tau(without, rows))
        assert record["dev_loss_diff"] == pytest.approx(pruner.dev_loss(without), rel=1e-6)
    assert ablations[1]["tau"] == pytest.approx(stage0["tau_layer_dev"])
    assert ablations[1]["dev_loss_diff"] == pytest.approx(pruner.dev_loss(full), rel=1e-6)
    # the layer removed is the one whose removal costs least: highest tau, then lowest dev loss
    cheapest = max(ablations, key=lambda i: (ablations[i]["tau"], -ablations[i]["dev_loss_diff"]))
    stage1 = next(r for r in log if r["kind"] == "stage" and r["stage"] == 1)
    assert stage1["removed"] == cheapest and stage1["tau_removed"] == ablations[cheapest]["tau"]
    assert stage1["layers"] == [i for i in (0, 1, 2) if i != cheapest]
    assert all(k in stage1 for k in ("tau_layer_dev", "tau_select", "speedup", "recovery_s"))
    chosen = log[-1]
    assert chosen["kind"] == "select" and chosen["speedup"] == max(stage0["speedup"], stage1["speedup"])
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_pretrained(final, target=target)
    assert drafter.config.layers == chosen["layers"] and drafter.config.pruning["chosen"] == chosen["stage"]
    assert (drafter_dir / WEIGHTS_NAME).read_bytes() == before  # the input drafter is never written
    assert {v.dtype for v in load_file(str(final / WEIGHTS_NAME)).values()} == {torch.bfloat16}

    # resuming one layer deeper reuses every logged measurement and adds only stage 2
    prune(prune_config(root, drafter_dir, min_layers=1))
    log2 = log_of(root / "pruned")
    assert log2[: len(log) - 1] == log[:-1]
    new = log2[len(log):]
    assert sorted(r["layer"] for r in new if r["kind"] == "ablation") == stage1["layers"]
    assert [r["stage"] for r in new if r["kind"] == "stage"] == [2]


def test_bad_input_fails_clearly_and_leaves_the_checkpoint_intact(trained_drafter, tmp_path, tiny_llama_dir, capsys):
    root, drafter_dir = trained_drafter
    with pytest.raises(D3DError, match="at least 1 layer"):
        prune(prune_config(root, drafter_dir, min_layers=0, output_dir=str(tmp_path / "a")))
    with pytest.raises(D3DError, match="disjoint"):
        prune(prune_config(root, drafter_dir, select_dev=[str(root / "layer_dev.jsonl")], output_dir=str(tmp_path / "b")))
    untrained = tmp_path / "untrained"
    Drafter.from_base(tiny_llama_dir, [0, 1], 4, 96, "", target=load_decoder(tiny_llama_dir)).save_pretrained(untrained)
    with pytest.raises(D3DError, match="no training config"):
        prune(prune_config(root, untrained, output_dir=str(tmp_path / "c")))
    corrupt = tmp_path / "corrupt"
    shutil.copytree(drafter_dir, corrupt)
    (corrupt / WEIGHTS_NAME).write_bytes(b"not safetensors")
    code = main(["prune", "--drafter", str(corrupt), "--output-dir", str(tmp_path / "d"),
                 "--select-dev", str(root / "select_dev.jsonl"), "--recovery-steps", "1"])
    assert code == 2 and "cannot read drafter weights" in capsys.readouterr().err
    assert (corrupt / WEIGHTS_NAME).read_bytes() == b"not safetensors" and not (tmp_path / "d" / "drafter").exists()


def test_shallowest_selection_with_real_tau_keeps_the_last_stage_untimed(trained_drafter, tmp_path):
    root, drafter_dir = trained_drafter
    final = prune(prune_config(root, drafter_dir, output_dir=str(tmp_path / "p"), measure="real", select="shallowest",
                               recovery_steps=1))
    log = log_of(tmp_path / "p")
    stages = [r for r in log if r["kind"] == "stage"]
    assert [len(s["layers"]) for s in stages] == [3, 2] and all(s["speedup"] == 0.0 for s in stages)
    assert log[-1]["kind"] == "select" and log[-1]["stage"] == 1 and str(final).endswith("drafter")
    pruner = Pruner(prune_config(root, drafter_dir, output_dir=str(tmp_path / "p"), measure="real"))
    ablation = next(r for r in log if r["kind"] == "ablation" and r["layer"] == 0)
    assert ablation["tau"] == pytest.approx(pruner.tau(pruner.load(drafter_dir, [1, 2]), pruner.layer_dev))


def test_recovery_keeps_the_runs_precision_unless_told(trained_drafter, tmp_path):
    root, drafter_dir = trained_drafter
    saved = json.loads((drafter_dir / "drafter_config.json").read_text())["drafter"]["training"]["mixed_precision"]
    inherited = Pruner(prune_config(root, drafter_dir, output_dir=str(tmp_path / "a"))).train_cfg
    assert inherited.mixed_precision == saved
    override = "bf16" if saved != "bf16" else "no"
    told = Pruner(prune_config(root, drafter_dir, output_dir=str(tmp_path / "b"), mixed_precision=override)).train_cfg
    assert told.mixed_precision == override and told.lr == inherited.lr
    with pytest.raises(D3DError, match="mixed precision"):
        prune(prune_config(root, drafter_dir, output_dir=str(tmp_path / "c"), mixed_precision="fp8"))
