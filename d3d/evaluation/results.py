"""`make results`: every measurement of the results page, resumably, then `docs/results.md` from them.

One command (`make results`, i.e. `python -m d3d.evaluation.results`) runs the page's sections in
order, the cheap ones and the ones that fill caches first (`results_sections.py`):

    data-throughput, cost, table, load, soak, block-attention, prefill, demo

and, only when asked for (`--optional`, or by name in `--only`), the async table with its
timeline, the budget sweep and the pruning curve (`results_optional.py`).

A section is a list of commands, each run as a subprocess exactly as the page shows it
(`results_steps.py`). A command's output is kept under `runs/results/<section>/` once it exits
cleanly, and a command whose output exists is not run again: an interrupted run resumes (the
benchmarks also resume prompt by prompt), a finished one only renders (to measure a section again,
after shipping a new drafter say, pass `--fresh SECTION`). What the page is rendered from is kept
in git under `docs/results-data/` (`results_keep.py`) and restored from there, so a fresh clone
renders the page and measures only what is missing. A command that fails is
recorded, reported on the page with the end of its log, and tried again next time; the other
commands and sections still run. Progress goes to stderr as each section and command starts and
ends. The page is rendered from every output that exists, whichever sections this run ran: a
header (machine, date, commit, dtype), a status row per section (the commit and the machine that
measured it, recorded with each output, so a page rendered on one machine does not claim another's
numbers), the goal tables per issue (`results_goals.py`), then one section per measurement with its
commands, its table and its JSON summary lines.

    python -m d3d.evaluation.results                      # everything, then the page
    python -m d3d.evaluation.results --list               # sections, their commands and state
    python -m d3d.evaluation.results --only cost,demo     # some sections (the page still shows all)
    python -m d3d.evaluation.results --render-only        # the page from what is measured
    python -m d3d.evaluation.results --only table --fresh table   # measure a section again

This module knows the order, the runner and the page; it imports nothing it measures.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

from d3d.errors import D3DError
from d3d.evaluation.results_config import ResultsConfig
from d3d.evaluation.results_goals import goal_tables
from d3d.evaluation.results_keep import forget, keep, restore
from d3d.evaluation.results_optional import OPTIONAL_SECTIONS
from d3d.evaluation.results_sections import SECTIONS, Section, fmt, md_table
from d3d.evaluation.results_steps import Executor, Step, StepOutput, read_step, run_command, run_step

ALL_SECTIONS = SECTIONS + OPTIONAL_SECTIONS
KEEP_DIR = "docs/results-data"  # the page's measurements, kept in git (`results_keep.py`)
Outputs = dict[str, dict[str, StepOutput]]  # section name -> step name -> output


def _log(message: str) -> None:
    print(f"[results] {message}", file=sys.stderr, flush=True)


def select_sections(only: str | None, optional: bool = False) -> list[Section]:
    """The sections to run, in page order: those named in `only`, else the default ones (and the optional ones)."""
    if only is None:
        return [s for s in ALL_SECTIONS if s.default or optional]
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = {s.name for s in ALL_SECTIONS}
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise D3DError(f"unknown section '{unknown[0] if unknown else only}' (choose from {', '.join(s.name for s in ALL_SECTIONS)})")
    return [s for s in ALL_SECTIONS if s.name in names]


def folder_of(cfg: ResultsConfig, section: Section) -> Path:
    return Path(cfg.runs_dir) / section.folder


def section_steps(cfg: ResultsConfig, section: Section) -> list[Step]:
    """A section's commands; a section that cannot even list them is an error naming it."""
    try:
        return section.steps(cfg)
    except Exception as error:  # noqa: BLE001 (reported on the page; the other sections go on)
        raise D3DError(f"section {section.name}: {type(error).__name__}: {error}") from error


