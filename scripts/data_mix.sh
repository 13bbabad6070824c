#!/usr/bin/env bash
# The large training set of issue 16: the offline prompt mix (math, code, chat, writing) answered
# greedily by the embedded target, with its top-8 log-probabilities per response position for
# distillation. Resumable: rerun the same command after an interruption. Held out: HumanEval (always),
# the dev sets and the bench's mixed suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=${OUT:-runs/data/mix.jsonl}
SKIP=()  # SKIP_ANSWERED: another output of the same prompts (e.g. the float32 shard) not to answer again
[ -n "${SKIP_ANSWERED:-}" ] && SKIP=(--skip-answered "$SKIP_ANSWERED")
[ -f data/mix_prompts.jsonl ] || $PY -m d3d.training.prompt_mix --out data/mix_prompts.jsonl --per-kind 3500 --seed 0
exec $PY -m d3d.cli data --out "$OUT" --prompts data/mix_prompts.jsonl --greedy \
  --max-new-tokens "${MAX_NEW_TOKENS:-192}" --batch-size "${BATCH_SIZE:-32}" --dtype "${DTYPE:-float32}" \
  --top-k-logits 8 --seed 0 \
  --exclude data/smollm2/dev.jsonl --exclude data/smollm2/dev2.jsonl --exclude d3d/evaluation/mixed.jsonl "${SKIP[@]}"
