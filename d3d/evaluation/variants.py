"""Modes on another build of the same target, in the same benchmark run: `MODE@VARIANT`.

    ar@float32           plain decoding of the target in float32
    ar@int8  sync@int8   plain and D3D decoding with weight-only int8 projections (the run's dtype)
    tree@int8            tree decoding (also tree-drafter@..., tree-lookup@...) on the int8 target
    sync@float32+int8    a dtype and a weight format together

    sync@b8              D3D decoding drafting blocks of 8 with the run's drafter and target
    sync@int8+b8         ... on the int8 target

    sync@new  tree@new   D3D decoding with another drafter (`--drafter-variant new=DIR`) on the run's target
    sync@new+b8          ... drafting blocks of 8

    sync@dint8  async@dint8  tree@dint8   D3D decoding with the run's drafter at int8 runtime weights
                         on the run's target (`ddense`: dense ones, e.g. beside an int8 target)
    sync@new+dint8  sync@dint8+b8   ... with another drafter, or drafting blocks of 8

    sync@skip0  sync@new+skip0      D3D decoding whose draft-length back-off takes at most N plain steps in
                         a row while drafting loses (`skipN`; skip0: it drafts every round; the default is
                         `draft_length.MAX_SKIP`); sync only, on the run's target

A variant names a dtype (`bfloat16`, `float16`, `float32`), a weight format (`dense`, `int8`), a
block size (`bN`: the drafter runs blocks of N rows, anchor included, as `--block-size N` does),
a drafter weight format (`dint8`, `ddense`: the drafter's runtime weights, as `--drafter-weights`
sets them for a run), a drafter variant (a NAME registered with `--drafter-variant NAME=DIR`:
letters, digits, `-` and `_`, never one of the other names, `bN`, `skipN` or `keep...`), a back-off
limit (`skipN`, sync only), or several joined
by "+"; what it does not name is the run's. A drafter variant or drafter weight format changes
only the drafting and runs on the run's target, so it joins only a block size and each other
(`sync@new+b8`, `sync@new+dint8`), never a dtype or weight format. Each variant loads its own
drafter (the run's, or the drafter variant's directory) and, when it names a dtype or weight
format, its own target, once, in a `Pipeline` beside the run's, with the run's `--block-size`,
`--drafter-weights`, verification length and tree branches (unless it names its own block size or
drafter weight format); the run's precision setting when the dtype is the run's, else `auto`. A
variant of block size, drafter and/or drafter weight format alone shares the run's target, so its
reference is the run's `ar` (the drafter's weights never change the output, only acceptance), and
`ar@bN`, `ar@NAME` and `ar@dint8` are not modes.

Which output a mode is compared with:

- a speculative mode on a variant is lossless relative to that variant's target, so its
  `identical` and near-tie agreement compare it with `ar@VARIANT` (added to the run when missing);
- `ar@VARIANT` and `llamacpp` compute with other weights or kernels than the run's target: they
  are compared with the run's `ar` as agreement only (identical prompts, shared prefix), which is
  the quality cost of that dtype, of quantization or of llama.cpp (never counted as a divergence).

Every mode's speed is also given against the fastest plain decoding of the run (`ar` or any
`ar@VARIANT`), per token: `speedup_vs_fastest_plain` = the mode's tokens/s / the fastest plain
mode's tokens/s, so a speculative mode in bfloat16 is not flattered by a slow bfloat16 baseline.

This module knows nothing about the results file or the table.
"""

from __future__ import annotations

import copy
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from torch import Tensor

from d3d.errors import D3DError
from d3d.inference.engine import DecodeStats, GenerationConfig
from d3d.inference.pipeline import DTYPES, Pipeline, load_target, shipped_drafter_dir
from d3d.models.drafter import ACCEPTANCE_FILE, is_drafter_dir
from d3d.models.quantize import WEIGHT_FORMATS

SEPARATOR = "@"
VARIANT_BASES = ("ar", "sync", "async", "tree", "tree-drafter", "tree-lookup")  # modes that run on a variant's target
CROSS_TARGET_MODES = ("llamacpp",)  # compared with the run's ar as agreement only (besides ar@VARIANT)
DRAFTER_NAME = re.compile(r"[A-Za-z0-9_-]+")  # a drafter variant's NAME
DRAFTER_WEIGHT_TOKENS = {f"d{w}": w for w in WEIGHT_FORMATS}  # "dint8" -> "int8": the drafter's runtime weights
RESERVED_NAME = re.compile(  # what a drafter variant's NAME may not be
    r"b\d+|skip\d+|keep.*|" + "|".join(map(re.escape, (*DTYPES, *WEIGHT_FORMATS, *DRAFTER_WEIGHT_TOKENS))),
    re.IGNORECASE)


