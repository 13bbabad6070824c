"""The ship rule of a continued run: does a candidate drafter replace the shipped one?

Every continued run since the thirty-eighth (`recipes/smollm2-d3d-mix38.yaml` onward) writes this
rule in its recipe before its data exists, as offsets from the numbers S of the drafter it starts
from, all offline tau (`d3d eval-drafter`, float32, the drafter's own runtime weights):

1. dev+dev2 pooled >= S - 0.01;
2. their chat half (rows whose `source` is self-instruct) >= S - 0.02;
3. dev_mix >= S - 0.01;
4. dev_tasks4..8 each >= S - 0.01;
5. the mean of those five >= S's mean + 0.01;
6. one interleaved bench per suite (`d3d bench --modes ar,pld,sync,sync@V --drafter-variant V=CANDIDATE`,
   bf16, 128 new tokens): HumanEval-40 tau >= the shipped drafter's and tokens/s per token >= its - 0.02x;
   mixed-20 tau >= its - 0.08 and per token >= its - 0.05x; no divergence in any mode.

Values and bars are compared at four decimals, as the docs print them. Conditions 1-5 need two
offline measurements per drafter: the eight sets pooled with one result per file (the drafter's
`acceptance.json` when it holds exactly that, else measured, and with `--save-table` written as the
candidate's table) and dev+dev2 grouped by source. They are
cached under `--work` by the sha256 of the weights, the data and the target, so a rerun measures nothing twice. Condition 6 reads the
last JSON line of each bench's output; without `--bench` the verdict stops after 1-5.

    python -m d3d.evaluation.ship_gate --candidate runs/smollm2-mix40/drafter-int8
    python -m d3d.evaluation.ship_gate --candidate runs/smollm2-mix40/drafter-int8 --variant e40 \\
        --bench humaneval=runs/bench/ship40_humaneval.txt --bench mixed=runs/bench/ship40_mixed.txt

It prints the checks as a table, then one JSON line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from d3d.errors import D3DError

TASK_SETS = tuple(f"dev_tasks{k}" for k in range(4, 9))
SETS = ("dev", "dev2", "dev_mix", *TASK_SETS)  # the eight files of the pooled acceptance table
CHAT_SOURCE = "self-instruct"  # the `source` of dev+dev2's chat rows
OFFLINE_OFFSETS = {"pool": -0.01, "chat": -0.02, "dev_mix": -0.01, "task": -0.01, "task_mean": 0.01}
BENCH_OFFSETS = {"humaneval": (0.0, 0.02), "mixed": (0.08, 0.05)}  # suite -> (tau, speedup per token) allowed drop


@dataclass(frozen=True)
class Check:
    """One condition: its name, the candidate's value and the bar it must reach."""

    name: str
    value: float
    bar: float

    @property
    def ok(self) -> bool:
        return round(self.value, 4) >= round(self.bar, 4)


def gate_numbers(sets_record: dict, halves_record: dict) -> dict[str, float]:
    """The numbers the offline conditions read, from the two eval-drafter records of one drafter."""
    by_name = {Path(path).stem: own for path, own in sets_record.get("by_data", {}).items()}
    missing = [s for s in SETS if s not in by_name]
    chat = halves_record.get("by_source", {}).get(CHAT_SOURCE)
    if missing or chat is None:
        raise D3DError(f"the acceptance records lack {', '.join(missing) or CHAT_SOURCE + ' rows'}")
    numbers = {"pool": halves_record["tau_sim"], "chat": chat["tau_sim"], "dev_mix": by_name["dev_mix"]["tau_sim"]}
    numbers |= {name: by_name[name]["tau_sim"] for name in TASK_SETS}
    numbers["task_mean"] = sum(numbers[name] for name in TASK_SETS) / len(TASK_SETS)
    return numbers


