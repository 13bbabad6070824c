#!/usr/bin/env bash
# The shipped drafter's full recipe on a 2-core CPU (docs/training.md "Recipe: this machine").
# Every step resumes when rerun; the data files it starts from are committed in data/smollm2/.
set -euo pipefail
cd "$(dirname "$0")/.."
D3D=.venv/bin/d3d
export OMP_NUM_THREADS=1   # the two trainings share the machine, one core each

# 1. Data (committed; shown for completeness; rerunning resumes and finds them complete)
#    train.jsonl : d3d data --prompts data/code_prompts.jsonl --self-instruct 200 (session 1)
#    train2.jsonl: the stub/variant prompts not answered yet, plus 150 more self-instruct turns
$D3D data --out data/smollm2/train2.jsonl --prompts data/code_prompts_v2_rest.jsonl --self-instruct 150 \
    --greedy --max-new-tokens 160 --batch-size 16 --seed 1 \
    --exclude data/smollm2/dev.jsonl --exclude data/smollm2/dev2.jsonl

# 2. The D3D drafter and the AR-drafter baseline, side by side (one thread each)
$D3D train --config recipes/smollm2-d3d.yaml > runs/train_d3d.log 2>&1 &
$D3D train --config recipes/smollm2-ar.yaml > runs/train_ar.log 2>&1 &
wait

# 3. Pruning 4 -> 3 -> 2 layers with distillation; the fastest stage is kept, stored in bfloat16
unset OMP_NUM_THREADS
$D3D prune --drafter runs/smollm2-d3d/drafter --output-dir runs/smollm2-prune \
    --layer-dev data/smollm2/dev.jsonl --select-dev data/smollm2/dev2.jsonl \
    --min-layers 2 --recovery-steps 50 --save-dtype bfloat16

# 4. Ship it with an 8192-token drafting vocabulary (docs/runtime.md), then regenerate docs/results.md
$D3D draft-vocab --drafter runs/smollm2-prune/drafter --data data/smollm2/train.jsonl data/smollm2/train2.jsonl \
    --size 8192 --out d3d/drafters/smollm2-135m-instruct
make results