def run_section(cfg: ResultsConfig, section: Section, execute: Executor, commit: str,
                machine_name: str = "unknown") -> dict[str, StepOutput]:
    """Run the section's commands that have no output yet, printing progress; their outputs by step name."""
    steps, folder = section_steps(cfg, section), folder_of(cfg, section)
    done = sum(read_step(s, folder).measured for s in steps)
    _log(f"== {section.name}: {len(steps)} command(s), {done} measured earlier")
    outputs = {}
    for step in steps:
        where = f"{section.name}/{step.name}"
        if read_step(step, folder).measured:
            _log(f"{where}: measured earlier ({folder / step.name}.out), skipped")
            outputs[step.name] = read_step(step, folder)
            continue
        _log(f"{where}: $ {step.shown()}")
        outputs[step.name] = o = run_step(step, folder, execute, commit, machine_name)
        if o.measured:
            _log(f"{where}: done ({o.meta.get('wall_s', 0):.0f} s)")
        else:
            _log(f"{where}: FAILED ({o.failure['error'] if o.failure else 'no output'}); log in {folder / step.name}.log")
    failed = [n for n, o in outputs.items() if not o.measured]
    _log(f"== {section.name}: " + (f"{len(failed)} command(s) FAILED: {', '.join(failed)}" if failed else "done"))
    return outputs


def read_section(cfg: ResultsConfig, section: Section) -> dict[str, StepOutput]:
    folder = folder_of(cfg, section)
    return {step.name: read_step(step, folder) for step in section_steps(cfg, section)}


def make_results(cfg: ResultsConfig, only: str | None = None, optional: bool = False, execute: Executor = run_command,
                 render_only: bool = False, fresh: str | None = None) -> Path:
    """Run the chosen sections (none with `render_only`; those in `fresh` measured again), then write the
    page from every output; its path."""
    chosen = select_sections(f"{only},{fresh}" if only and fresh else only, optional)  # a fresh section runs
    for section in select_sections(fresh) if fresh else []:
        _log(f"== {section.name}: measured again (--fresh): its earlier outputs removed")
        forget(section.folder, cfg.runs_dir, cfg.keep_dir)
    if cfg.keep_dir and (n := restore(cfg.runs_dir, cfg.keep_dir)):
        _log(f"restored {n} kept measurement file(s) from {cfg.keep_dir}")
    commit, here = git_commit(), machine()
    errors: dict[str, str] = {}
    for section in [] if render_only else chosen:
        try:
            run_section(cfg, section, execute, commit, here)
        except D3DError as error:
            errors[section.name] = str(error)
            _log(f"== {section.name}: FAILED: {error}")
        if cfg.keep_dir:
            keep(cfg.runs_dir, cfg.keep_dir)
    shown = [s for s in ALL_SECTIONS if s.default or s in chosen or _has_outputs(cfg, s)]
    outputs: Outputs = {}
    for section in shown:
        try:
            outputs[section.name] = read_section(cfg, section)
        except D3DError as error:
            errors.setdefault(section.name, str(error))
            outputs[section.name] = {}
    page = Path(cfg.page)
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render_page(cfg, shown, outputs, errors, commit))
    _log(f"wrote {page}")
    return page


def _has_outputs(cfg: ResultsConfig, section: Section) -> bool:
    folder = folder_of(cfg, section)
    return folder.is_dir() and any(folder.glob("*.out"))


# ---------------------------------------------------------------------------------------------
# The page


def git_commit() -> str:
    """HEAD's short hash, with "+changes" when the package (code or shipped drafter) differs from it."""
    try:
        found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10)
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", "d3d"],
                                 capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    sha = found.stdout.strip()
    return (sha + ("+changes" if changed.stdout.strip() else "")) if sha else "unknown"


def machine() -> str:
    import torch

    cpu = next((line.split(":", 1)[1].strip() for line in _cpuinfo() if line.startswith("model name")), platform.processor())
    gpu = f", GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ", no GPU"
    return f"{os.cpu_count()} CPU cores ({cpu or 'unknown CPU'}){gpu}, torch {torch.__version__}, {platform.system()} {platform.machine()}"


