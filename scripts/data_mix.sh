#!/usr/bin/env bash
# The large training set of issue 16: the offline prompt mix (math, code, chat, writing) answered
# greedily by the embedded target, with its top-8 log-probabilities per response position for
# distillation. Resumable: rerun the same command after an interruption. Held out: HumanEval (always),
# the dev sets and the bench's mixed suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
. scripts/shard_lib.sh
OUT=${OUT:-runs/data/mix.jsonl}
EXTRA=()  # SKIP_ANSWERED: other outputs of the same prompts (e.g. the float32 shard) not to answer again, space-separated
for f in ${SKIP_ANSWERED:-}; do EXTRA+=(--skip-answered "$f"); done
for f in ${EXCLUDE:-}; do EXTRA+=(--exclude "$f"); done  # EXCLUDE: more held-out files (e.g. data/smollm2/dev_mix.jsonl)
PROMPTS=${PROMPTS:-data/mix_prompts.jsonl}  # data/mix_prompts2.jsonl: the second file (seed 1, no text of the first)
[ -f data/mix_prompts.jsonl ] || $PY -m d3d.training.prompt_mix --out data/mix_prompts.jsonl --per-kind 3500 --seed 0
[ -f data/mix_prompts2.jsonl ] || $PY -m d3d.training.prompt_mix --out data/mix_prompts2.jsonl --per-kind 3500 --seed 1 \
  --id-prefix s1- --skip-texts data/mix_prompts.jsonl --skip-texts data/mix_dev_prompts.jsonl
# A shard whose first parts are committed (data/smollm2/NAME.npz.xz, NAME.part2.npz.xz, ...) but whose jsonl is not on
# this machine starts from those parts, so the run answers only the prompts after them instead of all of them again.
name=$(basename "$OUT" .jsonl)
if [ ! -f "$OUT" ] && [ -f "data/smollm2/$name.npz.xz" ]; then
  unpack_shard "$name" "$OUT" >&2
  echo "seeded $OUT with $(wc -l < "$OUT") committed rows" >&2
fi
exec $PY -m d3d.cli data --out "$OUT" --prompts "$PROMPTS" --greedy \
  --max-new-tokens "${MAX_NEW_TOKENS:-192}" --batch-size "${BATCH_SIZE:-32}" --dtype "${DTYPE:-float32}" \
  --top-k-logits 8 --seed 0 \
  --exclude data/smollm2/dev.jsonl --exclude data/smollm2/dev2.jsonl --exclude d3d/evaluation/mixed.jsonl "${EXTRA[@]}"