def offline_checks(candidate: dict[str, float], base: dict[str, float]) -> list[Check]:
    """Conditions 1-5: each candidate number against the base's plus its offset."""
    checks = [Check(k, candidate[k], base[k] + OFFLINE_OFFSETS[k]) for k in ("pool", "chat", "dev_mix")]
    checks += [Check(k, candidate[k], base[k] + OFFLINE_OFFSETS["task"]) for k in TASK_SETS]
    return checks + [Check("task_mean", candidate["task_mean"], base["task_mean"] + OFFLINE_OFFSETS["task_mean"])]


def bench_checks(suite: str, summary: dict, variant: str) -> list[Check]:
    """Condition 6 for one suite's bench summary: the candidate `sync@variant` against `sync`."""
    mode = f"sync@{variant}"
    if "sync" not in summary or mode not in summary:
        raise D3DError(f"the {suite} bench has no 'sync' and '{mode}' modes (run it with --modes ar,pld,sync,{mode})")
    tau_drop, speed_drop = BENCH_OFFSETS[suite]
    base, cand = summary["sync"], summary[mode]
    divergences = sum(summary[m].get("divergences", 0) for m in ("pld", "sync", mode) if m in summary)
    return [Check(f"{suite} tau", cand["tau"], base["tau"] - tau_drop),
            Check(f"{suite} speedup per token", cand["speedup_per_token"], base["speedup_per_token"] - speed_drop),
            Check(f"{suite} divergences (negated)", -divergences, 0)]


def last_json_line(path: Path) -> dict:
    lines = [line for line in Path(path).read_text().splitlines() if line.startswith("{")]
    if not lines:
        raise D3DError(f"{path} has no JSON line (a finished bench or eval-drafter output ends with one)")
    return json.loads(lines[-1])


def measurement_key(drafter_dir: Path, files: list[str], target: str | None) -> str:
    """sha256 of the drafter's weights, the data files and the target: the cache key of its measurements."""
    from d3d.models.drafter import WEIGHTS_NAME

    weights = drafter_dir / WEIGHTS_NAME
    if not weights.is_file():
        raise D3DError(f"{drafter_dir} holds no {WEIGHTS_NAME}")
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        raise D3DError(f"missing data file(s): {', '.join(missing)}")
    digest = hashlib.sha256(str(target).encode())
    for path in (weights, *files):
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def measured(drafter_dir: Path, data_dir: Path, work: Path, target: str | None = None,
             save_table: bool = False) -> dict[str, float]:
    """A drafter's gate numbers: its saved table and cached measurements where they fit, else measured now.

    `save_table` writes a sets measurement made here as the drafter's `acceptance.json` (what `d3d
    eval-drafter --save` on the eight sets writes), so a candidate gets its shipped table on the way.
    """
    from d3d.evaluation.eval_drafter import ACCEPTANCE_FILE, measure_acceptance, save_acceptance

    files = [str(data_dir / f"{name}.jsonl") for name in SETS]
    key = measurement_key(drafter_dir, files, target)
    table = drafter_dir / ACCEPTANCE_FILE
    saved = json.loads(table.read_text()) if table.is_file() else {}
    records = {"sets": saved} if _is_sets_table(saved, files) else {}
    for part, data, group_by in (("sets", files, "file"), ("halves", files[:2], "source")):
        if part in records:
            continue
        cache, saving = work / f"{key}-{part}.json", save_table and part == "sets"
        if cache.is_file() and not saving:
            records[part] = json.loads(cache.read_text())
            continue
        print(f"[gate] measuring {drafter_dir} on {part} ({len(data)} files)", file=sys.stderr, flush=True)
        records[part] = measure_acceptance(str(drafter_dir), data, target=target, group_by=group_by,
                                           eval_only_ok=not saving).record
        work.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(records[part]) + "\n")
        if saving:
            save_acceptance(drafter_dir, records[part])
    return gate_numbers(records["sets"], records["halves"])


