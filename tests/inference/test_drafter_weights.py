"""`--drafter-weights`: the drafter's runtime weight format apart from the target's. It changes what
the drafter proposes (acceptance), never the output: every mode still equals plain decoding."""

from __future__ import annotations

import io
import json

import pytest
import torch
from torch import nn

from d3d.cli import build_parser, main
from d3d.errors import D3DError
from d3d.inference import pipeline
from d3d.inference.async_engine import AsyncConfig
from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import GenerationConfig, speculative_decode
from d3d.inference.pipeline import Pipeline, load_drafter, load_target, worker_drafter
from d3d.inference.sampling import SamplingConfig
from d3d.models import hub, quantize
from d3d.models.drafter import Drafter
from d3d.models.quantize import Int8Linear
from tests.helpers import assert_follows, count_positions, exact_marginals, run_decode, small_vocab_target

PROMPTS = ("w10 w11 w12 w10 w11 w12", "w40 w9 w40 w9", "w77 w78 w79 w80")


def projections(model) -> list[nn.Module]:
    """Every layer projection of a `DecoderModel` (what `quantize_decoder` replaces)."""
    return [m for layer in model.model.layers for parent in (layer.self_attn, layer.mlp) for m in parent.children()
            if isinstance(m, (nn.Linear, Int8Linear))]


def assert_lossless(pipe: Pipeline, modes: tuple[str, ...]) -> None:
    cfg = GenerationConfig(max_new_tokens=20)
    for words in PROMPTS:
        ids = pipe.target.encode_chat(words)
        ar, _ = pipe.generate(ids, "ar", cfg)
        for mode in modes:
            assert pipe.generate(ids, mode, cfg)[0] == ar, (mode, words)


