"""`d3d prune`: acceptance-guided layer pruning with distillation (DESIGN.md, paper 3.3 and appendix A).

Starting from a trained drafter, each stage

1. measures validation tau with each remaining layer removed (no training: the drafter minus that
   layer, weights and drafting vocabulary as they are) on the *layer-choice* dev set (by default
   offline: simulated on the stored greedy responses, `d3d.inference.offline`, seconds per layer), and removes the layer whose removal
   costs least (highest tau; ties broken by the lower dev diffusion loss);
2. recovery-trains the pruned drafter with L_diff + lambda * L_AR + L_KL, distilling from the frozen
   unpruned drafter through the adjusted teacher (`losses.py`), by running `d3d train` on the
   drafter's own training data with `init` = the pruned drafter and `teacher` = the original;
3. re-measures tau on the layer-choice set and, on the disjoint *selection* dev set, tau and the
   decoding speedup (synchronous D3D against plain decoding, interleaved prompt by prompt).

Stages repeat down to `min_layers`, or until tau after recovery falls below `tau_floor`. The final
drafter is the stage (the unpruned drafter included) with the best measured speedup on the
selection set, not the shallowest one; it is copied to `<output_dir>/drafter` with the pruning
record in its config.

Run folder:

    prune_config.json         the run's settings (checked when it resumes)
    log.jsonl                 "kind": start | ablation | stage | select, one JSON object per line
    stage-<k>/init/           the drafter with the stage's layer removed (recovery's starting point)
    stage-<k>/run/            the recovery training run (checkpoints, log, drafter/)
    drafter/                  the chosen drafter

Every measurement is logged as soon as it is taken, and a rerun of the same command skips what
the log already holds (an ablation, a finished stage) and resumes an interrupted recovery run
from its last checkpoint. The input drafter is only read, never written.

    from d3d.training.prune import PruneConfig, prune
    prune(PruneConfig(drafter="runs/smollm2-4l/drafter", output_dir="runs/prune", select_dev=["dev2.jsonl"]))
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from d3d.errors import D3DError
from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import DecodeStats, GenerationConfig, autoregressive_decode, now, speculative_decode
from d3d.inference.offline import offline_acceptance
from d3d.inference.pipeline import default_dtype
from d3d.inference.stopping import StopChecker
from d3d.jsonl import JsonlFile
from d3d.models.decoder import DecoderModel, load_decoder
from d3d.models.drafter import Drafter, load_drafter_body, read_draft_vocab, read_drafter_config
from d3d.training.losses import LossConfig
from d3d.training.packing import Example, PackingConfig, load_examples
from d3d.training.resolve import resolve_models
from d3d.training.train import train
from d3d.training.train_config import MIXED_PRECISION, TrainConfig
from d3d.training.validation import dev_losses, measure_tau

LOG_NAME = "log.jsonl"
CONFIG_NAME = "prune_config.json"
RESUME_FIELDS = ("drafter", "layer_dev", "select_dev", "eval_prompts", "max_new_tokens")  # must match to resume


@dataclass
class PruneConfig:
    """One pruning run."""

    drafter: str  # trained drafter directory (its config must hold the training settings)
    output_dir: str = "runs/prune"  # stages, log and the chosen drafter
    select_dev: list[str] = field(default_factory=list)  # dev rows for the checkpoint choice (disjoint from layer_dev)
    layer_dev: list[str] = field(default_factory=list)  # dev rows for the layer choice (empty: the training run's dev data)
    data: list[str] = field(default_factory=list)  # recovery training rows (empty: the training run's data)
    target: str | None = None  # target model (None: the training run's)
    min_layers: int = 1  # stop at this depth
    tau_floor: float = 0.0  # stop when tau after recovery falls below this (0 = never)
    recovery_steps: int = 100  # optimizer steps of recovery training per stage
    lr: float | None = None  # recovery learning rate (None: the training run's)
    eval_prompts: int = 8  # dev prompts decoded for each tau (both sets)
    max_new_tokens: int = 64  # tokens generated per dev prompt
    speed_prompts: int = 4  # selection-set prompts decoded for the speedup (each by ar and sync)
    save_every: int = 25  # recovery checkpoints every N steps
    save_dtype: str = "float32"  # dtype of the chosen drafter's stored weights (bfloat16 halves the file)
    measure: str = "offline"  # tau for layer choice and stages: offline (simulated on greedy dev rows, seconds) or real
    select: str = "speedup"  # final stage: speedup (the fastest, timed) or shallowest (the last stage; no timing)
    mixed_precision: str | None = None  # recovery training's autocast (None: the training run's; auto, bf16, fp16, no)

    def validate(self) -> None:
        if self.min_layers < 1:
            raise D3DError(f"target depth must be at least 1 layer, got {self.min_layers}")
        if self.recovery_steps < 0 or self.eval_prompts < 1 or self.speed_prompts < 1 or self.max_new_tokens < 1:
            raise D3DError("recovery steps must be >= 0; eval prompts, speed prompts and max new tokens >= 1")
        if self.save_dtype not in ("float32", "bfloat16", "float16"):
            raise D3DError(f"save dtype must be float32, bfloat16 or float16, got {self.save_dtype}")
        if self.measure not in ("offline", "real") or self.select not in ("speedup", "shallowest"):
            raise D3DError("measure must be offline or real, select speedup or shallowest")
        if self.mixed_precision not in (None, *MIXED_PRECISION):
            raise D3DError(f"mixed precision must be one of {', '.join(MIXED_PRECISION)}, got {self.mixed_precision}")
        if not self.select_dev:
            raise D3DError("pass --select-dev: a dev set for the checkpoint choice, disjoint from the layer-choice set")


@dataclass
class Stage:
    """A drafter of the pruning path and what was measured on it."""

    index: int  # 0 = the unpruned drafter
    path: str  # its drafter directory
    layers: list[int]  # its layers (ids of the original model)
    removed: int | None = None  # the layer this stage removed
    tau_removed: float | None = None  # layer-set tau right after removal, before recovery
    tau_layer_dev: float = 0.0  # layer-set tau (after recovery)
    tau_select: float = 0.0  # selection-set tau
    speedup: float = 0.0  # selection-set sync speedup over plain decoding
    recovery_s: float = 0.0  # wall time of the recovery training


def say(message: str) -> None:
    tqdm.write(f"[d3d prune] {message}", file=sys.stderr)


class PruneLog:
    """Append-only JSONL log; its records are the run's resumable state (a torn last line is dropped)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = JsonlFile(path, what="pruning log")
        self.records = self.file.read()

    def write(self, record: dict) -> None:
        self.records.append(record)
        self.file.append(record)

    def find(self, kind: str, **match) -> dict | None:
        for record in self.records:
            if record["kind"] == kind and all(record.get(k) == v for k, v in match.items()):
                return record
        return None


