"""The `d3d prune` subcommand (pruning itself lives in `prune.py`).

    d3d prune --drafter runs/smollm2-4l/drafter --output-dir runs/prune-4l \
        --layer-dev data/smollm2/dev.jsonl --select-dev data/smollm2/dev2.jsonl --min-layers 2

Rerun the same command with the same --output-dir to resume.
"""

from __future__ import annotations

import argparse

PRUNE_DESCRIPTION = (
    "Acceptance-guided layer pruning: remove the layer whose removal costs least validation tau, "
    "recovery-train with distillation from the unpruned drafter, repeat; keep the fastest stage."
)


def add_prune_parser(sub) -> None:
    p = sub.add_parser("prune", help="prune a trained drafter layer by layer, keep the fastest stage",
                       description=PRUNE_DESCRIPTION)
    p.add_argument("--drafter", required=True, help="trained drafter directory (written by d3d train)")
    p.add_argument("--output-dir", default="runs/prune", help="stages, log and the chosen drafter")
    p.add_argument("--select-dev", nargs="+", required=True, metavar="PATH",
                   help="dev rows for choosing the final stage by measured speedup")
    p.add_argument("--layer-dev", nargs="+", default=[], metavar="PATH",
                   help="dev rows for choosing the layer to remove (default: the training run's dev data)")
    p.add_argument("--data", nargs="+", default=[], metavar="PATH",
                   help="recovery training rows (default: the training run's data)")
    p.add_argument("--target", default=None, help="target model (default: the training run's)")
    p.add_argument("--min-layers", type=int, default=1, help="smallest depth to reach")
    p.add_argument("--tau-floor", type=float, default=0.0, help="stop once tau after recovery falls below this")
    p.add_argument("--recovery-steps", type=int, default=100, help="recovery training steps per stage")
    p.add_argument("--lr", type=float, default=None, help="recovery learning rate (default: the training run's)")
    p.add_argument("--eval-prompts", type=int, default=8, help="dev prompts per tau measurement")
    p.add_argument("--max-new-tokens", type=int, default=64, help="tokens per dev prompt")
    p.add_argument("--speed-prompts", type=int, default=4, help="selection prompts timed for the speedup")
    p.add_argument("--save-dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                   help="dtype of the chosen drafter's stored weights (bfloat16 halves the file)")
    p.add_argument("--measure", default="offline", choices=["offline", "real"],
                   help="tau for the layer choice and the stages: offline (simulated on the greedy dev rows, no "
                        "target pass) or real (greedy decoding)")
    p.add_argument("--select", default="speedup", choices=["speedup", "shallowest"],
                   help="the stage kept: the fastest by measured speedup, or the shallowest reached (no timing)")
    p.add_argument("--mixed-precision", default=None, choices=["auto", "bf16", "fp16", "no"],
                   help="autocast of the recovery training (default: the drafter's training run's; bf16 is slow on a "
                        "CPU without native bf16)")
    p.set_defaults(func=cmd_prune)


def cmd_prune(args: argparse.Namespace) -> int:
    from d3d.training.prune import PruneConfig, prune

    cfg = PruneConfig(
        drafter=args.drafter, output_dir=args.output_dir, select_dev=args.select_dev, layer_dev=args.layer_dev,
        data=args.data, target=args.target, min_layers=args.min_layers, tau_floor=args.tau_floor,
        recovery_steps=args.recovery_steps, lr=args.lr, eval_prompts=args.eval_prompts,
        max_new_tokens=args.max_new_tokens, speed_prompts=args.speed_prompts, save_dtype=args.save_dtype,
        measure=args.measure, select=args.select, mixed_precision=args.mixed_precision,
    )
    print(f"drafter: {prune(cfg)}")
    return 0
