#!/usr/bin/env bash
# Continued training of the shipped drafter on the issue-16 data (recipes/smollm2-d3d-mix.yaml,
# docs/training.md "Continued training on the mix"). The mix's rows come from the committed archive
# when runs/data/mix.jsonl is missing. Rerun the same command to resume; extra flags go to d3d train
# (e.g. --max-steps 6000 to extend, which changes the schedule: see docs/training.md).
# RECIPE=recipes/smollm2-d3d-mix2.yaml runs the second continued run (adds the bf16 shard);
# RECIPE=recipes/smollm2-d3d-mix4.yaml the fourth (adds the second prompt file's shard, mix2_bf16).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
RECIPE=${RECIPE:-recipes/smollm2-d3d-mix.yaml}
for shard in mix mix_bf16 mix2_bf16; do  # the committed shards of the mix (and their later parts), unpacked where missing
  if [ ! -f "runs/data/$shard.jsonl" ] && [ -f "data/smollm2/$shard.npz.xz" ]; then
    mkdir -p runs/data
    mapfile -t parts < <(ls data/smollm2/"$shard".part*.npz.xz 2>/dev/null | sort -V)
    $PY -m d3d.training.data_archive unpack "data/smollm2/$shard.npz.xz" "${parts[@]}" "runs/data/$shard.jsonl"
    cp "data/smollm2/$shard.meta.json" "runs/data/$shard.meta.json"
  fi
done
for f in train train2; do  # the older code rows with the target's top-8 (one teacher-forced pass, d3d data --rescore)
  $PY -m d3d.cli data --rescore "data/smollm2/$f.jsonl" --out "runs/data/${f}_top8.jsonl" --top-k-logits 8 \
    --batch-size 16 --dtype float32 | tail -1
done
exec $PY -m d3d.cli train --config "$RECIPE" "$@"