class Pruner:
    """The pruning loop (driven by `prune`)."""

    def __init__(self, cfg: PruneConfig) -> None:
        cfg.validate()
        self.cfg = cfg
        self.out = Path(cfg.output_dir)
        self.drafter_cfg, _ = read_drafter_config(cfg.drafter)  # a corrupt config is a D3DError here
        self.training = self._training_settings()
        self.train_cfg = self._base_train_config()
        self.facts = resolve_models(self.train_cfg)
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.target: DecoderModel = load_decoder(self.facts.target_dir, dtype=default_dtype(device), device=device)
        Drafter.from_pretrained(cfg.drafter, target=self.target)  # corrupt weights fail here, before any work
        self.layer_dev = self._dev(cfg.layer_dev or self.training.get("dev_data") or [], "layer-choice")
        self.select_dev = self._dev(cfg.select_dev, "selection")
        _check_disjoint(self.layer_dev, self.select_dev)
        labels = self.drafter_cfg.labels
        self.packing = PackingConfig(self.drafter_cfg.block_size, self.train_cfg.num_anchors, self.facts.mask_token_id,
                                     labels)
        self.loss = LossConfig(self.drafter_cfg.block_size, self.train_cfg.lambda_ar, self.train_cfg.gamma,
                               labels=labels, block_attention=self.drafter_cfg.block_attention)

    # -- setup ------------------------------------------------------------------------------

    def _training_settings(self) -> dict:
        training = self.drafter_cfg.training
        if not training or not training.get("data"):
            raise D3DError(
                f"drafter {self.cfg.drafter} has no training config (it was not trained with d3d train): pruning "
                "recovery needs its training settings and data"
            )
        return training

    def _base_train_config(self) -> TrainConfig:
        known = {f.name for f in fields(TrainConfig)}
        settings = {k: v for k, v in self.training.items() if k in known}
        data = self.cfg.data or settings["data"]
        missing = [p for p in data if not Path(p).exists()]
        if missing:
            raise D3DError(f"training data not found: {', '.join(missing)} (pass --data)")
        settings.update(
            data=list(data), dev_data=[], target=self.cfg.target or settings.get("target"), init=self.cfg.drafter,
            layers=None, num_layers=0, teacher=self.cfg.drafter, max_steps=self.cfg.recovery_steps or 1,
            warmup_steps=min(10, max(1, self.cfg.recovery_steps // 10)), eval_every=0, save_every=self.cfg.save_every,
            log_file=None, mask_token_id=self.drafter_cfg.mask_token_id, block_size=self.drafter_cfg.block_size,
            lr=self.cfg.lr or settings.get("lr", 1e-4), freeze_embeddings=self.drafter_cfg.shared_embeddings,
        )
        if self.cfg.mixed_precision is not None:
            settings["mixed_precision"] = self.cfg.mixed_precision
        cfg = TrainConfig(**settings)
        cfg.validate()
        return cfg

    def _dev(self, paths: Sequence[str], name: str) -> list[Example]:
        if not paths:
            raise D3DError(f"no {name} dev set: pass --{'layer' if name == 'layer-choice' else 'select'}-dev")
        missing = [p for p in paths if not Path(p).exists()]
        if missing:
            raise D3DError(f"{name} dev data not found: {', '.join(missing)}")
        rows, report = load_examples(list(paths), self.facts.vocab_size, self.train_cfg.max_length, 1, eval_only_ok=True)
        if not rows:
            raise D3DError(f"the {name} dev set holds no usable rows ({report.summary()})")
        return rows[: self.cfg.eval_prompts]

    # -- measurements -------------------------------------------------------------------------

    def load(self, path: str | Path, keep: list[int] | None = None) -> Drafter:
        """A drafter from `path` (optionally only the layers `keep`), on the target's device."""
        body, config = load_drafter_body(path, keep, self.target.dtype, self.target.device)
        drafter = Drafter(body, type(config)(**{**asdict(config), "layers": list(body.layer_ids),
                                                "run_block_size": 0}))  # a new depth: its run block size unmeasured
        if config.shared_embeddings:
            drafter.share_embeddings_with(self.target)
        drafter.set_draft_vocab(read_draft_vocab(path))  # the ablations draft exactly as the shipped drafter would
        return drafter.eval()

    def tau(self, drafter: Drafter, dev: list[Example]) -> float:
        """Greedy sync tau on `dev`: simulated on the stored greedy responses (offline) or decoded for real."""
        if self.cfg.measure == "offline":
            return offline_acceptance(drafter, [(e.prompt_ids, e.response_ids) for e in dev]).tau_sim
        prompts = [e.prompt_ids for e in dev]
        return measure_tau(self.target, drafter, prompts, self.cfg.max_new_tokens, self.facts.eos_ids)["tau"]

    def dev_loss(self, drafter: Drafter) -> float:
        return dev_losses(drafter.model, self.layer_dev, self.packing, self.loss, self.train_cfg.seed)["dev_loss_diff"]

    def speed(self, drafter: Drafter) -> dict:
        """Selection-set tau and sync speedup over plain decoding (interleaved, same prompts; 0 when not timed)."""
        if self.cfg.select == "shallowest":
            return {"speedup": 0.0, "tau_select": self.tau(drafter, self.select_dev)}
        prompts = self.select_dev[: self.cfg.speed_prompts]
        return measure_speedup(self.target, drafter, [e.prompt_ids for e in prompts], self.cfg.max_new_tokens,
                               self.facts.eos_ids) | {"tau_select": self.tau(drafter, self.select_dev)}

    # -- the loop -----------------------------------------------------------------------------

    def run(self) -> Path:
        self.out.mkdir(parents=True, exist_ok=True)
        self._check_resume()
        self.log = PruneLog(self.out / LOG_NAME)
        if self.log.find("start") is None:
            self.log.write({"kind": "start", "drafter": self.cfg.drafter, "layers": self.drafter_cfg.layers})
        stages = [self._stage_zero()]
        while len(stages[-1].layers) > self.cfg.min_layers:
            if stages[-1].index > 0 and stages[-1].tau_layer_dev < self.cfg.tau_floor:
                say(f"stopping: tau {stages[-1].tau_layer_dev:.3f} fell below the floor {self.cfg.tau_floor}")
                break
            stages.append(self._stage(stages[-1]))
        return self._select(stages)

    def _check_resume(self) -> None:
        file = self.out / CONFIG_NAME
        current = asdict(self.cfg)
        if file.is_file():
            saved = json.loads(file.read_text())
            changed = [k for k in RESUME_FIELDS if saved.get(k) != current[k]]
            if changed:
                raise D3DError(f"{self.out} holds a pruning run with different {', '.join(changed)}: use another --output-dir")
        file.write_text(json.dumps(current, indent=2) + "\n")

    def _stage_zero(self) -> Stage:
        record = self.log.find("stage", stage=0)
        if record is None:
            drafter = self.load(self.cfg.drafter)
            say(f"stage 0: the unpruned drafter ({len(drafter.config.layers)} layers)")
            record = {"kind": "stage", "stage": 0, "path": self.cfg.drafter, "layers": drafter.config.layers,
                      "tau_layer_dev": self.tau(drafter, self.layer_dev), **self.speed(drafter)}
            self.log.write(record)
            self._report(record)
        return _stage_from(record)

    def _stage(self, prev: Stage) -> Stage:
        k = prev.index + 1
        record = self.log.find("stage", stage=k)
        if record is not None:
            return _stage_from(record)
        removed, tau_removed = self._choose_layer(prev, k)
        keep = [i for i in prev.layers if i != removed]
        stage_dir = self.out / f"stage-{k}"
        init = stage_dir / "init"
        if not (init / "drafter_config.json").is_file():
            _save_atomic(self.load(prev.path, keep), init)
        started = time.perf_counter()
        say(f"stage {k}: removed layer {removed}; recovery training for {self.cfg.recovery_steps} steps")
        path = self._recover(init, stage_dir / "run") if self.cfg.recovery_steps else init
        drafter = self.load(path)
        record = {"kind": "stage", "stage": k, "path": str(path), "layers": keep, "removed": removed,
                  "tau_removed": tau_removed, "tau_layer_dev": self.tau(drafter, self.layer_dev), **self.speed(drafter),
                  "recovery_s": round(time.perf_counter() - started, 1)}
        self.log.write(record)
        self._report(record)
        return _stage_from(record)

    def _choose_layer(self, prev: Stage, k: int) -> tuple[int, float]:
        """The layer whose removal costs least: highest layer-set tau, then lowest dev diffusion loss."""
        scores = {}
        for layer in prev.layers:
            record = self.log.find("ablation", stage=k, layer=layer)
            if record is None:
                drafter = self.load(prev.path, [i for i in prev.layers if i != layer])
                record = {"kind": "ablation", "stage": k, "layer": layer, "tau": self.tau(drafter, self.layer_dev),
                          "dev_loss_diff": self.dev_loss(drafter)}
                self.log.write(record)
                say(f"stage {k}: without layer {layer}: tau {record['tau']:.3f}, dev loss {record['dev_loss_diff']:.3f}")
            scores[layer] = (record["tau"], -record["dev_loss_diff"])
        best = max(scores, key=lambda layer: scores[layer])
        return best, scores[best][0]

    def _recover(self, init: Path, run_dir: Path) -> Path:
        settings = asdict(self.train_cfg) | {"init": str(init), "output_dir": str(run_dir)}
        return train(TrainConfig(**settings))

    def _report(self, r: dict) -> None:
        say(f"stage {r['stage']}: {len(r['layers'])} layers, tau {r['tau_layer_dev']:.3f} (layer set) "
            f"{r['tau_select']:.3f} (selection set), " + (f"speedup {r['speedup']:.2f}x" if r["speedup"] else "untimed"))

    def _select(self, stages: list[Stage]) -> Path:
        best = stages[-1] if self.cfg.select == "shallowest" else max(stages, key=lambda s: s.speedup)
        final = self.out / "drafter"
        drafter = self.load(best.path)
        drafter.config.training = read_drafter_config(best.path)[0].training
        drafter.config.pruning = {"source": self.cfg.drafter, "stages": [asdict(s) for s in stages], "chosen": best.index}
        _save_atomic(drafter, final, getattr(torch, self.cfg.save_dtype))
        self.log.write({"kind": "select", "stage": best.index, "layers": best.layers, "speedup": best.speedup,
                        "path": str(final)})
        say(f"chose stage {best.index} ({len(best.layers)} layers, {self.cfg.select}): {final}")
        return final


def _stage_from(record: dict) -> Stage:
    names = {f.name for f in fields(Stage)}
    return Stage(index=record["stage"], **{k: v for k, v in record.items() if k in names and k != "index"})


def _check_disjoint(a: list[Example], b: list[Example]) -> None:
    prompts = {tuple(e.prompt_ids.tolist()) for e in a}
    shared = sum(tuple(e.prompt_ids.tolist()) in prompts for e in b)
    if shared:
        raise D3DError(f"the layer-choice and selection dev sets share {shared} prompts: they must be disjoint")


def _save_atomic(drafter: Drafter, path: Path, dtype: torch.dtype | None = None) -> None:
    partial = path.parent / f".{path.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    drafter.save_pretrained(partial, dtype)
    if path.exists():
        shutil.rmtree(path)
    partial.rename(path)


def measure_speedup(
    target: DecoderModel, drafter: Drafter, prompts: Sequence[np.ndarray], max_new_tokens: int, eos_ids: Sequence[int]
) -> dict:
    """Greedy sync decoding against plain decoding on the same prompts, alternating which goes first.

    speedup = plain wall time / sync wall time over all prompts (both produce the same tokens).
    """
    times = {"ar": 0.0, "sync": 0.0}
    tokens = 0
    for i, ids in enumerate([prompts[0], *prompts]):  # the first pass is an untimed warm-up
        prompt = torch.as_tensor(np.asarray(ids), dtype=torch.long, device=target.device)[None]
        order = ("ar", "sync") if i % 2 == 0 else ("sync", "ar")
        budget = min(8, max_new_tokens) if i == 0 else max_new_tokens
        for mode in order:
            gen = GenerationConfig(max_new_tokens=budget)
            stop, stats = StopChecker(budget, eos_ids), DecodeStats(mode)
            t0 = now(target.device)
            if mode == "ar":
                chunks = autoregressive_decode(target, prompt, gen, stop, stats)
            else:
                chunks = speculative_decode(target, DrafterSource(drafter, gen.sampling), prompt, gen, stop, stats)
            produced = sum(len(c) for c in chunks)
            if i > 0:
                times[mode] += now(target.device) - t0
                tokens += produced if mode == "ar" else 0
    return {"speedup": times["ar"] / times["sync"] if times["sync"] else 0.0, "speed_tokens": tokens,
            "ar_tokens_per_s": tokens / times["ar"] if times["ar"] else 0.0}


def prune(cfg: PruneConfig) -> Path:
    """Run (or resume) pruning; returns the chosen drafter's directory."""
    return Pruner(cfg).run()
