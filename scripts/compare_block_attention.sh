#!/usr/bin/env bash
# Causal against bidirectional block attention (issue 18): two drafters trained from the same start,
# on the same data, with the same settings and the same CPU-time budget, differing only in
# --block-attention, then measured by offline tau and alpha_1..3 on the dev rows
# (docs/training.md "Block attention: causal or bidirectional").
#   scripts/compare_block_attention.sh [bidirectional|causal ...]   (default: both; rerun to resume)
# BUDGET_CPU_S (default 600): CPU time of the training steps per variant, so that the budget does not
# depend on what else runs. LAYERS (default the shipped recipe's start, 0,1,24-29) and DEV_ROWS
# (default 23, every dev row) can be changed; OUT (default runs/block-attention) holds the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
D3D=${D3D:-.venv/bin/d3d}
BUDGET=${BUDGET_CPU_S:-600}
LAYERS=${LAYERS:-0,1,24,25,26,27,28,29}
DEV_ROWS=${DEV_ROWS:-23}
OUT=${OUT:-runs/block-attention}
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(bidirectional causal)
for name in "${variants[@]}"; do
  run="$OUT/$name"
  if [ ! -f "$run/offline.json" ]; then
    "$D3D" train --data data/smollm2/train.jsonl data/smollm2/train2.jsonl --dev-data data/smollm2/dev.jsonl \
      --layers "$LAYERS" --labels next-token --block-attention "$name" --draft-vocab-size 8192 --num-anchors 32 \
      --max-length 512 --lr 5e-4 --warmup-steps 5 --max-steps 100000 --max-cpu-s "$BUDGET" --batch-size 1 \
      --grad-accum 2 --mixed-precision bf16 --eval-every 0 --save-every 10 --threads 1 --seed 0 --output-dir "$run"
    "$D3D" eval-drafter --drafter "$run/drafter" --data data/smollm2/dev.jsonl --limit "$DEV_ROWS" \
      | tail -1 > "$run/offline.json"
  fi
done
echo "| block attention | steps in the budget | offline tau | mean accepted | alpha_1 | alpha_2 | alpha_3 |"
echo "|---|---|---|---|---|---|---|"
for name in "${variants[@]}"; do
  python3 - "$OUT/$name" "$name" <<'PY'
import json, sys
from pathlib import Path
run, name = Path(sys.argv[1]), sys.argv[2]
r = json.loads((run / "offline.json").read_text())
steps = max((json.loads(l).get("step", 0) for l in (run / "log.jsonl").read_text().splitlines()
             if json.loads(l).get("kind") == "train"), default=0)
a = (r["alpha"] + [0, 0, 0])[:3]
print(f"| {name} | {steps} | {r['tau_sim']:.3f} | {r['mean_accepted']:.3f} | {a[0]:.3f} | {a[1]:.3f} | {a[2]:.3f} |")
PY
done
