#!/usr/bin/env bash
# Starting points for the SmolLM2 drafter, each trained for the same CPU-time budget on the same data,
# compared by offline tau on the dev rows (docs/training.md "Choosing the starting point").
#   scripts/compare_starts.sh [variant ...]     (default: all; rerun to resume, finished variants are skipped)
# BUDGET_CPU_S (default 180) is the CPU time of the training steps per variant, so that the budget
# does not depend on what else runs on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
D3D=${D3D:-.venv/bin/d3d}
BUDGET=${BUDGET_CPU_S:-180}
OUT=${OUT:-runs/compare}
declare -A LAYERS=(
  [first4-next]="0,1,2,3" [first4-same]="0,1,2,3" [strided8-next]="0,4,8,12,16,20,24,29"
  [ends8-next]="0,1,24,25,26,27,28,29" [full30-next]="" [ends8-same]="0,1,24,25,26,27,28,29"
)
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(first4-next first4-same strided8-next ends8-next full30-next)
for name in "${variants[@]}"; do
  run="$OUT/$name"
  labels=next-token; [[ $name == *-same ]] && labels=same-position
  if [ -n "${LAYERS[$name]}" ]; then layers=(--layers "${LAYERS[$name]}"); else layers=(--num-layers 0); fi
  if [ ! -f "$run/offline.json" ]; then
    "$D3D" train --data data/smollm2/train.jsonl data/smollm2/train2.jsonl --dev-data data/smollm2/dev.jsonl \
      "${layers[@]}" --labels "$labels" --draft-vocab-size 8192 --num-anchors 32 --max-length 512 --lr 5e-4 \
      --warmup-steps 5 --max-steps 6000 --max-cpu-s "$BUDGET" --batch-size 1 --grad-accum 2 \
      --mixed-precision bf16 --eval-every 0 --save-every 10 --threads 1 --output-dir "$run"
    "$D3D" eval-drafter --drafter "$run/drafter" --data data/smollm2/dev.jsonl --limit 8 | tail -1 > "$run/offline.json"
  fi
  echo "$name $(python3 -c "import json,sys; r=json.load(open('$run/offline.json')); print(round(r['tau_sim'],3), round(r['mean_accepted'],3))")"
done
