"""`d3d train`: target-aligned drafter training on Accelerate (DESIGN.md "Training", paper 3.2).

The drafter is a subset of a pretrained causal LM's layers (by default the target's own). Each
micro-batch is a set of packed examples (`packing.py`); the loss is L_diff + lambda * L_AR with
a chunked vocabulary projection (`losses.py`). AdamW, cosine schedule with warmup, gradient
clipping and accumulation, bf16 where the device supports it; the same command runs as one CPU
process or under `accelerate launch` (DDP, FSDP, DeepSpeed). Only the main process logs, saves
the drafter and validates; every collective (state gathering, checkpointing) runs on all.

Run folder (`output_dir`):

    train_config.json               the run's config (checked when the run resumes)
    log.jsonl                       one JSON object per line; "kind": data | train | eval | resume | end
    checkpoints/step-00000500/      accelerate state (model, optimizer, scheduler, RNG) + trainer_state.json
    drafter/                        the latest inference-ready drafter (`Drafter.save_pretrained`)

Resuming is exact: rerun the same command with the same `output_dir`. The newest checkpoint is
loaded, and the data position is restored by skipping the consumed micro-batches of the current
epoch (batches are a pure function of seed, epoch and position, see `packing.py`). Checkpoints are
written to a hidden folder and renamed into place; the last `keep_checkpoints` are kept. Ctrl-C
saves a checkpoint at the last completed step before exiting.

Validation logs the offline acceptance of the dev rows (`d3d.inference.offline`: simulated greedy
sync tau, alpha_j, no target pass), with `eval_real` also the real tau of the first `eval_prompts`
dev prompts decoded greedily with the synchronous engine, and the dev loss parts.

The pieces: `train_config.py` (the settings), `resolve.py` (models, layers, [M] and rows resolved
before the first step), `objective.py` (the module optimised: body + loss, teacher, drafting
vocabulary), `validation.py` (offline and real tau, dev losses). This module is the loop:
progress, checkpoints, logging, resume. It knows nothing about the command line (`train_cli.py`)
or plotting (`plot.py`).

    from d3d.training.train import TrainConfig, train
    train(TrainConfig(data=["data/train.jsonl"], num_layers=4, num_anchors=16, max_steps=100))
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from accelerate import Accelerator
from torch import Tensor, nn
from torch.utils.data import DataLoader
from tqdm import tqdm

from d3d.errors import D3DError
from d3d.inference.pipeline import default_dtype, half_is_slow
from d3d.jsonl import JsonlFile
from d3d.models.decoder import DecoderModel, load_decoder
from d3d.training.interrupts import sigterm_as_interrupt
from d3d.training.losses import LossConfig, VocabSubset
from d3d.training.objective import (DrafterObjective, build_drafter_body, drafter_from_state, init_vocab_ids,
                                    load_teacher, training_vocab)
from d3d.training.packing import PackedDataset, PackingConfig, TokenBudgetBatchSampler, collate, steps_per_epoch
from d3d.training.resolve import ModelFacts, load_data, resolve_models
from d3d.training.train_config import MODEL_FIELDS, TrainConfig
from d3d.training.validation import dev_losses, measure_tau, offline_metrics


STATE_FILE = "trainer_state.json"


CONFIG_FILE = "train_config.json"


@dataclass
class Progress:
    """Where a run stands; saved with every checkpoint."""

    step: int = 0  # optimizer steps done
    epoch: int = 0  # epoch being consumed
    batches: int = 0  # micro-batches of `epoch` this process consumed up to the last optimizer step
    rows: int = 0  # real query rows trained on, all processes, as of the last train log line
    tokens: int = 0  # response tokens trained on (each example's once per pass), as of the last train log line
    seconds: float = 0.0  # training wall time so far (validation and saving excluded)
    cpu_seconds: float = 0.0  # CPU time of those training steps (this process, every thread)


class JsonlLog:
    """Append-only JSON-lines metrics (main process only); a resumed run drops lines past its checkpoint."""

    def __init__(self, path: Path, enabled: bool) -> None:
        self.path, self.enabled = path, enabled
        self.file = JsonlFile(path, what="training log")
        self.kept: list[dict] = []  # the records a resumed run keeps (set by `start`)

    def start(self, resume_step: int | None) -> None:
        if not self.enabled:
            return
        records = self.file.read() if resume_step is not None else []
        self.kept = [r for r in records if r.get("step", 0) <= resume_step]
        self.file.rewrite(self.kept)

    def last(self, kind: str) -> dict | None:
        """The last record of `kind` kept by `start` (a resumed run's history)."""
        return next((r for r in reversed(self.kept) if r.get("kind") == kind), None)

    def write(self, record: dict) -> None:
        if self.enabled:
            self.file.append(record)


class Trainer:
    """One training run: state, loop, validation and checkpoints (driven by `train`)."""

    def __init__(self, cfg: TrainConfig, accelerator: Accelerator, facts: ModelFacts) -> None:
        self.cfg, self.accelerator, self.facts = cfg, accelerator, facts
        self.out = Path(cfg.output_dir)
        self.main = accelerator.is_main_process
        self.progress = Progress()
        self.log = JsonlLog(cfg.log_path, self.main)
        self.packing = PackingConfig(cfg.block_size, cfg.num_anchors, facts.mask_token_id, facts.labels)
        self.loss = LossConfig(cfg.block_size, cfg.lambda_ar, cfg.gamma, cfg.loss_chunk_rows, cfg.diffusion_weight,
                               cfg.kd_delta, facts.labels, facts.block_attention, ce_weight=cfg.ce_weight,
                               kd_weight=cfg.kd_weight, position_weighting=cfg.position_weighting)
        self.vocab: VocabSubset | None = None  # the drafting vocabulary the loss projects onto
        self.eval_target: DecoderModel | None = None
        self.last_eval_step = -1
        self.last_tau: float | None = None  # the latest validation tau (recorded in the saved drafter)
        self.on_step: Callable[[Trainer], None] | None = None

    def say(self, message: str) -> None:
        if self.main:
            tqdm.write(f"[d3d] {message}", file=sys.stderr)

    # -- setup ------------------------------------------------------------------------------

    def setup(self) -> None:
        cfg = self.cfg
        train_rows, self.dev, report = load_data(cfg, self.facts, self.say)
        self.data_report = report
        self.dataset = PackedDataset(train_rows, self.packing, cfg.seed)
        self.sampler = TokenBudgetBatchSampler(self.dataset.lengths(), cfg.batch_size, cfg.max_batch_tokens, cfg.seed)
        loader = DataLoader(self.dataset, batch_sampler=self.sampler, collate_fn=self._collate)
        self.total_steps = self._total_steps()
        if cfg.draft_vocab_size:
            init_ids = init_vocab_ids(cfg, self.facts) if cfg.draft_vocab_from == "init" else None
            self.vocab, covered = training_vocab(train_rows, cfg.draft_vocab_size, self.facts, init_ids)
            self.data_report["draft_vocab_coverage"] = round(covered, 4)
            self.say(f"drafting vocabulary: {self.vocab.ids.numel()} tokens, {covered:.1%} of the response tokens")
        module = DrafterObjective(build_drafter_body(cfg, self.facts), self.loss, load_teacher(cfg, self.facts),
                                  self.vocab)
        optimizer = torch.optim.AdamW(_param_groups(module, cfg.weight_decay), lr=cfg.lr)
        scheduler = self._scheduler(optimizer)
        prepared = self.accelerator.prepare(module, optimizer, loader, scheduler)
        self.module, self.optimizer, self.loader, self.scheduler = prepared
        self.trainable = [p for p in self.module.parameters() if p.requires_grad]

    def _collate(self, examples):
        return collate(examples, self.packing.mask_token_id)

    def _total_steps(self) -> int:
        if self.cfg.max_steps:
            return self.cfg.max_steps
        n, accum = self.accelerator.num_processes, self.cfg.grad_accum
        skipped = math.ceil(self.cfg.start_batch / n / accum)  # epoch 0 starts part-way through (start_batch)
        return sum(steps_per_epoch(self.sampler, e, n, accum) for e in range(self.cfg.epochs)) - skipped

    def _scheduler(self, optimizer):
        from transformers import get_cosine_with_min_lr_schedule_with_warmup

        warmup = self.cfg.warmup_steps if self.cfg.warmup_steps is not None else math.ceil(0.01 * self.total_steps)
        return get_cosine_with_min_lr_schedule_with_warmup(
            optimizer, warmup, self.total_steps, min_lr_rate=self.cfg.min_lr_ratio
        )

    # -- resume -----------------------------------------------------------------------------

    def resume_or_start(self) -> None:
        latest = latest_checkpoint(self.out)
        if self.main:
            self._remove_partial_saves()
        self._check_config(resuming=latest is not None)
        self.accelerator.wait_for_everyone()
        if latest is None:
            self.progress.batches = self._start_batch()
            self.log.start(None)
            self.log.write({"kind": "data", "step": 0, **self.data_report, "total_steps": self.total_steps})
            return
        self.accelerator.load_state(str(latest))
        self.progress = Progress(**json.loads((latest / STATE_FILE).read_text())["progress"])
        self.last_eval_step = self.progress.step  # do not re-validate the step we resume at
        self.log.start(self.progress.step)
        last_eval = self.log.last("eval")
        self.last_tau = last_eval.get("tau") if last_eval else None  # absent when real decoding is off (eval_real: false)
        self.log.write({"kind": "resume", "step": self.progress.step, "checkpoint": latest.name,
                        "total_steps": self.total_steps})  # the schedule from here on (--max-steps may change it)
        self.say(f"resumed from {latest} (step {self.progress.step}, epoch {self.progress.epoch})")

    def _start_batch(self) -> int:
        """Micro-batches of epoch 0 this process skips at a fresh start (`start_batch`, checked against the data)."""
        batches = len(self.sampler.plan(0))
        if self.cfg.start_batch and self.cfg.start_batch >= batches:
            raise D3DError(f"start batch {self.cfg.start_batch} is not inside the first pass "
                           f"({batches} micro-batches of this data)")
        start = math.ceil(self.cfg.start_batch / self.accelerator.num_processes)
        if start:
            self.say(f"starting the first pass at micro-batch {self.cfg.start_batch} (start_batch)")
        return start

    def _remove_partial_saves(self) -> None:
        for partial in (self.out / "checkpoints").glob(".*.partial"):
            shutil.rmtree(partial, ignore_errors=True)

    def _check_config(self, resuming: bool) -> None:
        """Refuse to resume a run of another model; every process reads before the main one rewrites."""
        file = self.out / CONFIG_FILE
        current = asdict(self.cfg)
        if resuming and file.is_file():
            saved = asdict(TrainConfig()) | json.loads(file.read_text())  # settings added since: their defaults
            changed = [k for k in current if saved.get(k) != current[k]]
            blocking = [k for k in changed if k in MODEL_FIELDS]
            if blocking:
                raise D3DError(f"{self.out} holds a run with different {', '.join(blocking)}: use another --output-dir")
            if changed:
                self.say(f"resuming with changed settings: {', '.join(changed)}")
        self.accelerator.wait_for_everyone()
        if self.main:
            self.out.mkdir(parents=True, exist_ok=True)
            file.write_text(json.dumps(current, indent=2) + "\n")

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        bar = tqdm(total=self.total_steps, initial=self.progress.step, disable=not self.main, desc="train",
                   dynamic_ncols=True)
        self.meter = StepMeter()
        try:
            if self.progress.step == 0 and self.cfg.eval_every > 0:
                self.evaluate()
            while not self.done:
                self._run_epoch(bar)
        finally:
            bar.close()

    def _run_epoch(self, bar) -> None:
        epoch, skip = self.progress.epoch, self.progress.batches
        loader = self.accelerator.skip_first_batches(self.loader, skip) if skip else self.loader
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)  # Accelerate's loaders re-apply their own epoch counter when iterated
        self.dataset.set_epoch(epoch)
        self.sampler.set_epoch(epoch)
        seen, started, started_cpu = skip, time.perf_counter(), time.process_time()
        for batch in loader:
            grad_norm = self._micro_step(batch)
            seen += 1
            if not self.accelerator.sync_gradients:
                continue
            elapsed = time.perf_counter() - started
            self.progress.seconds += elapsed
            self.progress.cpu_seconds += time.process_time() - started_cpu
            self.progress.step, self.progress.batches = self.progress.step + 1, seen
            self.meter.end_step(elapsed, grad_norm)
            bar.update(1)
            self._after_step(bar)
            if self.done:
                return
            started, started_cpu = time.perf_counter(), time.process_time()
        self.progress.epoch, self.progress.batches = self.progress.epoch + 1, 0

    def _micro_step(self, batch: dict[str, Tensor]) -> Tensor | None:
        """Forward, backward and (at an accumulation boundary) the optimizer step; the grad norm if clipped."""
        with self.accelerator.accumulate(self.module):
            parts = self.module(**batch)
            self.accelerator.backward(parts["total"])
            grad_norm = None
            if self.accelerator.sync_gradients and self.cfg.grad_clip > 0:
                grad_norm = self.accelerator.clip_grad_norm_(self.trainable, self.cfg.grad_clip)
            self.optimizer.step()
            if self.accelerator.sync_gradients:
                self.scheduler.step()
            self.optimizer.zero_grad()
        self.meter.add(parts)
        return grad_norm

    @property
    def done(self) -> bool:
        """All steps run, or the CPU-time budget spent."""
        spent = self.cfg.max_cpu_s > 0 and self.progress.cpu_seconds >= self.cfg.max_cpu_s
        return self.progress.step >= self.total_steps or spent

    def _after_step(self, bar) -> None:
        step, last = self.progress.step, self.done
        saving = (self.cfg.save_every and step % self.cfg.save_every == 0) or last
        if step % self.cfg.log_every == 0 or saving:  # a checkpoint's counters include every step before it
            self._log_train(bar)
        if self.cfg.eval_every and (step % self.cfg.eval_every == 0 or last):
            self.evaluate()
        if saving:
            self.save_checkpoint()
        if self.on_step is not None:
            self.on_step(self)

    def _log_train(self, bar) -> None:
        values = self.meter.collect(self.accelerator)
        self.progress.rows += int(values.pop("rows_total"))
        self.progress.tokens += int(values.pop("tokens_total"))
        record = {"kind": "train", "step": self.progress.step, "epoch": self.progress.epoch, **values,
                  "lr": self.scheduler.get_last_lr()[0], "rows_seen": self.progress.rows,
                  "tokens_seen": self.progress.tokens, "elapsed_s": round(self.progress.seconds, 3),
                  "cpu_s": round(self.progress.cpu_seconds, 2)}
        self.log.write(record)
        bar.set_postfix(loss=f"{values['loss']:.3f}", diff=f"{values['loss_diff']:.3f}", ar=f"{values['loss_ar']:.3f}")

    # -- validation and saving (collective: every process calls them) -------------------------

    def evaluate(self) -> None:
        if self.last_eval_step == self.progress.step or not self.dev:
            return
        self.last_eval_step = self.progress.step
        state = self.accelerator.get_state_dict(self.module)
        if self.main:
            self._evaluate_on_main(state)
        self.accelerator.wait_for_everyone()

    def _evaluate_on_main(self, state: dict[str, Tensor]) -> None:
        started = time.perf_counter()
        target = self._eval_target()
        vocab_ids = None if self.vocab is None else self.vocab.ids
        drafter = drafter_from_state(state, self.cfg, self.facts, target.dtype, target.device, target, vocab_ids)
        result = offline_metrics(drafter, self.dev[: self.cfg.eval_rows or None])
        if self.cfg.eval_real:
            prompts = [e.prompt_ids for e in self.dev[: self.cfg.eval_prompts]]
            result |= measure_tau(target, drafter, prompts, self.cfg.eval_max_new_tokens, self.facts.eos_ids)
        result |= dev_losses(drafter.model, self.dev[: self.cfg.eval_prompts], self.packing, self.loss, self.cfg.seed,
                             self.vocab)
        result = {"kind": "eval", "step": self.progress.step, "tokens_seen": self.progress.tokens, **result,
                  "eval_s": round(time.perf_counter() - started, 2)}
        self.last_tau = result.get("tau", result["offline_tau"])
        self.log.write(result)
        real = f"validation tau {result['tau']:.3f} over {result['prompts']} prompts, " if "tau" in result else ""
        self.say(f"step {self.progress.step}: {real}offline tau {result['offline_tau']:.3f} over "
                 f"{result['offline_rows']} rows, dev loss diff {result['dev_loss_diff']:.3f} ar {result['dev_loss_ar']:.3f}")

    def _eval_target(self) -> DecoderModel:
        if self.eval_target is None:
            device = self.accelerator.device
            dtype = torch.float32 if device.type == "cpu" else default_dtype(device)  # the data's dtype on a CPU
            self.eval_target = load_decoder(self.facts.target_dir, dtype=dtype, device=device)
        return self.eval_target

    def save_checkpoint(self) -> None:
        root = self.out / "checkpoints"
        final = root / f"step-{self.progress.step:08d}"
        if final.exists():
            return
        partial = root / f".{final.name}.partial"
        if self.main:
            shutil.rmtree(partial, ignore_errors=True)
            root.mkdir(parents=True, exist_ok=True)
        self.accelerator.wait_for_everyone()
        self.accelerator.save_state(str(partial))
        if self.main:
            state = {"progress": asdict(self.progress), "total_steps": self.total_steps}
            (partial / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")
        self.save_drafter()
        if self.main:
            partial.rename(final)
            _prune_checkpoints(root, self.cfg.keep_checkpoints)
        self.accelerator.wait_for_everyone()

    def save_drafter(self) -> Path:
        """Write the inference-ready drafter to <output_dir>/drafter (collective; main writes)."""
        state = self.accelerator.get_state_dict(self.module)
        final = self.out / "drafter"
        if self.main:
            dtype = torch.bfloat16 if self.accelerator.mixed_precision == "bf16" else torch.float32
            drafter = drafter_from_state(state, self.cfg, self.facts, dtype, "cpu", None,
                                         None if self.vocab is None else self.vocab.ids.cpu())
            drafter.config.training = {**asdict(self.cfg), "steps": self.progress.step, "rows_seen": self.progress.rows,
                                       "validation_tau": self.last_tau}
            partial = self.out / ".drafter.partial"
            shutil.rmtree(partial, ignore_errors=True)
            drafter.save_pretrained(partial)
            _replace_dir(partial, final)
        return final

    def save_on_interrupt(self) -> None:
        """Checkpoint the last completed optimizer step (gradients of a half-accumulated step are dropped)."""
        if self.progress.step == 0:
            self.say("interrupted before the first optimizer step: nothing to save")
            return
        self.accelerator.step = 0  # the accumulation counter restarts at a step boundary on resume
        self.save_checkpoint()
        self.say(f"interrupted: checkpoint saved at step {self.progress.step}; rerun the same command to resume")


class StepMeter:
    """Sums of per-micro-batch loss parts between log lines, kept on the device (no per-step sync)."""

    KEYS = ("total", "diff", "ar", "rows", "diff_rows", "ar_rows", "kl", "dropped", "kd", "kd_rows", "kd_dropped")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.sums: Tensor | None = None  # [len(KEYS)] sums over micro-batches
        self.micro = 0  # micro-batches since the last log line
        self.steps = 0  # optimizer steps since the last log line
        self.seconds = 0.0  # their wall time
        self.grad_norm: Tensor | float | None = None  # of the latest step

    def add(self, parts: dict[str, Tensor]) -> None:
        zero = parts["total"].new_zeros(())
        values = torch.stack([parts.get(k, zero).detach().float() for k in self.KEYS])
        self.sums = values if self.sums is None else self.sums + values
        self.micro += 1

    def end_step(self, seconds: float, grad_norm: Tensor | float | None) -> None:
        self.steps += 1
        self.seconds += seconds
        self.grad_norm = grad_norm

    def collect(self, accelerator: Accelerator) -> dict:
        """Means over micro-batches and processes since the last call (one deliberate host sync)."""
        means = accelerator.reduce(self.sums / self.micro, reduction="mean").tolist()
        totals = accelerator.reduce(self.sums.clone(), reduction="sum").tolist()
        steps = max(self.steps, 1)
        record = {
            "loss": means[0], "loss_diff": means[1], "loss_ar": means[2],
            "grad_norm": None if self.grad_norm is None else float(self.grad_norm),
            "rows_per_step": totals[3] / steps, "diff_rows_per_step": totals[4] / steps,
            "ar_rows_per_step": totals[5] / steps, "step_s": round(self.seconds / steps, 4), "rows_total": totals[3],
            "tokens_total": totals[5],
        }
        if totals[6]:
            record["loss_kl"] = means[6]
        if totals[7]:
            record["dropped_labels_per_step"] = totals[7] / steps  # outside the drafting vocabulary
        if totals[9]:
            record["loss_kd"], record["kd_rows_per_step"] = means[8], totals[9] / steps  # distillation from the top-k
        if totals[10]:
            record["dropped_topk_per_step"] = totals[10] / steps  # top-k entries outside the drafting vocabulary
        self.reset()
        return record


def _param_groups(module: nn.Module, weight_decay: float) -> list[dict]:
    trainable = [p for p in module.parameters() if p.requires_grad]
    return [
        {"params": [p for p in trainable if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in trainable if p.ndim < 2], "weight_decay": 0.0},
    ]


def latest_checkpoint(out: Path) -> Path | None:
    done = [p for p in (out / "checkpoints").glob("step-*") if (p / STATE_FILE).is_file()]
    return max(done, key=lambda p: p.name) if done else None


def _prune_checkpoints(root: Path, keep: int) -> None:
    done = sorted(p for p in root.glob("step-*") if p.is_dir())
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def _replace_dir(new: Path, final: Path) -> None:
    """Move `new` to `final`, replacing it; a crash leaves either the old or the new folder (or both)."""
    old = final.parent / f".{final.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    new.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def resolve_mixed_precision(choice: str) -> str:
    if choice != "auto":
        return choice
    return "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "no"


def slow_precision_warning(mixed_precision: str, device: torch.device) -> str | None:
    """A warning when half-precision autocast is asked for on a CPU that does not compute it natively.

    There PyTorch falls back to a scalar bfloat16 matrix product, about 20-40x slower than float32
    (measured on a 2-core AVX2 EPYC: one recovery step of the shipped recipe took 25 s, against 1.5 s in float32).
    """
    autocast = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(mixed_precision)
    if autocast is None or not half_is_slow(autocast, device):
        return None
    return (f"{mixed_precision} mixed precision on a CPU without native half-precision arithmetic (no AVX512-BF16 "
            "or AMX): its matrix products run about 20-40x slower than float32; --mixed-precision no (or auto) is "
            "the fast setting here")


def train(cfg: TrainConfig, on_step: Callable[[Trainer], None] | None = None) -> Path:
    """Run (or resume) training; returns the directory of the trained drafter.

    `on_step` is called on every process after each optimizer step (tests use it to interrupt).
    """
    cfg.validate()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    accelerator = Accelerator(
        gradient_accumulation_steps=cfg.grad_accum, mixed_precision=resolve_mixed_precision(cfg.mixed_precision),
        step_scheduler_with_optimizer=False,
    )
    with accelerator.main_process_first():  # the first GGUF conversion happens once
        facts = resolve_models(cfg)
    trainer = Trainer(cfg, accelerator, facts)
    if (warning := slow_precision_warning(str(accelerator.mixed_precision), accelerator.device)) is not None:
        trainer.say(f"warning: {warning}")
    trainer.on_step = on_step
    trainer.setup()
    trainer.resume_or_start()
    try:
        with sigterm_as_interrupt():
            trainer.run()
    except KeyboardInterrupt:
        trainer.save_on_interrupt()
        raise
    if trainer.cfg.eval_every:
        trainer.evaluate()
    trainer.save_checkpoint()
    trainer.log.write({"kind": "end", "step": trainer.progress.step, "rows_seen": trainer.progress.rows,
                       "train_s": round(trainer.progress.seconds, 2)})
    trainer.say(f"done: drafter saved to {trainer.out / 'drafter'}")
    return trainer.out / "drafter"