def _cpuinfo() -> list[str]:
    path = Path("/proc/cpuinfo")
    return path.read_text().splitlines() if path.exists() else []


def header(cfg: ResultsConfig, outputs: Outputs, commit: str) -> list[str]:
    metas = [o.meta for section in outputs.values() for o in section.values() if o.measured]
    commits = sorted({m.get("commit", "unknown") for m in metas})
    days = sorted(m["finished"][:10] for m in metas if m.get("finished"))
    when = f"measured {days[0]}" + (f" to {days[-1]}" if days[-1] != days[0] else "") if days else "nothing measured yet"
    return ["# Results", "", "<!-- Generated by `make results` (python -m d3d.evaluation.results); edits are overwritten. -->", "",
            f"Rendered {datetime.date.today().isoformat()} at commit {commit} ({when}"
            + (f", at commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}" if commits else "")
            + f") on {machine()}; each section was measured on the machine its row below names. "
            f"Target: SmolLM2-135M-Instruct (the embedded GGUF, dequantized) unless a command says otherwise; speed tables "
            f"in {cfg.dtype}, greedy. Every ratio is measured side by side in one run. Each section below gives the "
            "command that reproduces it; its raw output is under `" + cfg.runs_dir + "/`"
            + (f" (what the page is rendered from is kept in git under `{cfg.keep_dir}/`)" if cfg.keep_dir else "") + ".", ""]


def status_table(cfg: ResultsConfig, sections: list[Section], outputs: Outputs, errors: dict[str, str]) -> list[str]:
    rows = []
    for section in sections:
        outs = outputs.get(section.name, {})
        done, failed = sum(o.measured for o in outs.values()), sum(o.failure is not None for o in outs.values())
        wall = sum(o.meta.get("wall_s") or 0 for o in outs.values() if o.measured)
        state = "failed" if section.name in errors or failed else ("measured" if done == len(outs) else "not measured yet")
        commits = sorted({o.meta.get("commit", "unknown") for o in outs.values() if o.measured})
        machines = sorted({short_machine(o.meta) for o in outs.values() if o.measured})
        rows.append([f"[{section.name}](#{anchor(section.title)})", f"{done}/{len(outs)}", state,
                     fmt(wall / 60, ".0f", " min") if done else "-", ", ".join(commits) or "-", "; ".join(machines) or "-"])
    return md_table(["section", "commands measured", "state", "wall time", "measured at commit", "measured on"], rows) + [""]


def short_machine(meta: dict) -> str:
    """The CPU and GPU part of a step's recorded machine ("not recorded" for steps measured before it was)."""
    return meta.get("machine", "not recorded").split(", torch ")[0]


def anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, spaces to hyphens, punctuation dropped."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def failure_lines(section: Section, outputs: dict[str, StepOutput], error: str | None) -> list[str]:
    lines = [f"**This section failed**: {error}", ""] if error else []
    for name, o in outputs.items():
        if o.failure is not None:
            lines += [f"**`{name}` failed** ({o.failure['error']}): `{o.command}`. The end of its log:", "", "```",
                      *o.failure.get("log_tail", []), "```", ""]
        elif not o.measured:
            lines += [f"`{name}` is not measured yet: `python -m d3d.evaluation.results --only {section.name}`.", ""]
    return lines


def render_section(cfg: ResultsConfig, section: Section, outputs: dict[str, StepOutput], error: str | None) -> list[str]:
    lines = [f"## {section.title}", ""] + failure_lines(section, outputs, error)
    try:
        return lines + section.render(cfg, outputs)
    except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError) as exc:  # an output of another format
        return lines + [f"**Its output could not be read**: {type(exc).__name__}: {exc}.", ""]


