"""Everything a run needs, loaded once: the target (runtime + tokenizer), the drafter, the decoders.

`load_target` resolves a model spec (hub id, directory, GGUF, or the embedded default), loads the
tokenizer and the native runtime (or, for an architecture the runtime lacks, remembers why so
that features needing it fail with a clear message). `load_drafter` returns the drafter shipped
for the default target or the one asked for, and otherwise an untrained drafter initialised from
the target's first layers, saying so; its layers take the target's weight format (dense or int8)
unless `drafter_weights` (`--drafter-weights`) names another, which changes acceptance only, never
the output. `Pipeline.stream` runs one prompt in one mode.

This module knows nothing about benchmarks or the command line.

    pipe = Pipeline.load(target=None, drafter=None)
    for text in pipe.stream_text("Write a haiku.", "sync", GenerationConfig()):
        print(text, end="")
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.inference.ar_drafting import DEFAULT_AR_DRAFT_TOKENS, ArDrafterSource
from d3d.inference.async_engine import AsyncConfig, AsyncRunner, new_stats
from d3d.inference.baselines import ar_drafter_hf_model, hf_generate
from d3d.inference.draft_length import MAX_SKIP, Calibration, DraftLengthPolicy
from d3d.inference.drafting import DrafterSource
from d3d.inference.pass_costs import PassCosts, drafter_pass_seconds, machine_pass_costs
from d3d.inference.engine import (
    DecodeStats,
    GenerationConfig,
    autoregressive_decode,
    context_length,
    sampling_generator,
    speculative_decode,
)
from d3d.inference.prefill import DEFAULT_CHUNK_SIZE, PrefillConfig, SelectiveStats, selective_decode
from d3d.inference.prompt_layout import ChatFrame, chat_frame, protected_tokens, stopword_ids
from d3d.inference.selectors import DEFAULT_PROBE_LAYERS, DEFAULT_SELECTOR
from d3d.inference.stopping import StopChecker
from d3d.inference.tree import TreePlanner
from d3d.inference.tree_engine import TreeConfig, TreeStats, tree_decode
from d3d.models import hub
from d3d.models.decoder import DecoderModel, load_decoder
from d3d.models.compiled import compile_layers
from d3d.models.precision import Precision, parse_precision
from d3d.models.quantize import WEIGHT_FORMATS, quantize_decoder, resolve_weights
from d3d.models.drafter import Drafter, read_drafter_config

SHIPPED_DRAFTERS_DIR = Path(__file__).resolve().parent.parent / "drafters"  # d3d/drafters/<target>/
UNTRAINED_LAYERS = 6  # layers of the fallback (untrained) drafter, taken from the target's first
UNTRAINED_SPEC = "untrained"  # --drafter untrained: the fallback even where a trained drafter ships
DEFAULT_BLOCK_SIZE = 16
NATIVE_MODES = ("ar", "sync", "async", "ar-drafter", "tree")
DRAFTER_WEIGHT_CHOICES = ("auto", *WEIGHT_FORMATS)  # --drafter-weights: auto = the target's format


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
DTYPE_CHOICES = ("auto", *DTYPES)  # the values of every --dtype flag


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX on x86, BF16 on Arm; Linux
    /proc/cpuinfo flags, False where they cannot be read)."""
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return False
    return bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})


def default_dtype(device: torch.device) -> torch.dtype:
    """`--dtype auto`: bfloat16 on CUDA devices and CPUs that support it natively, else float32."""
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.bfloat16 if device.type == "cpu" and cpu_has_native_bf16() else torch.float32


_WARNED_SLOW_DTYPE: set[torch.dtype] = set()


def half_is_slow(dtype: torch.dtype, device: torch.device) -> bool:
    """Whether `dtype` is a half dtype on a CPU without native half arithmetic: there PyTorch's
    bfloat16 matrix products fall back to scalar code, 20-40x slower than float32 (decoding and
    training autocast alike)."""
    return device.type == "cpu" and dtype in (torch.bfloat16, torch.float16) and not cpu_has_native_bf16()


