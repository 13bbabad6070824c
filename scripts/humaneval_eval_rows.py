"""Eval-only rows: the target's greedy bf16 answers (128 new tokens) to the 164 HumanEval prompts in the bench's
wording, for `d3d eval-drafter --data runs/eval_humaneval164.jsonl` (HumanEval-shaped acceptance on all 164
prompts rather than the bench's 40; docs/training-runs.md, the thirty-fourth run). `d3d data` keeps HumanEval out
of every file it writes; this one-off lifts that exclusion for this file alone, which is HumanEval itself and so
never a training shard (it stays in runs/, git-ignored).

    .venv/bin/python scripts/humaneval_eval_rows.py
"""
import json
from pathlib import Path

import d3d.training.data as data
from d3d.evaluation.suites import humaneval_prompts

Path("runs").mkdir(exist_ok=True)
prompts = Path("runs/he164_prompts.jsonl")
prompts.write_text("".join(json.dumps({"id": p.id, "prompt": p.text}) + "\n" for p in humaneval_prompts()))
data.held_out_prompts = lambda exclude=(): []  # the held-out set is what is being answered here
data.check_decontaminated = lambda out, held: 0
cfg = data.DataConfig(out=Path("runs/eval_humaneval164.jsonl"), prompts=(prompts,), max_new_tokens=128, batch_size=32,
                      greedy=True, dtype="bfloat16", progress=False)
print(data.format_report(data.generate_dataset(cfg)))