@dataclass(frozen=True)
class Variant:
    """What a `MODE@VARIANT` suffix changes; None keeps the run's setting."""

    dtype: str | None = None  # a DTYPES name
    weights: str | None = None  # a WEIGHT_FORMATS name
    block_size: int | None = None  # the drafter's block size B (bN)
    drafter: str | None = None  # a drafter variant's NAME (its directory: `--drafter-variant NAME=DIR`)
    drafter_weights: str | None = None  # the drafter's runtime weight format, a WEIGHT_FORMATS name (dint8, ddense)
    max_skip: int | None = None  # the draft-length back-off's longest run of plain steps (skipN; sync only)

    @property
    def same_target(self) -> bool:
        """Whether the variant runs the run's own target (it changes only the drafting)."""
        return self.dtype is None and self.weights is None

    @property
    def changes_drafter(self) -> bool:
        """Whether the variant drafts with another drafter than the run's (a drafter variant or drafter
        weight format; a block size alone keeps the drafter, run with other blocks)."""
        return self.drafter is not None or self.drafter_weights is not None


def parse_variant(text: str) -> Variant | None:
    """The variant a suffix names, or None if `text` is not one (each setting at most once)."""
    found: dict[str, object] = {}
    for part in text.split("+"):
        setting = _setting(part)
        if setting is None or setting[0] in found:
            return None
        found[setting[0]] = setting[1]
    return Variant(**found)  # type: ignore[arg-type]


def _setting(part: str) -> tuple[str, object] | None:
    """(Variant field, value) that one `+`-separated part of a suffix names, or None."""
    if part in DTYPES:
        return "dtype", part
    if part in WEIGHT_FORMATS:
        return "weights", part
    if part in DRAFTER_WEIGHT_TOKENS:
        return "drafter_weights", DRAFTER_WEIGHT_TOKENS[part]
    block = re.fullmatch(r"b(\d+)", part)
    if block and int(block.group(1)) >= 2:
        return "block_size", int(block.group(1))
    skip = re.fullmatch(r"skip(\d+)", part)
    if skip:
        return "max_skip", int(skip.group(1))
    if DRAFTER_NAME.fullmatch(part) and not RESERVED_NAME.fullmatch(part):
        return "drafter", part
    return None


def split_variant(mode: str) -> tuple[str, str | None]:
    """("sync", "int8") for "sync@int8"; (mode, None) for any mode that is not on a variant
    (`ar` on a block-size, drafter or drafter-weights variant is not one: it would be the run's `ar`
    again, or plain decoding with a drafter)."""
    base, _, suffix = mode.partition(SEPARATOR)
    variant = parse_variant(suffix) if base in VARIANT_BASES and suffix else None
    if variant is not None and variant.max_skip is not None and base != "sync":  # only sync's policy backs off
        return mode, None
    if variant is not None and not (base == "ar" and (variant.same_target or variant.changes_drafter)):
        return base, suffix
    return mode, None


def drafter_variant_of(mode: str) -> str | None:
    """The drafter variant's NAME a mode runs with ("new" for "sync@new+b8"), None for any other mode."""
    variant = split_variant(mode)[1]
    parsed = parse_variant(variant) if variant is not None else None
    return parsed.drafter if parsed is not None else None


def changes_drafter(mode: str) -> bool:
    """Whether a mode drafts with another drafter than the run's ("sync@new", "sync@dint8+b8"), so
    that its own drafter is described apart."""
    variant = split_variant(mode)[1]
    parsed = parse_variant(variant) if variant is not None else None
    return parsed is not None and parsed.changes_drafter


# ---------------------------------------------------------------------------------------------
# Drafter variants: `--drafter-variant NAME=DIR`


def parse_drafter_variants(specs: tuple[str, ...]) -> dict[str, str]:
    """NAME -> drafter directory of each "NAME=DIR" (D3DError for a malformed, reserved or repeated
    NAME, or a DIR that is not a saved drafter)."""
    drafters: dict[str, str] = {}
    for spec in specs:
        name, sep, path = (part.strip() for part in spec.partition("="))
        if not sep or not name or not path:
            raise D3DError(f"--drafter-variant takes NAME=DIR, got '{spec}'")
        if not DRAFTER_NAME.fullmatch(name) or RESERVED_NAME.fullmatch(name):
            raise D3DError(f"bad drafter variant name '{name}': use letters, digits, '-' and '_', and no dtype, "
                           "weight format, block size (bN) or keep... name")
        if name in drafters:
            raise D3DError(f"drafter variant '{name}' is registered twice (--drafter-variant {name}=...)")
        if not is_drafter_dir(path):
            raise D3DError(f"drafter variant '{name}': {path} is not a saved drafter directory (no drafter_config.json)")
        drafters[name] = path
    return drafters