def warn_slow_cpu_dtype(dtype: torch.dtype, device: torch.device) -> bool:
    """Say once per process when `half_is_slow`: every time measured in it says more about the CPU
    than about decoding. True when the dtype is slow here (warned now or before)."""
    if not half_is_slow(dtype, device):
        return False
    if dtype not in _WARNED_SLOW_DTYPE:
        _WARNED_SLOW_DTYPE.add(dtype)
        name = str(dtype).removeprefix("torch.")
        print(f"[d3d] warning: {name} on a CPU without native half-precision arithmetic (no AVX512-BF16 or AMX): "
              "it runs far slower than float32 here; --dtype auto picks float32 on this CPU", file=sys.stderr)
    return True


def resolve_dtype(name: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """A dtype from a `--dtype` value ("auto", "bfloat16", "float16", "float32") or a torch dtype."""
    if isinstance(name, torch.dtype):
        return name
    if name is None:  # the library's default: exact float32 on a CPU, bfloat16 on CUDA
        return torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
    if name == "auto":
        return default_dtype(device)
    if name not in DTYPES:
        raise D3DError(f"unknown dtype '{name}' (choose from {', '.join(DTYPE_CHOICES)})")
    return DTYPES[name]


@dataclass
class Target:
    """The target model: its files, tokenizer and native runtime."""

    name: str  # what the user asked for ("smollm2-135m-instruct" for the default)
    model_dir: Path  # local Hugging Face-format directory
    tokenizer: object  # transformers tokenizer
    model: DecoderModel | None  # native runtime; None when the architecture is unsupported
    unsupported: str | None = None  # why the native runtime could not load it
    dtype: torch.dtype = torch.float32
    device: torch.device = field(default_factory=default_device)
    weights: str = "dense"  # "int8": weight-only int8 projections, the target of every mode (`quantize.py`)

    def native(self, feature: str) -> DecoderModel:
        """The native runtime, or a clear D3DError naming the feature that needs it."""
        if self.model is None:
            raise D3DError(f"{feature} needs the native runtime, which cannot run this target: {self.unsupported}")
        return self.model

    @cached_property
    def hf_model(self):
        """The same weights as a transformers model (baselines; loaded on first use)."""
        return hub.load_hf_model(self.model_dir, self.dtype, self.device)

    @cached_property
    def eos_token_ids(self) -> tuple[int, ...]:
        return hub.eos_token_ids(self.model_dir, self.tokenizer)

    @cached_property
    def context_length(self) -> int:
        return context_length(hub.load_config(self.model_dir))

    def encode_chat(self, prompt: str) -> Tensor:
        """Token ids [1, n] of a single user turn with the generation prompt (raw text without a template)."""
        if getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True,
                return_dict=False,
            )
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
        else:
            ids = self.tokenizer(prompt)["input_ids"]
        return torch.tensor([list(ids)], device=self.device)

    @cached_property
    def chat_frame(self) -> ChatFrame:
        """The chat template's scaffolding around one user turn (selective prefill always keeps it)."""
        return chat_frame(self.tokenizer)

    @cached_property
    def stopword_ids(self) -> frozenset[int]:
        """Token ids the lexical prefill selector ignores (`prompt_layout.stopword_ids`)."""
        return stopword_ids(self.tokenizer)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def stop_checker(self, cfg: GenerationConfig) -> StopChecker:
        return StopChecker(cfg.max_new_tokens, self.eos_token_ids, cfg.stop_strings, self.decode)


def load_target(
    spec: str | None = None, device: torch.device | str | None = None, dtype: torch.dtype | str | None = None,
    precision: Precision | str | None = None, weights: str = "auto", compiled: bool = False,
) -> Target:
    """The target named by `spec` on `device` in `dtype` (a torch dtype or a `--dtype` value; None:
    float32 on a CPU, bfloat16 on CUDA; "auto": `default_dtype`).

    `precision` (a `Precision` or a `--precision` value; None: "auto") says which rounding
    differences between passes the runtime removes: by default, below float32 it keeps its residual
    stream, attention and top logits in float32, so that greedy speculative output stays equal to
    plain decoding except at near ties (docs/design.md, "Precision and near ties").
    `weights` "int8" quantizes the projections (`quantize.py`): that model is then the target;
    "packed" prepacks the dense bfloat16 ones for a CPU (`packed.py`: the same logits, faster);
    "auto" is "packed" where that runs (and the run is not `compiled`), else "dense".
    `compiled` compiles each layer's MLP and norms with torch.compile (`compiled.py`; eager by default).
    """
    device = torch.device(device) if device is not None else default_device()
    dtype = resolve_dtype(dtype, device)
    warn_slow_cpu_dtype(dtype, device)
    chosen = parse_precision(precision, dtype)  # bad names fail before anything loads
    weights = resolve_weights(weights, dtype, device, compiled)
    model_dir = hub.resolve_model_dir(spec)
    tokenizer = hub.load_tokenizer(model_dir)
    config = hub.load_config(model_dir)
    model, why = None, None
    try:
        model = load_decoder(model_dir, dtype=dtype, device=device, config=config)
        model.precision = chosen
        quantize_decoder(model, weights)
        if compiled:
            compile_layers(model)
    except D3DError as err:
        why = str(err)
    return Target(spec or hub.DEFAULT_TARGET, model_dir, tokenizer, model, why, dtype, device, weights)


