#!/usr/bin/env bash
# Training ablations of issue 16 ("Training that spends the CPU well", docs/training.md "Training
# ablations"): every variant trains from the same start on the same data for the same CPU time of its
# training steps (--max-cpu-s), then `d3d eval-drafter` measures offline tau and alpha_1 on the dev
# rows. Each variant changes one thing against the reference (K = BASE_K anchors, hard labels, exp
# position weights, one thread):
#   k8 k16 k32        anchors per response (the one matching BASE_K is the reference)
#   kd                distillation from the stored top-k alone (--ce-weight 0 --kd-weight 1)
#   kd-ce             PARD-2's mix (--kd-weight 10 --ce-weight 1)
#   survival          prefix-survival position weights (--position-weighting survival)
#   threads2          one process on two threads, the same CPU time (so about half the wall time)
#   threads2-wall     two threads with twice the CPU time (about the reference's wall time)
# Prints one table, then one JSON line keyed by variant (offline tau, alpha_1, steps, rows/s and
# response tokens/s per wall second and per CPU second, from each run's training log).
#
#   scripts/ablate_training.sh [variant ...]   (default: all; rerun to resume, finished variants are skipped)
#
# Settings (environment): DATA (default runs/data/mix.jsonl, scripts/data_mix.sh's rows with their
# top-8), DEV (data/smollm2/dev.jsonl), BUDGET_CPU_S (1800), BASE_K (16), LAYERS (0,1,24,...,29: the
# long run's layout) or INIT (a saved drafter to continue, e.g. runs/smollm2-long/drafter; its layers
# and labels), EVAL_LIMIT (0 = every dev row), OUT (runs/ablate), TARGET (default: the embedded SmolLM2).
set -euo pipefail
cd "$(dirname "$0")/.."
D3D=${D3D:-.venv/bin/d3d}
PY=${PY:-.venv/bin/python}
DATA=${DATA:-runs/data/mix.jsonl}
DEV=${DEV:-data/smollm2/dev.jsonl}
BUDGET=${BUDGET_CPU_S:-1800}
BASE_K=${BASE_K:-16}
LAYERS=${LAYERS:-0,1,24,25,26,27,28,29}
INIT=${INIT:-}
EVAL_LIMIT=${EVAL_LIMIT:-0}
OUT=${OUT:-runs/ablate}
TARGET=${TARGET:-}
ALL=(k8 k16 k32 kd kd-ce survival threads2 threads2-wall)

variant_flags() {  # the flags that make variant $1 differ from the reference
  case $1 in
    k8|k16|k32) echo "--num-anchors ${1#k}" ;;
    kd) echo "--ce-weight 0 --kd-weight 1" ;;
    kd-ce) echo "--ce-weight 1 --kd-weight 10" ;;
    survival) echo "--position-weighting survival" ;;
    threads2) echo "--threads 2" ;;
    threads2-wall) echo "--threads 2 --max-cpu-s $((2 * BUDGET))" ;;
    *) echo "unknown variant: $1 (one of: ${ALL[*]})" >&2; return 2 ;;
  esac
}

[ -e "$DATA" ] || { echo "training data not found: $DATA (run scripts/data_mix.sh, or set DATA)" >&2; exit 2; }
if [ -n "$INIT" ]; then start=(--init "$INIT"); else start=(--layers "$LAYERS" --labels next-token); fi
target=(); [ -z "$TARGET" ] || target=(--target "$TARGET")
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=("${ALL[@]}")
for name in "${variants[@]}"; do
  flags=$(variant_flags "$name")
  run="$OUT/$name"
  if [ ! -f "$run/offline.json" ]; then
    # later flags win: the reference settings first, then the variant's own
    # shellcheck disable=SC2086
    "$D3D" train "${target[@]}" --data "$DATA" --dev-data "$DEV" "${start[@]}" --draft-vocab-size 8192 \
      --num-anchors "$BASE_K" --ce-weight 1 --kd-weight 0 --position-weighting exp --threads 1 \
      --max-length 512 --lr 5e-4 --warmup-steps 5 --max-steps 100000 --max-cpu-s "$BUDGET" \
      --batch-size 1 --grad-accum 2 --mixed-precision bf16 --eval-every 0 --save-every 25 \
      $flags --output-dir "$run"
    "$D3D" eval-drafter "${target[@]}" --drafter "$run/drafter" --data "$DEV" --limit "$EVAL_LIMIT" | tail -1 \
      > "$run/offline.json"
  fi
done

"$PY" - "$OUT" "${variants[@]}" <<'EOF'
import json
import sys
from pathlib import Path

out, names = Path(sys.argv[1]), sys.argv[2:]
results = {}
for name in names:
    offline = json.loads((out / name / "offline.json").read_text())
    log = [json.loads(line) for line in (out / name / "log.jsonl").read_text().splitlines() if line.strip()]
    last = [r for r in log if r["kind"] == "train"][-1]
    wall, cpu = max(last["elapsed_s"], 1e-9), max(last["cpu_s"], 1e-9)
    results[name] = {
        "tau": round(offline["tau_sim"], 3), "alpha_1": round(offline["alpha"][0], 3), "steps": last["step"],
        "rows_seen": last["rows_seen"], "tokens_seen": last["tokens_seen"], "train_s": round(wall, 1),
        "cpu_s": round(cpu, 1), "rows_per_s": round(last["rows_seen"] / wall, 1),
        "tokens_per_s": round(last["tokens_seen"] / wall, 2), "tokens_per_cpu_s": round(last["tokens_seen"] / cpu, 2),
    }
head = f"{'variant':<14}{'tau':>7}{'alpha_1':>9}{'steps':>7}{'tokens':>9}{'wall s':>8}{'cpu s':>8}{'rows/s':>9}{'tok/s':>8}{'tok/cpu-s':>11}"
print(head)
for name, r in results.items():
    print(f"{name:<14}{r['tau']:>7.3f}{r['alpha_1']:>9.3f}{r['steps']:>7}{r['tokens_seen']:>9}{r['train_s']:>8.0f}"
          f"{r['cpu_s']:>8.0f}{r['rows_per_s']:>9.1f}{r['tokens_per_s']:>8.2f}{r['tokens_per_cpu_s']:>11.2f}")
print(json.dumps(results))
EOF