def test_int8_drafter_on_a_dense_target_equals_plain_decoding(tiny_chat_model_dir, monkeypatch):
    """float32 target, int8 drafter layers (5 weight levels: another drafter than the dense one), the
    shared LM head the target's dense one: greedy sync, async and tree equal plain decoding."""
    monkeypatch.setattr(quantize, "INT8_MAX", 2)
    pipe = Pipeline.load(str(tiny_chat_model_dir), drafter="untrained", block_size=4, dtype="float32",
                         async_config=AsyncConfig(backend="thread"), drafter_weights="int8")
    choice, target = pipe.drafter, pipe.target.model
    drafter = choice.drafter.model
    assert choice.weights == "int8" and "runtime weights int8 (the target's: dense)" in choice.description
    assert all(isinstance(m, Int8Linear) for m in projections(drafter))
    assert all(type(m) is nn.Linear for m in projections(target)) and pipe.target.weights == "dense"
    assert type(drafter.lm_head) is nn.Linear and drafter.lm_head.weight is target.lm_head.weight
    dense = Pipeline.load(str(tiny_chat_model_dir), drafter="untrained", block_size=4, dtype="float32").drafter
    ids = torch.randint(0, 90, (1, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():  # the int8 drafter proposes from other logits than the dense one
        int8_logits = choice.drafter.draft_logits(choice.drafter.new_cache(), ids)
        assert not torch.allclose(int8_logits, dense.drafter.draft_logits(dense.drafter.new_cache(), ids))
    assert "runtime weights" not in dense.description and dense.weights == "dense"
    assert_lossless(pipe, ("sync", "async", "tree"))
    pipe.close()


def test_dense_drafter_on_an_int8_target_equals_plain_decoding(tiny_chat_model_dir):
    pipe = Pipeline.load(str(tiny_chat_model_dir), drafter="untrained", block_size=4, dtype="float32",
                         weights="int8", drafter_weights="dense")
    drafter, target = pipe.drafter.drafter.model, pipe.target.model
    assert all(isinstance(m, Int8Linear) for m in projections(target))
    assert all(type(m) is nn.Linear for m in projections(drafter)) and pipe.drafter.weights == "dense"
    assert drafter.lm_head is target.lm_head and isinstance(drafter.lm_head, Int8Linear)  # the shared head: int8
    assert "runtime weights dense (the target's: int8)" in pipe.drafter.description
    assert_lossless(pipe, ("sync", "tree"))


@pytest.mark.parametrize("weights, drafter_weights", [("dense", "int8"), ("int8", "dense"), ("int8", "auto")])
def test_drafting_vocabulary_projects_through_the_shared_head(tiny_chat_model_dir, weights, drafter_weights):
    """The drafting vocabulary selects rows of the shared LM head in its own format (dense rows under
    int8 layers, int8 rows under dense layers): the same logits on those rows as the full head's."""
    pipe = Pipeline.load(str(tiny_chat_model_dir), drafter="untrained", block_size=4, dtype="float32",
                         weights=weights, drafter_weights=drafter_weights)
    drafter = pipe.drafter.drafter
    hidden = torch.randn(2, 64, generator=torch.Generator().manual_seed(0))
    full = drafter.project(hidden)
    drafter.set_draft_vocab(torch.arange(10, 40))
    sub = drafter.project(hidden)
    assert torch.isinf(sub[:, :10]).all() and torch.isinf(sub[:, 40:]).all()
    torch.testing.assert_close(sub[:, 10:40], full[:, 10:40])
    assert_lossless(pipe, ("sync",))


def save_unshared_drafter(model_dir, path):
    """A drafter with its own embeddings and LM head (not the target's), drafting from 30 tokens."""
    target = load_target(str(model_dir), "cpu", torch.float32)
    drafter = Drafter.from_base(model_dir, [0, 1], 4, hub.choose_mask_token_id(target.tokenizer),
                                hub.tokenizer_fingerprint(target.tokenizer))
    drafter.set_draft_vocab(torch.arange(0, 97, 3))
    drafter.save_pretrained(path)
    return path


def test_an_unshared_head_takes_the_drafters_format(tiny_chat_model_dir, tmp_path):
    """A drafter with its own LM head quantizes it with its layers (`quantize_decoder`'s head), and
    its drafting vocabulary then projects through int8 rows."""
    path = save_unshared_drafter(tiny_chat_model_dir, tmp_path / "own-head")
    target = load_target(str(tiny_chat_model_dir), "cpu", torch.float32)
    choice = load_drafter(target, str(path), weights="int8")
    head = choice.drafter.model.lm_head
    assert isinstance(head, Int8Linear) and type(target.model.lm_head) is nn.Linear
    assert all(isinstance(m, Int8Linear) for m in projections(choice.drafter.model))
    assert choice.drafter.draft_vocab is not None
    pipe = Pipeline(target, str(path), drafter_weights="int8")
    assert_lossless(pipe, ("sync", "tree"))


def test_the_drafting_worker_loads_the_same_int8_drafter(tiny_chat_model_dir):
    """What a worker process calls (the pipeline's remote drafter factory) loads the int8 drafter too."""
    pipe = Pipeline.load(str(tiny_chat_model_dir), block_size=4, device="cpu", dtype="float32", drafter_weights="int8")
    here = pipe.drafter.drafter
    remote = pipe.async_runner.remote
    assert remote.func is worker_drafter
    there = remote()
    assert all(isinstance(m, Int8Linear) for m in projections(there.model)) and type(there.model.lm_head) is nn.Linear
    ids = torch.randint(0, 90, (1, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(there.draft_logits(there.new_cache(), ids), here.draft_logits(here.new_cache(), ids))
    pipe.close()


def test_sampling_with_an_int8_drafter_preserves_the_target_distribution(tmp_path):
    """A float64 target beside its own first layer as an int8 drafter (the head shared, dense, as
    `load_drafter` leaves it): positions 1 and 2 are speculative (drafted, recovered or the bonus)."""
    target = small_vocab_target(tmp_path, layers=2)
    drafter = Drafter.from_base(tmp_path, [0], 4, 11, "", target=target, dtype=torch.float64)
    quantize.quantize_decoder(drafter.model, "int8", head=False)
    assert all(isinstance(m, Int8Linear) for m in projections(drafter.model))
    assert type(drafter.model.lm_head) is nn.Linear
    sampling, depth, n_runs = SamplingConfig(temperature=1.3, top_k=4, top_p=0.95), 3, 1200
    p = torch.tensor([[1, 2, 3]])
    want = exact_marginals(target, p, sampling, depth)
    outputs, accepted = [], 0
    for seed in range(n_runs):
        cfg = GenerationConfig(max_new_tokens=depth, sampling=sampling, seed=seed)
        source = DrafterSource(drafter, cfg.sampling, torch.Generator().manual_seed(10_000 + seed))
        out, stats = run_decode(speculative_decode, target, source, p, cfg=cfg)
        outputs.append(out)
        accepted += sum(k * n for k, n in enumerate(stats.accept_hist))
    assert accepted > n_runs // 4  # drafted tokens were accepted, not only recovered
    counts = count_positions(outputs, depth, 12)
    for k in (1, 2):
        assert_follows(counts[k], want[k], f"position {k}")


def test_a_bad_drafter_weight_format_is_a_d3d_error(tiny_chat_model_dir):
    target = load_target(str(tiny_chat_model_dir), "cpu", torch.float32)
    with pytest.raises(D3DError, match="unknown drafter weight format 'int4'"):
        Pipeline(target, drafter_weights="int4")
    with pytest.raises(D3DError, match="unknown drafter weight format 'int4'"):
        load_drafter(target, weights="int4")


# --- the command line ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["generate", "--prompt", "w9"], ["bench"], ["serve"]])
def test_the_flag_parses_and_rejects_bad_values(command):
    parser = build_parser()
    assert parser.parse_args(command).drafter_weights == "auto"
    assert parser.parse_args([*command, "--drafter-weights", "int8"]).drafter_weights == "int8"
    with pytest.raises(SystemExit):  # argparse's own message for a value outside the choices
        parser.parse_args([*command, "--drafter-weights", "int4"])


def test_generate_passes_the_flag_to_the_pipeline(tiny_chat_model_dir, capsys, monkeypatch):
    loaded = []
    monkeypatch.setattr(pipeline, "load_drafter", lambda *a, **kw: loaded.append(load_drafter(*a, **kw)) or loaded[-1])
    code = main(["generate", "--prompt", "w10 w11 w12", "--target", str(tiny_chat_model_dir), "--max-new-tokens", "12",
                 "--block-size", "4", "--dtype", "float32", "--drafter-weights", "int8", "--compare", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert all(isinstance(m, Int8Linear) for m in projections(loaded[0].drafter.model))
    assert "runtime weights int8 (the target's: dense)" in captured.err
    assert "identical output: yes" in captured.out and json.loads(captured.out.splitlines()[-1])["identical"] is True


def test_bench_passes_the_flag_to_the_pipeline(tiny_chat_model_dir, tmp_path, monkeypatch):
    import d3d.evaluation.bench as bench

    suite = tmp_path / "prompts.jsonl"
    suite.write_text(json.dumps({"id": "p0", "prompt": "w10 w11"}) + "\n")
    seen, run_bench = [], bench.run_bench
    monkeypatch.setattr(bench, "run_bench", lambda cfg: seen.append(cfg) or {})
    argv = ["bench", "--suite", str(suite), "--target", str(tiny_chat_model_dir), "--drafter-weights", "int8"]
    assert main(argv) == 0
    assert seen[0].drafter_weights == "int8"
    summary = run_bench(bench.BenchConfig(
        suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=8, device="cpu", dtype="float32",
        block_size=4, drafter_weights="int8", out=str(tmp_path / "r.jsonl")), io.StringIO())
    assert "runtime weights int8" in summary["sync"]["drafter"] and summary["sync"]["identical"] is True
    assert bench.BenchConfig(drafter_weights="int8").results_key()["drafter_weights"] == "int8"
    assert "drafter_weights" not in bench.BenchConfig().results_key()  # older results files keep their key


def test_serve_passes_the_flag_to_its_drafter(tiny_chat_model_dir, monkeypatch):
    import d3d.serving.server as server

    seen = []
    monkeypatch.setattr(server, "run_server", lambda cfg: seen.append(cfg) or 0)
    assert main(["serve", "--target", str(tiny_chat_model_dir), "--drafter-weights", "int8"]) == 0
    assert seen[0].drafter_weights == "int8"
    cfg = server.ServeConfig(target=str(tiny_chat_model_dir), dtype="float32", device="cpu", draft_length="all",
                             drafter_weights="int8")
    log = []
    _, engine = server.build(cfg, log=log.append)
    assert all(isinstance(m, Int8Linear) for m in projections(engine.decoder.drafter.model))
    assert any("runtime weights int8" in line for line in log)
    with pytest.raises(D3DError, match="unknown drafter weight format"):
        server.ServeConfig(drafter_weights="int4").validate()
