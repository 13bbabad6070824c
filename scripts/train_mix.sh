#!/usr/bin/env bash
# Continued training of the shipped drafter on the issue-16 data (recipes/smollm2-d3d-mix.yaml,
# docs/training.md "Continued training on the mix"). The mix's rows come from the committed archive
# when runs/data/mix.jsonl is missing. Rerun the same command to resume; extra flags go to d3d train
# (e.g. --max-steps 6000 to extend, which changes the schedule: see docs/training.md).
# RECIPE=recipes/smollm2-d3d-mix2.yaml runs the second continued run (adds the bf16 shard);
# RECIPE=recipes/smollm2-d3d-mix4.yaml the fourth (adds the second prompt file's shard, mix2_bf16).
# RECIPE=recipes/smollm2-d3d-mix6.yaml the sixth (adds the HumanEval-shaped task answers, tasks_bf16);
# RECIPE=recipes/smollm2-d3d-mix7.yaml the seventh (all task answers, twice, with mix2_bf16).
# RECIPE=recipes/smollm2-d3d-mix9.yaml the ninth (adds the second task file's answers, tasks2_bf16, listed twice).
# RECIPE=recipes/smollm2-d3d-mix10.yaml the tenth (the ninth's drafter; the second task file fully answered).
# RECIPE=recipes/smollm2-d3d-mix11.yaml the eleventh (the third task file's first answers, tasks3_bf16, four times);
# RECIPE=recipes/smollm2-d3d-mix12.yaml the twelfth (the eleventh's drafter; the third task file fully answered).
# RECIPE=recipes/smollm2-d3d-mix13.yaml the thirteenth (the shipped twelfth's drafter; adds the fourth task file, tasks4_bf16, twice).
# RECIPE=recipes/smollm2-d3d-mix14.yaml the fourteenth (the shipped thirteenth's drafter; adds the fifth task file, tasks5_bf16, twice).
# RECIPE=recipes/smollm2-d3d-mix15.yaml the fifteenth (the fourteenth's drafter; the whole fifth task file, three times).
# RECIPE=recipes/smollm2-d3d-mix16.yaml the sixteenth (the shipped thirteenth's drafter; adds the sixth task file, tasks6_bf16, three times).
# RECIPE=recipes/smollm2-d3d-mix17.yaml the seventeenth (the shipped sixteenth's drafter; adds the seventh task file's first part, tasks7a_bf16, four times).
# RECIPE=recipes/smollm2-d3d-mix18.yaml the eighteenth (the shipped seventeenth's drafter; adds self-instruct chat answers, self_bf16, six times).
# RECIPE=recipes/smollm2-d3d-mix19.yaml the nineteenth (the shipped average of the 17th and 18th; self_bf16 three times, mix_bf16 and mix2_bf16 twice).
# RECIPE=recipes/smollm2-d3d-mix20.yaml the twentieth (the shipped nineteenth's drafter; adds the seventh task file's second part, tasks7b_bf16, three times).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
RECIPE=${RECIPE:-recipes/smollm2-d3d-mix.yaml}
scripts/mix_data.sh  # runs/data/ from the committed archives, where missing
exec $PY -m d3d.cli train --config "$RECIPE" "$@"