@dataclass
class DrafterChoice:
    drafter: Drafter
    description: str  # one line for the user: where it came from, trained or not
    block_size_override: str | None = None  # "trained with B=16, running with B=8" when --block-size changed it
    path: Path | None = None  # the drafter's directory (None: the untrained fallback)
    weights: str = "dense"  # the drafter's runtime weight format (its layers; a shared LM head is the target's)

    @property
    def trained(self) -> bool:
        return self.drafter.config.trained


def shipped_drafter_dir(target: Target) -> Path | None:
    """The drafter that ships for this target, if any (only the embedded default has one)."""
    if target.name.lower() != hub.DEFAULT_TARGET:
        return None
    path = SHIPPED_DRAFTERS_DIR / hub.DEFAULT_TARGET
    return path if (path / "drafter_config.json").is_file() else None


def drafter_weight_format(target: Target, weights: str = "auto") -> str:
    """The drafter's runtime weight format for a `--drafter-weights` value: "auto" is the target's."""
    if weights not in DRAFTER_WEIGHT_CHOICES:
        raise D3DError(f"unknown drafter weight format '{weights}' (choose from {', '.join(DRAFTER_WEIGHT_CHOICES)})")
    return target.weights if weights == "auto" else weights


def load_drafter(target: Target, spec: str | None = None, block_size: int | None = None,
                 weights: str = "auto", run_default: bool = True) -> DrafterChoice:
    """The drafter asked for, else the shipped one, else an untrained one (said plainly; also when
    `spec` is "untrained"), its layers in the runtime weight format `weights` ("auto": the target's).

    Its block size is `block_size` when given, else (with `run_default`) the drafter's measured run
    block size where it has one, else the trained one; offline acceptance passes `run_default=False`
    so that its tables cover the whole trained block.

    The drafter's weights change only what it proposes (acceptance), never the output: the target
    verifies every token. A shared LM head stays the target's in either format."""
    if block_size is not None and block_size < 2:
        raise D3DError(f"block size must be at least 2, got {block_size}")
    runtime = drafter_weight_format(target, weights)
    model = target.native("speculative decoding")
    fingerprint = hub.tokenizer_fingerprint(target.tokenizer)
    path = None if spec == UNTRAINED_SPEC else Path(spec) if spec else shipped_drafter_dir(target)
    if path is not None:
        if not path.exists():
            raise D3DError(f"drafter not found: {path}")
        config, _ = read_drafter_config(path)
        if config.tokenizer_fingerprint and config.tokenizer_fingerprint != fingerprint:
            raise D3DError(f"drafter {path} was built for a different tokenizer than the target's")
        drafter = Drafter.from_pretrained(path, target=model)
        state = "trained" if config.trained else "UNTRAINED"
        desc = f"drafter {path} ({state}, {len(config.layers)} layers, B={config.block_size})"
    else:
        layers = list(range(min(UNTRAINED_LAYERS, model.spec.num_layers)))
        drafter = Drafter.from_base(
            target.model_dir, layers, block_size or DEFAULT_BLOCK_SIZE,
            hub.choose_mask_token_id(target.tokenizer), fingerprint, target=model, base_name=target.name,
            dtype=target.dtype, device=target.device,
        )
        desc = (f"UNTRAINED drafter from the target's first {len(layers)} layers (no trained drafter ships "
                f"for this target yet): expect tau near 1")
    # a shared LM head is the target's, in the target's format already; the drafter's own head takes its layers'
    quantize_decoder(drafter.model, runtime, head=not drafter.config.shared_embeddings)
    if runtime != target.weights:
        desc += f"; runtime weights {runtime} (the target's: {target.weights})"
    trained_b = drafter.config.block_size
    run_b = drafter.config.run_block_size if path is not None and run_default else 0
    override = None
    if block_size is not None and path is not None and block_size not in (trained_b, run_b):
        override = f"trained with B={trained_b}, running with B={block_size}"
        desc += f"; block size overridden ({override}): expect a different tau than trained"
    elif block_size is None and run_b:
        desc += f"; runs blocks of {run_b} (its measured run block size; --block-size {trained_b} for the trained one)"
    if block_size is not None or run_b:
        drafter.run_block = block_size or run_b  # the config keeps the trained B (a saved copy records it)
    return DrafterChoice(drafter, desc, override, path, runtime)


