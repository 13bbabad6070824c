#!/usr/bin/env bash
# One continued run end to end (docs/training.md "Continued training on the mix"): train recipe N from
# a fixed copy of the shipped drafter, export it int8 at run block 8, measure its acceptance table on
# the eight gate sets (the gate's --save-table), apply the ship rule's offline conditions (python -m
# d3d.evaluation.ship_gate), and only where they hold run the two interleaved benches and apply the
# whole rule. The verdict lands in runs/gate/verdict_eN.txt; shipping (copying the drafter into
# d3d/drafters/) stays a separate, deliberate step.
#   N=41 scripts/continued_run.sh      # rerun to resume: every finished step is skipped, a bench never reruns
# AVERAGE_WITH=40 (only where the recipe's rule allows it): when N fails an offline condition, the equal average of
# runs N and AVERAGE_WITH (d3d average) is exported and judged the same way (its verdict in
# runs/gate/verdict_eN_avgM.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
N=${N:?set N, the recipe number (recipes/smollm2-d3d-mixN.yaml)}
RECIPE=recipes/smollm2-d3d-mix$N.yaml
[ -f "$RECIPE" ] || { echo "continued_run: no $RECIPE" >&2; exit 2; }
D=runs/smollm2-mix$N
G=runs/gate
mkdir -p $G runs/bench
log() { echo "[continued_run $N] $* $(date -u +%T)"; }

INIT=$($PY -c "import yaml,sys; print(yaml.safe_load(open('$RECIPE'))['init'])")
[ -d "$INIT" ] || { log "copying the shipped drafter to $INIT"; mkdir -p "$(dirname "$INIT")"; cp -r d3d/drafters/smollm2-135m-instruct "$INIT"; }
[ -f $D/drafter/model.safetensors ] || { log training; RECIPE=$RECIPE scripts/train_mix.sh; }

judge() {  # judge DRAFTER_DIR VARIANT: offline conditions, then (where they hold) the benches and the whole rule
  local dir=$1 variant=$2 out=$G/verdict_e$N${3:-}.txt
  $PY -m d3d.evaluation.ship_gate --candidate "$dir" --work $G --save-table > "$out" || exit 2  # errexit is off inside `judge ... || rc=$?`
  grep -q "VERDICT: offline passes" "$out" || { log "$(grep VERDICT "$out")"; return 1; }
  local B="--modes ar,pld,sync,sync@$variant --drafter-variant $variant=$dir --max-new-tokens 128 --dtype bfloat16 --fresh"
  for suite in humaneval mixed; do
    local f=runs/bench/ship${N}${3:-}_$suite.txt limit=40
    [ $suite = mixed ] && limit=20
    grep -q '^{' "$f" 2>/dev/null || $PY -m d3d.cli bench --suite $suite --limit $limit $B > "$f" 2> "${f%.txt}.err" || exit 2
  done
  $PY -m d3d.evaluation.ship_gate --candidate "$dir" --work $G --variant $variant \
    --bench humaneval=runs/bench/ship${N}${3:-}_humaneval.txt --bench mixed=runs/bench/ship${N}${3:-}_mixed.txt > "$out" || exit 2
  log "$(grep VERDICT "$out")"
  grep -q "VERDICT: ships" "$out" || return 3  # 3: the benches failed (1: the offline conditions)
}

[ -f $D/drafter-int8/model.safetensors ] || $PY -m d3d.cli export --format d3d --storage int8 --drafter $D/drafter \
  --out $D/drafter-int8 --run-block-size 8
rc=0; judge $D/drafter-int8 e$N || rc=$?
[ $rc -eq 1 ] && [ -n "${AVERAGE_WITH:-}" ] || exit 0  # the average only after an offline miss
A=runs/avg$AVERAGE_WITH-$N
[ -f $A/drafter/model.safetensors ] || $PY -m d3d.cli average --drafter runs/smollm2-mix$AVERAGE_WITH/drafter \
  --drafter $D/drafter --out $A/drafter
[ -f $A/drafter-int8/model.safetensors ] || $PY -m d3d.cli export --format d3d --storage int8 --drafter $A/drafter \
  --out $A/drafter-int8 --run-block-size 8
judge $A/drafter-int8 e$N _avg$AVERAGE_WITH || true  # named e$N in the benches, as the recipes' rules write it