def _is_sets_table(record: dict, files: list[str]) -> bool:
    """Whether a saved acceptance table is the sets measurement: these files, float32, one result per file."""
    return record.get("data") == ",".join(files) and record.get("dtype") == "float32" and "by_data" in record


def verdict(offline: list[Check], bench: list[Check] | None) -> str:
    if not all(c.ok for c in offline):
        return "does not ship (offline)"
    if bench is None:
        return "offline passes; the benches decide (pass --bench)"
    return "ships" if all(c.ok for c in bench) else "does not ship (bench)"


def format_table(checks: list[Check]) -> str:
    rows = [f"{'condition':32s} {'value':>9s} {'bar':>9s}"]
    rows += [f"{c.name:32s} {c.value:9.4f} {c.bar:9.4f} {'OK' if c.ok else 'FAIL'}" for c in checks]
    return "\n".join(rows)


def parse_bench(values: list[str]) -> dict[str, Path]:
    benches = {}
    for value in values:
        suite, _, path = value.partition("=")
        if suite not in BENCH_OFFSETS or not path:
            raise D3DError(f"--bench takes SUITE=FILE with SUITE one of {', '.join(BENCH_OFFSETS)}, got {value!r}")
        benches[suite] = Path(path)
    if benches and set(benches) != set(BENCH_OFFSETS):
        raise D3DError(f"--bench needs both suites ({', '.join(BENCH_OFFSETS)}), got {', '.join(benches)}")
    return benches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m d3d.evaluation.ship_gate", description=__doc__.splitlines()[0])
    parser.add_argument("--candidate", required=True, type=Path, help="the candidate drafter directory")
    parser.add_argument("--base", type=Path, default=None, help="the drafter it must beat (default: the shipped one)")
    parser.add_argument("--data-dir", type=Path, default=Path("data/smollm2"), help=f"where {', '.join(SETS)} live")
    parser.add_argument("--target", default=None, help="target model (default: the embedded SmolLM2-135M-Instruct)")
    parser.add_argument("--work", type=Path, default=Path("runs/gate"), help="cache of the measurements")
    parser.add_argument("--bench", action="append", default=[], metavar="SUITE=FILE",
                        help="a finished bench's output, for humaneval and for mixed")
    parser.add_argument("--save-table", action="store_true",
                        help="write the candidate's eight-set measurement as its acceptance.json where none fits")
    parser.add_argument("--variant", default=None, help="the candidate's --drafter-variant name in the benches")
    args = parser.parse_args(argv)
    try:
        benches = parse_bench(args.bench)
        if benches and not args.variant:
            raise D3DError("--bench needs --variant (the name the benches gave the candidate)")
        base_dir = args.base or _shipped_dir()
        base = measured(base_dir, args.data_dir, args.work, args.target)
        cand = measured(args.candidate, args.data_dir, args.work, args.target, save_table=args.save_table)
        offline = offline_checks(cand, base)
        bench = [c for suite, path in benches.items() for c in bench_checks(suite, last_json_line(path), args.variant)]
    except D3DError as err:
        print(f"ship_gate: error: {err}", file=sys.stderr)
        return 2
    checks = offline + (bench or [])
    print(format_table(checks))
    result = verdict(offline, bench or None)
    print(f"VERDICT: {result}")
    print(json.dumps({"candidate": str(args.candidate), "base": str(base_dir), "verdict": result,
                      "base_numbers": {k: round(v, 4) for k, v in base.items()},
                      "checks": [asdict(c) | {"ok": c.ok} for c in checks]}))
    return 0


def _shipped_dir() -> Path:
    """The drafter shipped for the embedded default target."""
    from d3d.inference.pipeline import SHIPPED_DRAFTERS_DIR
    from d3d.models.hub import DEFAULT_TARGET

    return SHIPPED_DRAFTERS_DIR / DEFAULT_TARGET


if __name__ == "__main__":
    sys.exit(main())