class Pipeline:
    """A target and (lazily) a drafter, able to run one prompt in any native mode."""

    def __init__(self, target: Target, drafter_spec: str | None = None, block_size: int | None = None,
                 async_config: AsyncConfig | None = None, ar_drafter_spec: str | None = None,
                 ar_draft_tokens: int = DEFAULT_AR_DRAFT_TOKENS, drafter_weights: str = "auto") -> None:
        self.target = target
        self.drafter_spec = drafter_spec
        self.block_size = block_size
        drafter_weight_format(target, drafter_weights)  # a bad value fails before the drafter loads
        self.drafter_weights = drafter_weights  # the drafter's runtime weight format: auto (the target's), dense, int8
        self.async_config = async_config or AsyncConfig()
        self.ar_drafter_spec = ar_drafter_spec
        if ar_draft_tokens < 1:
            raise D3DError(f"AR draft tokens must be at least 1, got {ar_draft_tokens}")
        self.ar_draft_tokens = ar_draft_tokens
        self.prefill_chunk_size = DEFAULT_CHUNK_SIZE  # selective prefill: tokens per scored chunk
        self.prefill_select = DEFAULT_SELECTOR  # selective prefill: how chunks are scored (selectors.py)
        self.prefill_layers = DEFAULT_PROBE_LAYERS  # selective prefill: the target-layers selector's layers
        self.draft_length: int | None = None  # rows verified per round (None: chosen per round, `draft_length.py`)
        self.max_skip = MAX_SKIP  # sync: the back-off's longest run of plain steps while drafting loses (0: never)
        self.tree_branches: tuple[str, ...] = TreeConfig().branches  # mode tree: candidate sources (--tree-branches)

    @classmethod
    def load(cls, target: str | None = None, drafter: str | None = None, block_size: int | None = None,
             device: str | None = None, async_config: AsyncConfig | None = None,
             dtype: str | torch.dtype | None = None, precision: Precision | str | None = None,
             weights: str = "auto", compiled: bool = False, drafter_weights: str = "auto") -> Pipeline:
        return cls(load_target(target, device, dtype, precision, weights, compiled), drafter, block_size, async_config,
                   drafter_weights=drafter_weights)

    @cached_property
    def drafter(self) -> DrafterChoice:
        choice = load_drafter(self.target, self.drafter_spec, self.block_size, self.drafter_weights)
        if choice.block_size_override:
            print(f"[d3d] warning: --block-size overrides the drafter's ({choice.block_size_override})", file=sys.stderr)
        return choice

    @cached_property
    def pass_costs(self) -> PassCosts:
        """This machine's t_v(k) for the target (cached on disk per machine and dtype)."""
        log = lambda msg: print(f"[d3d] {msg}", file=sys.stderr)  # noqa: E731
        return machine_pass_costs(self.target.native("speculative decoding"), log=log)

    @cached_property
    def drafter_pass_s(self) -> float:
        """t_d: one synchronous drafting pass of this pipeline's drafter (measured once)."""
        return drafter_pass_seconds(self.drafter.drafter, self.target.native("speculative decoding"), self.pass_costs)

    @cached_property
    def calibration(self) -> Calibration:
        """The drafter's confidence -> acceptance table (`acceptance.json`), read once per pipeline."""
        return Calibration.load(self.drafter.path)

    def draft_length_policy(self) -> DraftLengthPolicy:
        """A fresh per-generation policy: fixed rows when `draft_length` is set, else adaptive."""
        if self.draft_length is not None:
            return DraftLengthPolicy(PassCosts({1: 1.0}), fixed=self.draft_length - 1)
        return DraftLengthPolicy(self.pass_costs, self.calibration, draft_s=self.drafter_pass_s,
                                 max_skip=self.max_skip)

    @cached_property
    def ar_drafter(self) -> DrafterChoice:
        """The AR draft model of classic speculative decoding (`--ar-drafter`)."""
        if not self.ar_drafter_spec:
            raise D3DError("this mode needs an AR draft model: pass --ar-drafter DIR (d3d train --diffusion-weight 0)")
        choice = load_drafter(self.target, self.ar_drafter_spec)
        if choice.drafter.config.objective != "ar":
            raise D3DError(f"{self.ar_drafter_spec} is a block (diffusion) drafter, not an AR draft model: train one "
                           "with d3d train --diffusion-weight 0 --lambda-ar 1")
        return choice

    @cached_property
    def ar_drafter_hf(self):
        """The AR draft model as a transformers model, for assisted generation."""
        return ar_drafter_hf_model(self.ar_drafter.drafter, self.target)

    @cached_property
    def async_runner(self) -> AsyncRunner:
        """Asynchronous decoding: a drafting worker that loads this pipeline's drafter itself."""
        t = self.target
        remote = partial(worker_drafter, t.name, str(t.model_dir), self.drafter_spec, self.block_size, t.dtype, str(t.device),
                         t.weights, self.drafter_weights)
        return AsyncRunner(t.native("asynchronous decoding"), remote, lambda: self.drafter.drafter, self.async_config)

    def close(self) -> None:
        """Stop the drafting worker, if one was started."""
        if "async_runner" in self.__dict__:
            self.async_runner.close()

    def stream(self, prompt_ids: Tensor, mode: str, cfg: GenerationConfig, stats: DecodeStats,
               prefill_keep: float | None = None, prefill_select: str | None = None) -> Iterator[list[int]]:
        """Token chunks for prompt_ids [1, n] in `mode` ("ar", "sync", "async", "ar-drafter" or "tree";
        async fills an `AsyncDecodeStats`, tree a `TreeStats`: see `stats_for`). `prefill_keep` (rho in (0, 1], sync or ar) turns on
        selective prefill: the target reads about rho of the prompt, so the output may differ
        from full-prompt decoding; pass a `SelectiveStats` to get its fields. `prefill_select`
        names the chunk selector (None: `self.prefill_select`)."""
        cfg.validate()
        stop = self.target.stop_checker(cfg)
        if prefill_keep is not None:
            return self._selective(prompt_ids, mode, cfg, stop, stats, prefill_keep, prefill_select or self.prefill_select)
        if mode == "ar" and self.target.model is None:
            return self._transformers_ar(prompt_ids, cfg, stats)
        if mode == "ar":
            return autoregressive_decode(self.target.model, prompt_ids, cfg, stop, stats)
        if mode in ("sync", "async"):
            stats.block_size_override = self.drafter.block_size_override
        if mode == "sync":
            source = DrafterSource(self.drafter.drafter, cfg.sampling, sampling_generator(cfg, self.target.device, offset=1))
            return speculative_decode(self.target.native("speculative decoding"), source, prompt_ids, cfg, stop, stats,
                                      self.draft_length_policy())
        if mode == "async":
            policy = self.draft_length_policy()
            policy.max_skip, policy.draft_s = 0, 0.0  # async drafts every round, hidden under verification
            return self.async_runner.stream(prompt_ids, cfg, stop, stats, policy)
        if mode == "tree":
            stats.block_size_override = self.drafter.block_size_override if "drafter" in self.tree_branches else None
            return self._tree(prompt_ids, cfg, stop, stats)
        if mode == "ar-drafter":
            gen = sampling_generator(cfg, self.target.device, offset=1)
            source = ArDrafterSource(self.ar_drafter.drafter.model, self.ar_draft_tokens, cfg.sampling, gen)
            return speculative_decode(self.target.native("speculative decoding"), source, prompt_ids, cfg, stop, stats)
        raise D3DError(f"unknown mode '{mode}' (choose from {', '.join(NATIVE_MODES)})")

    def tree_planner(self, uses_drafter: bool) -> TreePlanner:
        """A fresh per-generation tree planner: `draft_length` rows (that many - 1 nodes) every round
        when set, else the node budget chosen per round from the cost model (tree.py)."""
        if self.draft_length is not None:
            return TreePlanner(PassCosts({1: 1.0}), fixed=self.draft_length - 1)
        if not uses_drafter:
            return TreePlanner(self.pass_costs)
        return TreePlanner(self.pass_costs, self.calibration, draft_s=self.drafter_pass_s)

    def _tree(self, prompt_ids: Tensor, cfg: GenerationConfig, stop: StopChecker, stats: DecodeStats) -> Iterator[list[int]]:
        """Tree decoding (`tree_engine.py`) with this pipeline's branches; stats: a `TreeStats`."""
        tree_cfg = TreeConfig(branches=self.tree_branches)
        tree_cfg.validate()
        uses_drafter = "drafter" in tree_cfg.branches
        drafter = self.drafter.drafter if uses_drafter else None
        return tree_decode(self.target.native("tree decoding"), drafter, prompt_ids, cfg, stop, stats,
                           self.tree_planner(uses_drafter), tree_cfg)

    def _selective(self, prompt_ids: Tensor, mode: str, cfg: GenerationConfig, stop: StopChecker,
                   stats: DecodeStats, keep: float, select: str) -> Iterator[list[int]]:
        """Selective prefill (`prefill.py`) with the template scaffolding and final instruction protected,
        then sync or plain (ar: no drafter, so any selector but the probe) decoding; the random
        selector is seeded by the generation's seed."""
        if mode not in ("sync", "ar"):
            raise D3DError(f"selective prefill runs with mode sync or ar, not '{mode}'")
        prefill = PrefillConfig(keep=keep, chunk_size=self.prefill_chunk_size, select=select, seed=cfg.seed,
                                layers=tuple(self.prefill_layers), stop_ids=self.target.stopword_ids)
        prefill.validate()
        protected = protected_tokens(self.target.tokenizer, prompt_ids[0].cpu(), self.target.chat_frame)
        target = self.target.native("selective prefill")
        if mode == "ar":
            return selective_decode(target, None, prompt_ids, protected, prefill, cfg, stop, stats)
        return selective_decode(target, self.drafter.drafter, prompt_ids, protected, prefill, cfg, stop, stats,
                                self.draft_length_policy())

    def _transformers_ar(self, prompt_ids: Tensor, cfg: GenerationConfig, stats: DecodeStats) -> Iterator[list[int]]:
        """Plain decoding through transformers, for targets the native runtime cannot run (not streamed)."""
        tokens, hf_stats = hf_generate(self.target, prompt_ids, cfg)
        vars(stats).update({k: v for k, v in vars(hf_stats).items() if k != "mode"})
        yield tokens

    def generate(self, prompt_ids: Tensor, mode: str, cfg: GenerationConfig,
                 prefill_keep: float | None = None, prefill_select: str | None = None) -> tuple[list[int], DecodeStats]:
        stats = stats_for(mode) if prefill_keep is None else SelectiveStats(mode)
        tokens = [t for chunk in self.stream(prompt_ids, mode, cfg, stats, prefill_keep, prefill_select) for t in chunk]
        return tokens, stats


def stats_for(mode: str) -> DecodeStats:
    """The statistics object a mode fills (tree and async add their own fields)."""
    return TreeStats(mode) if mode == "tree" else new_stats(mode)


def worker_drafter(
    target_name: str, model_dir: str, drafter_spec: str | None, block_size: int | None, dtype: torch.dtype, device: str,
    weights: str = "dense", drafter_weights: str = "auto",
) -> Drafter:
    """The pipeline's drafter, loaded in a drafting worker process: the same resolution as
    `load_drafter`, with only the target's embeddings and LM head loaded (no target layers), the
    head in the target's format `weights`, the drafter's layers in `drafter_weights`."""
    config = hub.load_config(Path(model_dir))
    embeddings = quantize_decoder(load_decoder(model_dir, layers=[], dtype=dtype, device=device, config=config), weights)
    target = Target(target_name, Path(model_dir), hub.load_tokenizer(Path(model_dir)), embeddings, None, dtype,
                    torch.device(device), weights)
    return load_drafter(target, drafter_spec, block_size, drafter_weights).drafter
