#!/usr/bin/env bash
# The depth comparison of issue 16 (docs/training.md "Depth, chosen by measured speed"): the shipped
# 5-layer drafter pruned to 4 and 3 layers by d3d prune (layers chosen by offline tau on dev.jsonl,
# recovery with distillation from the 5-layer drafter on the data it trained on), every stage kept,
# then every depth decoded side by side on HumanEval. Rerun the same command to resume.
set -euo pipefail
cd "$(dirname "$0")/.."
D3D=.venv/bin/d3d
OUT=${OUT:-runs/prune-mix4}
scripts/mix_data.sh  # the training data the recovery needs, from the committed archives where missing
$D3D prune --drafter d3d/drafters/smollm2-135m-instruct --output-dir "$OUT" \
    --layer-dev data/smollm2/dev.jsonl --select-dev data/smollm2/dev2.jsonl --min-layers 3 \
    --recovery-steps ${RECOVERY_STEPS:-150} --eval-prompts 12 --measure offline --select shallowest \
    --save-dtype bfloat16 --mixed-precision ${MIXED_PRECISION:-auto}  # auto: bf16 autocast only on a GPU
for k in 1 2; do  # offline acceptance of each stage on the three dev sets, as for the shipped drafter
  for set in dev dev2 dev_mix; do
    echo "stage $k $set: $($D3D eval-drafter --drafter "$OUT/stage-$k/run/drafter" --data data/smollm2/$set.jsonl | tail -1)"
  done
done
