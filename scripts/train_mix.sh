#!/usr/bin/env bash
# Continued training of the shipped drafter on the issue-16 data (recipes/smollm2-d3d-mix.yaml,
# docs/training.md "Continued training on the mix"). The mix's rows come from the committed archive
# when runs/data/mix.jsonl is missing. Rerun the same command to resume; extra flags go to d3d train
# (e.g. --max-steps 6000 to extend, which changes the schedule: see docs/training.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
if [ ! -f runs/data/mix.jsonl ]; then
  mkdir -p runs/data
  $PY -m d3d.training.data_archive unpack data/smollm2/mix.npz.xz runs/data/mix.jsonl
  cp data/smollm2/mix.meta.json runs/data/mix.meta.json
fi
for f in train train2; do  # the older code rows with the target's top-8 (one teacher-forced pass, d3d data --rescore)
  $PY -m d3d.cli data --rescore "data/smollm2/$f.jsonl" --out "runs/data/${f}_top8.jsonl" --top-k-logits 8 \
    --batch-size 16 --dtype float32 | tail -1
done
exec $PY -m d3d.cli train --config recipes/smollm2-d3d-mix.yaml "$@"