def render_page(cfg: ResultsConfig, sections: list[Section], outputs: Outputs, errors: dict[str, str], commit: str) -> str:
    lines = header(cfg, outputs, commit) + status_table(cfg, sections, outputs, errors) + goal_tables(outputs, cfg)
    for section in sections:
        lines += render_section(cfg, section, outputs.get(section.name, {}), errors.get(section.name))
    return "\n".join(lines).rstrip() + "\n"


# ---------------------------------------------------------------------------------------------
# Command line


def list_sections(cfg: ResultsConfig, out=None) -> None:
    """Every section, whether it runs by default, and each command with its state (to `out`, stdout)."""
    out = out or sys.stdout
    for section in ALL_SECTIONS:
        print(f"{section.name}{'' if section.default else ' (optional)'}: {section.title}", file=out)
        try:
            steps = section_steps(cfg, section)
        except D3DError as error:
            print(f"  cannot list its commands: {error}", file=out)
            continue
        for step in steps:
            o = read_step(step, folder_of(cfg, section))
            state = "measured" if o.measured else ("failed" if o.failure else "pending")
            print(f"  [{state}] {step.shown()}", file=out)


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, ResultsConfig]:
    d = ResultsConfig()
    p = argparse.ArgumentParser(prog="python -m d3d.evaluation.results", description=__doc__.splitlines()[0])
    p.add_argument("--only", default=None, metavar="SECTION[,...]", help="run these sections only (see --list)")
    p.add_argument("--list", action="store_true", help="list the sections and their commands, then stop")
    p.add_argument("--optional", action="store_true", help="also run the optional sections (async, sweep, pruning)")
    p.add_argument("--render-only", action="store_true", help="run nothing; write the page from the outputs there are")
    p.add_argument("--runs-dir", default=d.runs_dir, help="where the sections' outputs are written")
    p.add_argument("--keep-dir", default=None,
                   help=f"where the measurements are kept in git and restored from (default: {KEEP_DIR} with the default "
                        "--runs-dir, else nowhere; '': nowhere)")
    p.add_argument("--fresh", default=None, metavar="SECTION[,...]",
                   help="measure these sections again: remove their earlier outputs first (here and in --keep-dir)")
    p.add_argument("--page", default=d.page, help="the markdown page to write")
    p.add_argument("--drafter", default=None, help="D3D drafter (default: the shipped one)")
    p.add_argument("--prefill-limit", type=int, default=d.prefill_limit, help="longctx2 prompts of the prefill section")
    p.add_argument("--prefill-layers", default=d.prefill_layers, help="the target-layers selectors' layers")
    p.add_argument("--ar-drafter", default=d.ar_drafter, help="AR-drafter baseline of the optional async section")
    p.add_argument("--prune-log", default=d.prune_log, help="d3d prune log of the optional pruning section")
    args = p.parse_args(argv)
    if args.keep_dir is None:  # another --runs-dir is an experiment: it neither reads nor overwrites the page's
        args.keep_dir = KEEP_DIR if args.runs_dir == d.runs_dir else ""
    cfg = ResultsConfig(runs_dir=args.runs_dir, keep_dir=args.keep_dir or None, page=args.page, drafter=args.drafter,
                        prefill_limit=args.prefill_limit,
                        prefill_layers=args.prefill_layers, ar_drafter=args.ar_drafter, prune_log=args.prune_log)
    return args, cfg


def main(argv: list[str] | None = None) -> int:
    args, cfg = parse_args(argv)
    try:
        if args.prefill_limit < 1:
            raise D3DError(f"--prefill-limit must be at least 1, got {args.prefill_limit}")
        if args.list:
            select_sections(args.only, args.optional)  # a bad name is an error here too
            if args.keep_dir:
                restore(cfg.runs_dir, args.keep_dir)
            list_sections(cfg)
            return 0
        if args.fresh:
            select_sections(args.fresh)  # a bad name is an error before anything is removed
        print(f"wrote {make_results(cfg, args.only, args.optional, render_only=args.render_only, fresh=args.fresh)}")
    except D3DError as error:
        print(f"d3d results: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nd3d results: interrupted; rerun to resume", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
