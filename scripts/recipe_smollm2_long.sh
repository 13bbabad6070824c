#!/usr/bin/env bash
# The next-token drafter for the embedded SmolLM2 target (docs/training.md "The long run").
# Every step resumes when rerun. STEP selects the drafter snapshot that is pruned and shipped.
set -euo pipefail
cd "$(dirname "$0")/.."
D3D=.venv/bin/d3d
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
STEP=${STEP:?set STEP to the long run checkpoint step to prune, e.g. STEP=300}

# 1. The long run: 8 of the target's layers (0-1, 24-29), next-token labels, 8192-token drafting
#    vocabulary in the loss, bf16 autocast; offline tau on 8 dev rows every 50 steps. Rerun to resume;
#    it keeps the last two checkpoints, so snapshot the drafter you want to keep.
[ -d "runs/smollm2-long/snapshots/step-$STEP" ] || {
  echo "snapshot runs/smollm2-long/snapshots/step-$STEP missing: copy runs/smollm2-long/drafter there at step $STEP" >&2
  exit 2
}

# 2. Acceptance-guided pruning 8 -> 5 layers (bf16 5 layers fit the 40 MB budget), layers chosen by
#    offline tau on dev.jsonl, recovery with distillation from the 8-layer drafter, the last stage kept.
$D3D prune --drafter "runs/smollm2-long/snapshots/step-$STEP" --output-dir "runs/smollm2-long-prune-$STEP" \
    --layer-dev data/smollm2/dev.jsonl --select-dev data/smollm2/dev2.jsonl --min-layers 5 \
    --recovery-steps 25 --eval-prompts 6 --measure offline --select shallowest --save-dtype bfloat16

# 3. Offline acceptance of the result on all 23 dev rows, against the shipped drafter's (1.201)
$D3D eval-drafter --drafter "runs/smollm2-long-prune-$STEP/drafter" --data data/smollm2/dev.jsonl | tail -1