def check_drafter_modes(modes: tuple[str, ...], drafters: dict[str, str]) -> None:
    """D3DError for a mode naming an unregistered NAME (or no known variant part at all), `ar@NAME`
    or `ar@dint8`, a drafter variant or drafter weight format joined with a dtype or weight format,
    and a registered NAME no mode uses."""
    used = set()
    for mode in modes:
        base, _, suffix = mode.partition(SEPARATOR)
        variant = parse_variant(suffix) if base in VARIANT_BASES and suffix else None
        if variant is None or not variant.changes_drafter:
            continue
        if variant.drafter is not None and variant.drafter not in drafters:
            raise D3DError(f"unknown mode '{mode}': '{variant.drafter}' is no dtype, weight format, block size (bN), "
                           f"drafter weight format ({', '.join(DRAFTER_WEIGHT_TOKENS)}) or registered drafter variant "
                           f"(register one with --drafter-variant {variant.drafter}=DIR)")
        what = "a drafter variant" if variant.drafter else f"a drafter weight format (d{variant.drafter_weights})"
        if base == "ar":
            raise D3DError(f"'{mode}' is not a mode: plain decoding uses no drafter ({what} runs on the run's "
                           "target, whose plain decoding is ar)")
        if not variant.same_target:
            raise D3DError(f"mode '{mode}': {what} runs on the run's target and joins no dtype or weight format "
                           "(set --dtype / --weights for the whole run)")
        if variant.drafter is not None:
            used.add(variant.drafter)
    unused = [name for name in drafters if name not in used]
    if unused:
        raise D3DError(f"drafter variant '{unused[0]}' is used by no mode: add e.g. sync@{unused[0]} to the modes")


def use_drafter_variants(pipe: Pipeline, drafters: dict[str, str]) -> None:
    """Register the drafter variants' directories (NAME -> DIR) on the run's pipeline, for `pipeline_for`,
    and warn on stderr where a variant's calibration differs in kind from the run drafter's."""
    pipe.__dict__["_drafter_variants"] = dict(drafters)
    if drafters:
        run_dir = Path(pipe.drafter_spec) if pipe.drafter_spec else shipped_drafter_dir(pipe.target)
        for warning in calibration_warnings(run_dir, drafters):
            print(f"[d3d] warning: {warning}", file=sys.stderr)


def calibration_warnings(run_dir: Path | None, drafters: dict[str, str]) -> list[str]:
    """One line per drafter variant that has an acceptance table where the run's drafter has none, or
    the reverse: the verification length of one is chosen from calibrated acceptance, of the other
    from raw confidences, so their t_d, t_v and speed are not like for like."""
    def calibrated(directory: Path | str | None) -> bool:
        return directory is not None and (Path(directory) / ACCEPTANCE_FILE).is_file()

    run_has = calibrated(run_dir)
    return [f"drafter variant '{name}' ({path}) {'has no' if run_has else 'has an'} {ACCEPTANCE_FILE} and the "
            f"run's drafter {'has one' if run_has else 'has none'}: their verification lengths are chosen "
            "differently (a calibration table against raw confidences), so their speeds are not like for like; "
            f"`d3d eval-drafter --drafter DIR --data DEV.jsonl --save` writes the table"
            for name, path in drafters.items() if calibrated(path) != run_has]


def resolved_drafters(drafters: dict[str, str]) -> dict[str, str]:
    """NAME -> absolute drafter directory (as the results key records it)."""
    return {name: str(Path(path).resolve()) for name, path in drafters.items()}


def own_reference(variant: str | None) -> bool:
    """Whether modes on `variant` are compared with `ar@VARIANT` (their own target), not the run's ar."""
    parsed = parse_variant(variant) if variant is not None else None
    return parsed is not None and not parsed.same_target


def with_references(modes: list[str]) -> list[str]:
    """`modes` with `ar@VARIANT` inserted before the first mode on each variant that lacks it."""
    out: list[str] = []
    for mode in modes:
        variant = split_variant(mode)[1]
        if own_reference(variant) and f"ar{SEPARATOR}{variant}" not in out:
            out.append(f"ar{SEPARATOR}{variant}")
        out.append(mode)
    return list(dict.fromkeys(out))


