#!/usr/bin/env bash
# The issue-16 training data in runs/data/, rebuilt from the committed archives where missing
# (docs/training.md "Data at scale"): the mix's shards unpacked, and the older code rows given the
# target's top-8 by one teacher-forced pass. Used by scripts/train_mix.sh and scripts/prune_mix.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
. scripts/shard_lib.sh
for archive in data/smollm2/*.npz.xz; do  # every committed shard (its later parts, *.partN.npz.xz, unpack with it), unpacked where missing
  shard=$(basename "$archive" .npz.xz)
  case "$shard" in *.part*) continue ;; esac
  [ -f "runs/data/$shard.jsonl" ] || unpack_shard "$shard" "runs/data/$shard.jsonl"
done
# fixed slices of the growing task shards, each committed part unpacked alone as its own file so that a
# run's recipe stays reproducible as the shard grows: part k of tasks7_bf16 / tasks8_bf16 (the first
# archive being part 1) is tasks7<letter k>_bf16 / tasks8<letter k>_bf16, e.g. tasks8c_bf16 the eighth
# shard's third part (recipes/smollm2-d3d-mix23.yaml's new rows), tasks8f_bf16 its sixth, tasks9a_bf16
# the ninth file's first, tasks10a_bf16 to tasks10f_bf16 the tenth's six parts (it is fully answered),
# tasks11a_bf16 to tasks11d_bf16 the eleventh's four parts (the fourth answers its last prompts), tasks12a_bf16 to
# tasks12d_bf16 the twelfth's four (the ninth families; the fourth answers its last prompts), tasks13a_bf16 to
# tasks13d_bf16 on the thirteenth's (the tenth families)
letters=(a b c d e f g h i j k l m n o p q r s t u v w x y z)
for shard in tasks7_bf16 tasks8_bf16 tasks9_bf16 tasks10_bf16 tasks11_bf16 tasks12_bf16 tasks13_bf16; do
  mapfile -t parts < <(ls data/smollm2/"$shard".npz.xz data/smollm2/"$shard".part*.npz.xz 2>/dev/null | sort -V)
  for i in "${!parts[@]}"; do
    name="${shard%_bf16}${letters[$i]}_bf16"
    if [ ! -f "runs/data/$name.jsonl" ]; then
      $PY -m d3d.training.data_archive unpack "${parts[$i]}" "runs/data/$name.jsonl"
      cp "data/smollm2/$shard.meta.json" "runs/data/$name.meta.json"  # the whole shard's
    fi
  done
done
for f in train train2; do  # the older code rows with the target's top-8 (one teacher-forced pass, d3d data --rescore)
  $PY -m d3d.cli data --rescore "data/smollm2/$f.jsonl" --out "runs/data/${f}_top8.jsonl" --top-k-logits 8 \
    --batch-size 16 --dtype float32 | tail -1
done
