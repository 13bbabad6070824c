"""Speed benchmark: every decoding mode on the same prompts, interleaved, in one run.

Modes (the `MODES` registry in `bench_modes.py`; a new mode is one more entry):

    ar    plain autoregressive decoding on the native runtime (the reference, always run)
    sync  synchronous D3D speculative decoding on the native runtime
    async asynchronous D3D decoding: successor blocks drafted during verification (docs/async.md)
    hf    transformers `generate` on the same weights
    pld   transformers prompt-lookup decoding (10 candidate tokens per round)
    ar-drafter   classic speculative decoding on the native runtime: an AR draft model of the same
                 depth (`ar_drafter`, trained with the AR loss alone) drafts k tokens, one pass each
    hf-assisted  the same AR draft model through transformers' assisted generation (fixed k)
    llamacpp     llama.cpp on the target's GGUF, greedy (an optional extra, `llamacpp.py`)
    ar@float32, sync@int8, ...   a mode on another dtype / weight format of the target (`variants.py`:
                 what each is compared with; every mode also gets `speedup_vs_fastest_plain`)
    sync@NAME, async@NAME, tree@NAME ...   a mode with another drafter on the run's target, registered
                 with `drafter_variants` ("NAME=DIR"; `variants.py`): drafters side by side
    sync@dint8, async@dint8, tree@dint8 ...   the run's drafter at int8 runtime weights on the run's
                 target (`ddense`: dense; `variants.py`): what the drafter's weight format costs in
                 acceptance and saves in drafting time

With `sweep` (a list of budgets "C,F"), the async mode runs once per budget, as modes named
`async@C,F` sharing one drafting worker: the budget sweep of docs/async.md (speedup and hit rate
against N_async = B((C-1)F+2), the paper's Figure 3).

With `prefill_keep` (retentions rho), modes `sync@keepRHO` run sync after selective prefill
(docs/prefill.md); with `prefill_select` naming several chunk selectors (or one that is not the
default), one mode `sync@keepRHO@SELECTOR` per retention and selector. They, and any scored
suite (`longctx`, `longctx2`), add score, ttft_speedup and decode_speedup per mode and a second
table (`prefill_metrics.py`).

For each prompt every mode runs back to back, the order rotated by one per prompt so that slow
drift (thermal, other processes) spreads evenly over the modes. One untimed short generation per
mode comes first, so lazy loads and first-call costs stay out of the timings.

Reported per mode, over the same prompts:

    tau            total round tokens / total rounds (DecodeStats' definition; 1.0 for ar)
    speedup        ar's total wall time / the mode's total wall time (DESIGN.md: same prompts,
                   same max_new_tokens, interleaved). Wall times include the prefill. On greedy
                   runs with `identical` true both modes produced the same tokens, so this is also
                   the per-token ratio; when token counts differ (sampling) compare
                   `speedup_per_token` = the mode's tokens/s / ar's tokens/s as well.
    tokens_per_s   total new tokens / total wall time
    identical      every prompt's greedy output equals ar's token for token (null when sampling)

and for the drafter modes (sync, async):

    mean_td_ms     mean drafter pass per round: sync's draft, async's packed successor pass (t_d)
    mean_tv_ms     mean target verification pass (t_v)
    hit_rate       async: share of looked-up rounds whose candidates came from a successor branch
    hidden_share   async: share of rounds whose successor pass ended before their verification did
                   (0 for sync, which hides nothing)
    speedup_vs_sync  async: sync's total wall time / async's (when both ran)

(`bench_summary.py` computes these from the results-file rows and prints the table.)

Results are appended to a JSONL file (default `runs/bench/<config hash>.jsonl` under the current
directory): a header line with the config, then one line per finished prompt holding every mode's
record. Rerunning the same command skips the finished prompts (Ctrl-C loses at most the prompt in
flight); `limit` is not part of the hash, so a larger limit extends an earlier run. An `out` file
written for another config (or drafter) is an error naming the differing settings (pass `fresh`
to overwrite it); `fresh` starts over. Drafter variants are part of the config (NAME -> absolute
directory, and a digest of each directory's files), so the same NAME with another DIR never
resumes the other's rows. A lock file beside it keeps two runs from sharing it. A prompt whose
text changed since it was recorded is run again.

The table goes to `out` (stdout), then one JSON line last, keyed by mode name; progress and the
run header go to stderr. This module knows nothing about the command line.

    from d3d.evaluation.bench import BenchConfig, run_bench
    run_bench(BenchConfig(limit=2, modes=("ar", "sync", "hf", "pld"), max_new_tokens=32))
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.evaluation.agreement import AGREEMENT_RULE, RunLog, classify
from d3d.evaluation.bench_modes import (  # noqa: F401  (MODES, runners: the registry's public names)
    AR_DRAFTER_MODES, DRAFTER_MODES, MODES, SWEEP_SEPARATOR, base_mode, runner_for,
)
from d3d.evaluation.bench_results import ResultsFile, d3d_version, directory_digest, results_path_for
from d3d.evaluation.bench_summary import format_table, progress_text, summarize  # noqa: F401
from d3d.evaluation.llamacpp import import_llama_cpp
from d3d.evaluation.prefill_metrics import add_scores, format_prefill_table, keep_modes, mode_keep, prefill_record, wants_prefill_summary
from d3d.evaluation.suites import BUILTIN_SUITES, Prompt, load_suite
from d3d.evaluation.timeline import plot_timeline, save_timeline
from d3d.evaluation.variants import (
    changes_drafter, check_drafter_modes, close_variants, cross_target, drafter_variant_of, parse_drafter_variants,
    pipeline_for, reference_of, resolved_drafters, split_variant, use_drafter_variants, with_references,
)
from d3d.inference.async_engine import AsyncConfig
from d3d.inference.draft_length import parse_draft_length
from d3d.inference.engine import DecodeStats, GenerationConfig
from d3d.inference.pipeline import DRAFTER_WEIGHT_CHOICES, Pipeline, default_device, load_target, resolve_dtype
from d3d.inference.prefill import PrefillConfig
from d3d.inference.sampling import SamplingConfig
from d3d.inference.selectors import (
    DEFAULT_PROBE_LAYERS_SPEC, DEFAULT_SELECTOR, LEGACY_SELECTOR, parse_probe_layers, parse_selectors,
)
from d3d.inference.successors import Budget
from d3d.inference.tree_engine import parse_branches
from d3d.models.decoder import Precision

WARMUP_TOKENS = 8  # length of the untimed warm-up generation per mode
DEFAULT_RESULTS_DIR = Path("runs") / "bench"  # relative to the current directory

ASYNC_KEYS = ("budget", "draft_threads", "target_threads", "async_backend")  # settings only async reads
AR_DRAFTER_KEYS = ("ar_drafter", "ar_draft_tokens")  # settings only the AR-drafter modes read


@dataclass
class BenchConfig:
    """One benchmark run."""

    suite: str = "humaneval"  # "humaneval" or a path to a .jsonl file of {"prompt": ...} lines
    limit: int | None = None  # only the first `limit` prompts
    modes: tuple[str, ...] = ("ar", "sync")  # modes to compare; "ar" is added first if missing
    max_new_tokens: int = 128  # generation budget per prompt (the same for every mode)
    block_size: int | None = None  # drafter block size B (None: the drafter's run block size, else its trained one)
    target: str | None = None  # target model spec (None: the embedded default)
    drafter: str | None = None  # drafter directory (None: the shipped one, else an untrained one)
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0  # nucleus filter (1 = off)
    top_k: int = 0  # top-k filter (0 = off)
    seed: int = 0  # sampling seed
    out: str | None = None  # results file (None: runs/bench/<config hash>.jsonl)
    fresh: bool = False  # ignore and overwrite an existing results file
    device: str | None = None  # "cpu", "cuda", ... (None: cuda if available)
    budget: str = "auto"  # async successor budget: "auto" or "C,F"
    draft_threads: int | None = None  # async: torch threads of the drafting worker (None: half the cores)
    target_threads: int | None = None  # async: torch threads of the target (None: the other half)
    async_backend: str | None = None  # async: "process", "thread" or "inline" (None: by device)
    timeline: str | None = None  # async: save the last async generation's timeline here (JSON + .png)
    ar_drafter: str | None = None  # AR draft model directory for ar-drafter / hf-assisted
    ar_draft_tokens: int = 4  # k: tokens the AR draft model proposes per round
    sweep: tuple[str, ...] = ()  # async budgets "C,F" to run one by one (replaces the single async mode)
    prefill_keep: tuple[float, ...] = ()  # selective prefill: one mode sync@keepRHO per retention (prefill_metrics.py)
    prefill_chunk: int = 32  # selective prefill: tokens per scored prompt chunk
    prefill_select: str = DEFAULT_SELECTOR  # selective prefill: comma-separated chunk selectors, one mode each (selectors.py)
    prefill_layers: str = DEFAULT_PROBE_LAYERS_SPEC  # selective prefill: the target-layers selectors' layers ("3-7")
    dtype: str | None = None  # "auto" (bfloat16 where the hardware has it; the CLI's default), "bfloat16",
    # "float16", "float32" or None (the library's default: float32 on a CPU, bfloat16 on CUDA)
    draft_length: str = "auto"  # rows verified per sync round: "auto" (chosen per round) or k
    tree_branches: str = "drafter,lookup"  # mode tree: candidate sources of the token tree (tree-drafter / tree-lookup: one each)
    precision: str = "auto"  # precision switches: a preset (auto, none, all) or switch names (`precision.py`)
    weights: str = "auto"  # "int8": weight-only int8 target and drafter for every mode; auto: packed where it runs (`quantize.py`)
    drafter_weights: str = "auto"  # the drafter's runtime weights: "auto" (the target's), "dense" or "int8"
    compile: bool = False  # torch.compile each target layer's MLP and norms (`compiled.py`)
    drafter_variants: tuple[str, ...] = ()  # "NAME=DIR": modes MODE@NAME draft with DIR on the run's target (variants.py)

    def __post_init__(self) -> None:
        self.modes = tuple(self.modes)
        self.sweep = tuple(self.sweep)
        self.drafter_variants = tuple(self.drafter_variants)
        self.prefill_keep = tuple(self.prefill_keep)

    @property
    def run_modes(self) -> tuple[str, ...]:
        """The modes in run order: "ar" first, duplicates dropped, async expanded over the sweep."""
        modes = []
        for mode in ("ar", *self.modes):
            if mode == "async" and self.sweep:
                modes += [f"async{SWEEP_SEPARATOR}{Budget.parse(b).coverage},{Budget.parse(b).fanout}" for b in self.sweep]
            else:
                modes.append(mode)
        modes += keep_modes(self.prefill_keep, parse_selectors(self.prefill_select))
        return tuple(with_references(modes))

    def drafters(self) -> dict[str, str]:
        """The drafter variants, NAME -> directory (D3DError for a bad `drafter_variants` entry)."""
        return parse_drafter_variants(self.drafter_variants)

    def generation(self) -> GenerationConfig:
        sampling = SamplingConfig(self.temperature, self.top_k, self.top_p)
        return GenerationConfig(max_new_tokens=self.max_new_tokens, sampling=sampling, seed=self.seed)

    def validate(self) -> None:
        """D3DError for any bad value, before anything is loaded."""
        check_drafter_modes(self.modes, self.drafters())
        unknown = [m for m in self.modes if m not in MODES and split_variant(m)[1] is None]
        if unknown:
            raise D3DError(f"unknown mode '{unknown[0]}' (choose from {', '.join(MODES)}, or ar/sync/async/tree@VARIANT "
                           "with a dtype, weight format, block size bN, drafter weight format dint8/ddense and/or "
                           "drafter variant NAME, e.g. ar@float32, sync@int8, sync@b8, sync@dint8, sync@NAME with "
                           "--drafter-variant NAME=DIR)")
        if "llamacpp" in self.modes:
            if self.temperature != 0:
                raise D3DError("mode llamacpp runs greedy only (temperature 0)")
            import_llama_cpp()  # a one-line error naming the extra, before anything loads
        if self.limit is not None and self.limit < 1:
            raise D3DError(f"limit must be at least 1, got {self.limit}")
        if self.block_size is not None and self.block_size < 2:
            raise D3DError(f"block size must be at least 2, got {self.block_size}")
        if self.drafter_weights not in DRAFTER_WEIGHT_CHOICES:
            raise D3DError(f"unknown drafter weight format '{self.drafter_weights}' "
                           f"(choose from {', '.join(DRAFTER_WEIGHT_CHOICES)})")
        if set(AR_DRAFTER_MODES) & set(self.modes) and not self.ar_drafter:
            raise D3DError("modes ar-drafter and hf-assisted need an AR draft model: pass --ar-drafter DIR")
        if self.ar_draft_tokens < 1:
            raise D3DError(f"AR draft tokens must be at least 1, got {self.ar_draft_tokens}")
        if self.sweep and "async" not in self.modes:
            raise D3DError("a budget sweep needs the async mode: add async to the modes")
        for budget in self.sweep:
            Budget.parse(budget)
        parse_draft_length(self.draft_length)
        parse_branches(self.tree_branches)
        resolve_dtype(self.dtype, torch.device("cpu"))
        for keep in self.prefill_keep:
            PrefillConfig(keep=keep, chunk_size=self.prefill_chunk).validate()
        parse_selectors(self.prefill_select)
        parse_probe_layers(self.prefill_layers)
        self.generation().validate()
        self.async_config().validate()
        _check_device(self.device)

    def _unused_selector_keys(self) -> tuple[str, ...]:
        """Selector settings that change nothing in this run (kept out of the results key, so that
        runs of the probe alone resume results files written before selectors existed)."""
        selects = parse_selectors(self.prefill_select) if self.prefill_keep else ()
        unused = ("prefill_select",) if selects in ((), (LEGACY_SELECTOR,)) else ()
        return unused + (() if any(s.startswith("target-layers") for s in selects) else ("prefill_layers",))

    def async_config(self) -> AsyncConfig:
        return AsyncConfig(budget=self.budget, backend=self.async_backend, draft_threads=self.draft_threads,
                           target_threads=self.target_threads)

    def results_key(self, content: dict | None = None) -> dict:
        """What a results file must match to be resumed: every setting but limit, out and fresh,
        plus `content` (digests of the models' files and the d3d version, `content_key`)."""
        key = asdict(self)
        unused = (() if "async" in self.modes else ASYNC_KEYS + ("sweep",)) + (
            () if set(AR_DRAFTER_MODES) & set(self.modes) else AR_DRAFTER_KEYS) + (
            () if any(split_variant(m)[0] == "tree" for m in self.modes) else ("tree_branches",))  # tree, tree@int8
        unused += () if self.prefill_keep else ("prefill_keep", "prefill_chunk")
        unused += self._unused_selector_keys()
        unused += ("precision",) if self.precision == "auto" else ()  # keys of runs made before these settings
        unused += ("weights",) if self.weights == "dense" else ()  # "auto" (now the default) is a key: a new timing
        unused += ("drafter_weights",) if self.drafter_weights == "auto" else ()
        unused += ("compile",) if not self.compile else ()
        unused += ("drafter_variants",) if not self.drafter_variants else ()
        for name in ("limit", "out", "fresh", "timeline") + unused:
            key.pop(name)
        key["modes"] = list(self.run_modes)
        if "sweep" in key:
            key["sweep"] = list(self.sweep)  # as JSON reads it back
        if "prefill_keep" in key:
            key["prefill_keep"] = list(self.prefill_keep)
        if "drafter_variants" in key:
            key["drafter_variants"] = resolved_drafters(self.drafters())  # NAME -> absolute directory
        device = torch.device(self.device) if self.device else default_device()
        key["device"] = str(device)
        key["dtype"] = str(resolve_dtype(self.dtype, device)).removeprefix("torch.")
        if self.suite.strip().lower() not in BUILTIN_SUITES:
            key["suite"] = str(Path(self.suite).resolve())
        if content is not None:
            key["content"] = content
        return key

    def results_path(self, content: dict | None = None) -> Path:
        return Path(self.out) if self.out else results_path_for(self.results_key(content), DEFAULT_RESULTS_DIR)


def content_key(pipe: Pipeline, cfg: BenchConfig) -> dict:
    """Digests of the files of the target and of the drafters this run uses (drafter variants
    included, when there are any), and the d3d version."""
    modes = cfg.run_modes
    drafter = pipe.drafter.path if uses_run_drafter(modes) else None
    ar_drafter = pipe.ar_drafter.path if any(m in AR_DRAFTER_MODES for m in modes) else None
    key = {"target": directory_digest(pipe.target.model_dir), "drafter": directory_digest(drafter),
           "ar_drafter": directory_digest(ar_drafter), "d3d": d3d_version()}
    if cfg.drafter_variants:
        key["drafter_variants"] = {name: directory_digest(Path(path)) for name, path in cfg.drafters().items()}
    return key


def uses_run_drafter(modes: tuple[str, ...]) -> bool:
    """Whether a mode drafts with the run's drafter (a drafter mode not on a drafter variant)."""
    return any(base_mode(m) in DRAFTER_MODES and drafter_variant_of(m) is None for m in modes)


def variant_drafters(pipe: Pipeline, modes: tuple[str, ...]) -> dict[str, str]:
    """Mode -> its drafter's description, for the modes on a drafter variant or drafter weight format
    (each drafter loaded here, so a wrong tokenizer is an error before the results file is touched)."""
    return {m: pipeline_for(pipe, m).drafter.description for m in modes if changes_drafter(m)}


def _check_device(device: str | None) -> None:
    if device is None:
        return
    try:
        dev = torch.device(device)
    except RuntimeError as error:
        raise D3DError(f"unknown device '{device}'") from error
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise D3DError(f"device '{device}' asked for, but CUDA is not available")


# ---------------------------------------------------------------------------------------------
# Running


def prompt_digest(prompt: Prompt) -> str:
    return hashlib.sha256(prompt.text.encode("utf-8")).hexdigest()[:16]


def mode_order(modes: tuple[str, ...], index: int) -> list[str]:
    """`modes` rotated by `index` (prompt i starts with mode i mod len)."""
    shift = index % len(modes)
    return list(modes[shift:] + modes[:shift])


def run_record(tokens: list[int], stats: DecodeStats) -> dict:
    """What the results file keeps of one (prompt, mode) generation."""
    return {
        "new_tokens": stats.new_tokens, "total_s": stats.total_s, "prefill_s": stats.prefill_s,
        "rounds": stats.rounds, "round_tokens": stats.round_tokens, "tau": stats.tau,
        "draft_s": stats.draft_s, "verify_s": stats.verify_s, "stop_reason": stats.stop_reason,
        "draft_lengths": getattr(stats, "draft_lengths", {}), "skipped_rounds": getattr(stats, "skipped_rounds", 0),
        "policy_draft_s": getattr(stats, "policy_draft_s", 0.0), "tokens": tokens,
        "passes": stats.passes, "target_capacity": stats.target_capacity,  # the replay log (`agreement.py`)
        "target_threads": stats.target_threads,
    } | async_record(stats) | prefill_record(stats) | tree_record(stats)


def tree_record(stats: DecodeStats) -> dict:
    """What tree decoding adds to a record (nothing for other modes)."""
    if not hasattr(stats, "wins"):
        return {}
    return {"tree_nodes": stats.tree_nodes, "nodes_hist": stats.nodes_hist, "wins": stats.wins,
            "drafter_rounds": stats.drafter_rounds}


def async_record(stats: DecodeStats) -> dict:
    """What asynchronous decoding adds to a record (nothing for other modes)."""
    if not hasattr(stats, "hit_rate"):
        return {}
    return {"hits": stats.hits, "misses": stats.misses, "successor_s": stats.successor_s,
            "successor_passes": stats.successor_passes, "hidden_rounds": stats.hidden_rounds,
            "overlapped_rounds": stats.overlapped_rounds, "wait_s": stats.wait_s, "budget": stats.budget,
            "n_async": stats.n_async, "fallback": stats.fallback}


def run_prompt(pipe: Pipeline, modes: tuple[str, ...], index: int, prompt: Prompt, cfg: GenerationConfig) -> dict:
    """Every mode on one prompt, back to back in rotated order; the results-file row."""
    prompt_ids = pipe.target.encode_chat(prompt.text)
    order = mode_order(modes, index)
    results = {mode: run_record(*runner_for(mode)(pipe, prompt_ids, cfg)) for mode in order}
    add_scores(prompt, results, pipe.target.decode)
    if cfg.sampling.greedy:
        add_agreement(pipe, prompt_ids, results)
    return {"id": prompt.id, "index": index, "prompt_sha": prompt_digest(prompt), "order": order,
            "results": {mode: results[mode] for mode in modes}}


def add_agreement(pipe: Pipeline, prompt_ids: Tensor, results: dict[str, dict]) -> None:
    """Classify every greedy mode's output against plain decoding's of its own target (`agreement.py`;
    `variants.reference_of`); modes on another model (`variants.cross_target`) are not judged."""
    for mode, record in results.items():
        if mode != "ar" and mode_keep(mode) is None and not cross_target(mode):
            own, ref_mode = pipeline_for(pipe, mode), reference_of(mode)
            reference = run_log(results[ref_mode], pipeline_for(pipe, ref_mode))
            judged = classify(reference, run_log(record, own), prompt_ids, exact_target(own), own.target.dtype)
            record |= judged.as_dict()


def run_log(record: dict, pipe: Pipeline) -> RunLog:
    """A results-file record as the agreement check's `RunLog` (replayable when it logged its passes)."""
    passes = record.get("passes")
    return RunLog(record["tokens"], None if passes is None else [tuple(p) for p in passes],
                  record.get("target_capacity", 0), pipe.target.native("the agreement check"),
                  record.get("target_threads", 0))


def rejudge(pipe: Pipeline, rows: dict[str, dict], prompts: dict[str, Prompt], cfg: GenerationConfig) -> None:
    """Resumed records judged by an older agreement rule than `AGREEMENT_RULE` are judged again
    (in memory: the results file keeps what was measured). Records without a pass log (written
    before rule 3) are generated again, untimed, to get one; the rerun is what is judged, and
    `agreement_rerun` says so."""
    for prompt_id, row in rows.items():
        stale = [m for m, r in row["results"].items() if r.get("agreement") not in (None, "identical")
                 and r.get("agreement_rule", 1) < AGREEMENT_RULE]
        if stale:
            prompt_ids = pipe.target.encode_chat(prompts[prompt_id].text)
            wanted = {"ar", *stale, *(reference_of(m) for m in stale)}
            judged = {m: _with_pass_log(pipe, m, r, prompt_ids, cfg) for m, r in row["results"].items() if m in wanted}
            add_agreement(pipe, prompt_ids, judged)
            for m in stale:
                row["results"][m] |= {k: v for k, v in judged[m].items() if k.startswith("agreement")}


def _with_pass_log(pipe: Pipeline, mode: str, record: dict, prompt_ids: Tensor, cfg: GenerationConfig) -> dict:
    """The record itself when it has a whole pass log, shapes and thread count (or its mode cannot log
    one), else a rerun's record."""
    if ("passes" in record and "target_threads" in record) or base_mode(mode) not in NATIVE_MODES:
        return dict(record)
    rerun = run_record(*runner_for(mode)(pipe, prompt_ids, cfg))
    return rerun | {"agreement_rerun": rerun["tokens"] != record["tokens"]}


NATIVE_MODES = ("ar", "sync", "async", "ar-drafter")  # modes on the native runtime: their passes are logged


def exact_target(pipe: Pipeline):
    """The run's own target weights computed in float32 (the model itself when it already is), for
    near-tie checks: the same model in exact arithmetic, not the unrounded checkpoint."""
    model = pipe.target.native("the agreement check")
    if model.dtype in (torch.float32, torch.float64):
        return model
    if not hasattr(pipe, "_exact_target"):
        exact = copy.deepcopy(model).to(torch.float32)
        exact.precision = Precision()
        pipe._exact_target = exact
    return pipe._exact_target


def warm_up(pipe: Pipeline, modes: tuple[str, ...], prompt: Prompt, cfg: GenerationConfig) -> None:
    """One short untimed generation per mode (lazy loads, allocator and first-call costs)."""
    short = GenerationConfig(min(WARMUP_TOKENS, cfg.max_new_tokens), cfg.sampling, cfg.stop_strings, cfg.seed)
    prompt_ids = pipe.target.encode_chat(prompt.text)
    for mode in modes:
        runner_for(mode)(pipe, prompt_ids, short)




def _log(message: str) -> None:
    print(f"[d3d bench] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# The benchmark


def run_bench(cfg: BenchConfig, out: TextIO | None = None) -> dict:
    """Run (or resume) the benchmark, print the table and the JSON line last to `out` (stdout).

    Returns the summary printed as that JSON line.
    """
    out = out or sys.stdout
    cfg.validate()
    prompts = load_suite(cfg.suite, cfg.limit)
    pipe = Pipeline(load_target(cfg.target, cfg.device, cfg.dtype, cfg.precision, cfg.weights, cfg.compile), cfg.drafter, cfg.block_size, cfg.async_config(),
                    cfg.ar_drafter, cfg.ar_draft_tokens, cfg.drafter_weights)
    pipe.prefill_chunk_size = cfg.prefill_chunk
    pipe.prefill_layers = parse_probe_layers(cfg.prefill_layers)
    pipe.draft_length = parse_draft_length(cfg.draft_length)
    pipe.tree_branches = parse_branches(cfg.tree_branches)
    use_drafter_variants(pipe, cfg.drafters())
    drafter = pipe.drafter.description if uses_run_drafter(cfg.run_modes) else None
    if any(m in AR_DRAFTER_MODES for m in cfg.run_modes):
        drafter = "; ".join(filter(None, [drafter, f"AR draft model: {pipe.ar_drafter.description}, k={cfg.ar_draft_tokens}"]))
    mode_drafters = variant_drafters(pipe, cfg.run_modes)  # mode -> description, for modes with another drafter
    content = content_key(pipe, cfg)
    header = {"config": cfg.results_key(content), "drafter": drafter}
    header |= {"variant_drafters": mode_drafters} if mode_drafters else {}  # older files keep their header
    results = ResultsFile(cfg.results_path(content), header)
    with results.lock():
        try:
            rows = _run_pending(pipe, prompts, cfg, results, drafter, mode_drafters)
        finally:
            _save_async_timeline(pipe, cfg.timeline)
            close_variants(pipe)
            pipe.close()
    summary = summarize([rows[p.id] for p in prompts], cfg.run_modes, cfg.temperature == 0, drafter, mode_drafters)
    print(format_table(summary), file=out)
    if wants_prefill_summary([rows[p.id] for p in prompts], cfg.run_modes):
        print("\n" + format_prefill_table(summary), file=out)
    print(json.dumps(summary), file=out, flush=True)
    return summary


def _save_async_timeline(pipe: Pipeline, path: str | None) -> None:
    """The timeline of the last async generation of this run (JSON, and a .png beside it)."""
    runner = pipe.__dict__.get("async_runner")
    if path and runner is not None and runner.last_stats is not None:
        json_path = save_timeline(runner.last_stats, path)
        _log(f"timeline of the last async generation: {json_path}, {plot_timeline(json_path, json_path.with_suffix('.png'))}")


def _run_pending(
    pipe: Pipeline, prompts: list[Prompt], cfg: BenchConfig, results: ResultsFile, drafter: str | None,
    mode_drafters: dict[str, str],
) -> dict[str, dict]:
    """Resume from `results`, run the prompts not yet done, and return every prompt's row by id."""
    from tqdm import tqdm

    modes, gen_cfg = cfg.run_modes, cfg.generation()
    done = results.open(cfg.fresh)
    rows = {p.id: done[p.id] for p in prompts if done.get(p.id, {}).get("prompt_sha") == prompt_digest(p)}
    pending = [(i, p) for i, p in enumerate(prompts) if p.id not in rows]
    if gen_cfg.sampling.greedy:
        rejudge(pipe, rows, {p.id: p for p in prompts}, cfg.generation())
    _log_header(cfg, pipe, drafter, mode_drafters, len(prompts), len(rows), results.path)
    if pending:
        warm_up(pipe, modes, pending[0][1], gen_cfg)
    try:
        with tqdm(total=len(prompts), initial=len(rows), file=sys.stderr, desc="bench", unit="prompt") as bar:
            for index, prompt in pending:
                rows[prompt.id] = row = run_prompt(pipe, modes, index, prompt, gen_cfg)
                results.append(row)
                bar.update(1)
                bar.set_postfix_str(progress_text(summarize(list(rows.values()), modes, False)))
    except KeyboardInterrupt:
        _log(f"interrupted: {len(rows)}/{len(prompts)} prompts saved in {results.path}; rerun to resume")
        raise
    return rows


def _log_header(cfg: BenchConfig, pipe: Pipeline, drafter: str | None, mode_drafters: dict[str, str], total: int,
                done: int, path: Path) -> None:
    target = pipe.target
    _log(f"target {target.name} ({target.model_dir}) on {target.device}, {str(target.dtype).removeprefix('torch.')}")
    if drafter:
        _log(drafter)
    for mode, description in mode_drafters.items():
        _log(f"{mode}: {description}")
    sampling = "greedy" if cfg.temperature == 0 else f"T={cfg.temperature} top_k={cfg.top_k} top_p={cfg.top_p}"
    _log(f"suite {cfg.suite}: {total} prompts, modes {', '.join(cfg.run_modes)}, "
         f"max_new_tokens {cfg.max_new_tokens}, {sampling}")
    _log(f"results {path}: RESUMING, {done} of {total} prompts already done with the same settings, models and "
         f"d3d version (--fresh to rerun them)" if done else f"results {path}")