def reference_of(mode: str) -> str:
    """The mode whose output `mode` must equal: `ar@VARIANT` on a variant, else the run's `ar`."""
    base, variant = split_variant(mode)
    return f"ar{SEPARATOR}{variant}" if own_reference(variant) and base != "ar" else "ar"


def cross_target(mode: str) -> bool:
    """Whether `mode` runs another model than the run's target (agreement with ar only)."""
    base, variant = split_variant(mode)
    return mode in CROSS_TARGET_MODES or (variant is not None and base == "ar")


def pipeline_for(pipe: Pipeline, mode: str) -> Pipeline:
    """The pipeline a mode runs on: its variant's (loaded once, kept on `pipe`), else `pipe` itself."""
    variant = split_variant(mode)[1]
    if variant is None:
        return pipe
    cache = pipe.__dict__.setdefault("_variants", {})
    if variant not in cache:
        cache[variant] = _load_variant(pipe, variant)
    return cache[variant]


def _load_variant(pipe: Pipeline, variant: str) -> Pipeline:
    v = parse_variant(variant)
    assert v is not None
    run = pipe.target
    if v.same_target:
        target = run
    else:
        dtype = DTYPES[v.dtype] if v.dtype else run.dtype
        precision = run.model.precision if run.model is not None and dtype == run.dtype else "auto"
        compiled = getattr(run.model, "compiled", False)
        target = load_target(run.name, run.device, dtype, precision, v.weights or run.weights, compiled)
    block_size = v.block_size or pipe.block_size
    other = Pipeline(target, _drafter_spec(pipe, v.drafter), block_size, copy.copy(pipe.async_config),
                     pipe.ar_drafter_spec, pipe.ar_draft_tokens, v.drafter_weights or pipe.drafter_weights)
    other.draft_length = pipe.draft_length
    other.max_skip = pipe.max_skip if v.max_skip is None else v.max_skip
    other.tree_branches = pipe.tree_branches
    return other


def _drafter_spec(pipe: Pipeline, name: str | None) -> str | None:
    """The drafter a variant runs: the directory registered under `name`, else the run's."""
    if name is None:
        return pipe.drafter_spec
    drafters = pipe.__dict__.get("_drafter_variants", {})
    if name not in drafters:
        raise D3DError(f"unknown drafter variant '{name}' (register it with --drafter-variant {name}=DIR)")
    return drafters[name]


Runner = Callable[[Pipeline, Tensor, GenerationConfig], tuple[list[int], DecodeStats]]


def variant_runner(mode: str, base_runner: Runner) -> Runner:
    """A bench mode runner for `mode` = `BASE@VARIANT`: BASE's own runner (`base_runner`, e.g. tree
    decoding with one branch for tree-lookup) on the variant's pipeline."""

    def run(pipe: Pipeline, prompt_ids: Tensor, cfg: GenerationConfig) -> tuple[list[int], DecodeStats]:
        return base_runner(pipeline_for(pipe, mode), prompt_ids, cfg)

    return run


def close_variants(pipe: Pipeline) -> None:
    """Stop the drafting workers of every variant pipeline."""
    for other in pipe.__dict__.get("_variants", {}).values():
        other.close()


def agreement_with_ar(tokens: list[list[int]], ar_tokens: list[list[int]]) -> dict:
    """How far a cross-target mode's outputs follow the run's ar: identical prompts, and the mean
    share of ar's tokens produced before the first difference."""
    shares = []
    for out, ref in zip(tokens, ar_tokens):
        same = next((i for i, (a, b) in enumerate(zip(out, ref)) if a != b), min(len(out), len(ref)))
        shares.append(same / len(ref) if ref else 1.0)
    return {"identical_prompts": sum(o == r for o, r in zip(tokens, ar_tokens)),
            "shared_prefix": round(sum(shares) / len(shares), 4) if shares else None}


def add_fastest_plain(summary: dict) -> None:
    """Per mode: `speedup_vs_fastest_plain` against the fastest plain mode of the run (per token),
    and, when llama.cpp ran, `speedup_vs_llamacpp` (per token)."""
    plain = {m: s["tokens_per_s"] for m, s in summary.items() if split_variant(m)[0] == "ar" and s["tokens_per_s"]}
    fastest = max(plain, key=plain.get) if plain else None
    llama = summary.get("llamacpp", {}).get("tokens_per_s")
    for s in summary.values():
        rate = s["tokens_per_s"] or 0.0
        s["fastest_plain"] = fastest
        s["speedup_vs_fastest_plain"] = round(rate / plain[fastest], 4) if fastest else None
        if llama:
            s["speedup_vs_llamacpp"] = round(rate / llama, 4)
