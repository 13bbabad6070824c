"""The `d3d train` and `d3d plot` subcommands.

    d3d train --config recipe.yaml --max-steps 200      # flags override the file
    d3d train --data data/train.jsonl --num-layers 4 --num-anchors 16 --lr 3e-4
    d3d plot runs/drafter/log.jsonl --out curve.png

`d3d train` has one flag per `TrainConfig` field (kebab-case; help = the field's comment; list
fields take comma-separated values, booleans have a --no- form). Its flags are built when the
command runs, not when `d3d` starts: they come from `TrainConfig`, whose module imports torch and
accelerate, and `d3d --help` should stay instant. A config file is a JSON or YAML mapping of field
names; values from flags replace the file's, and everything is parsed by `TrainConfig.from_dict`.

This module parses and dispatches; training lives in `train.py`, drawing in `plot.py`.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from pathlib import Path

from d3d.errors import D3DError

TRAIN_DESCRIPTION = (
    "Train a D3D drafter on target-generated data: packed multi-anchor blocks, position-weighted "
    "diffusion loss plus AR loss. Runs as one process or under `accelerate launch`; rerun the same "
    "command with the same --output-dir to resume."
)


def add_train_parser(sub) -> None:
    """Register `d3d train`; its flags are parsed by `cmd_train` (see the module docstring)."""
    p = sub.add_parser("train", help="train a drafter (d3d train --help lists every setting)",
                       description=TRAIN_DESCRIPTION, add_help=False, prefix_chars="\0")
    p.add_argument("train_args", nargs=argparse.REMAINDER, help="--config FILE and setting flags")
    p.set_defaults(func=cmd_train)


def add_plot_parser(sub) -> None:
    p = sub.add_parser("plot", help="draw the loss and validation-tau curves of a training log")
    p.add_argument("log", help="log.jsonl written by d3d train")
    p.add_argument("--out", default=None, help="PNG to write (default: the log's name with .png)")
    p.add_argument("--after", action="append", default=[], metavar="LOG",
                   help="log of a run this one continued (its init drafter); repeatable, oldest first: "
                        "the runs draw as one curve")
    p.set_defaults(func=cmd_plot)


def build_train_flags() -> argparse.ArgumentParser:
    """The full `d3d train` parser: --config plus one flag per TrainConfig field (all default to 'unset')."""
    from d3d.training.train_config import TrainConfig

    parser = argparse.ArgumentParser(
        prog="d3d train", description=TRAIN_DESCRIPTION, argument_default=argparse.SUPPRESS
    )
    parser.add_argument("--config", help="JSON or YAML file of settings (field names as below, snake_case)")
    comments = field_comments(TrainConfig)
    defaults = TrainConfig()
    for name, hint in TrainConfig.__annotations__.items():
        flag = "--" + name.replace("_", "-")
        default = getattr(defaults, name)
        text = f"{comments.get(name, '')} (default: {_show(default)})"
        if hint == "bool":
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, help=text)
        elif hint == "list[str]":
            parser.add_argument(flag, nargs="+", metavar="PATH", help=text)
        else:
            parser.add_argument(flag, metavar=name.upper(), help=text)
    return parser


def field_comments(cls) -> dict[str, str]:
    """The trailing `# comment` of each dataclass field, read from the class source."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    pattern = re.compile(r"^\s{4}(\w+):[^#\n]*#\s*(.+)$", re.MULTILINE)
    return {name: text.strip().replace("%", "%%") for name, text in pattern.findall(source)}


def _show(value) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value)) or "none"
    return "none" if value is None else str(value)


def read_config_file(path: str) -> dict:
    """A JSON or YAML mapping of settings; a D3DError if unreadable."""
    file = Path(path)
    if not file.is_file():
        raise D3DError(f"config file not found: {path}")
    try:
        if file.suffix.lower() in (".yaml", ".yml"):
            import yaml

            values = yaml.safe_load(file.read_text())
        else:
            values = json.loads(file.read_text())
    except Exception as err:  # json and yaml raise their own error types
        reason = f"{type(err).__name__}: {str(err).splitlines()[0][:120]}"
        raise D3DError(f"cannot parse config file {path}: {reason}") from None
    if not isinstance(values, dict):
        raise D3DError(f"config file {path} must hold a mapping of settings")
    return values


def config_from_args(argv: list[str]):
    """TrainConfig from `--config` and flags (flags win)."""
    from d3d.training.train_config import TrainConfig

    given = vars(build_train_flags().parse_args(argv))
    file = given.pop("config", None)
    values = read_config_file(file) if file else {}
    return TrainConfig.from_dict({**values, **given})


def cmd_train(args: argparse.Namespace) -> int:
    from d3d.training.train import train

    cfg = config_from_args(args.train_args)
    drafter_dir = train(cfg)
    print(f"drafter: {drafter_dir}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from d3d.training.plot import plot_log

    out = args.out or str(Path(args.log).with_suffix(".png"))
    plot_log(args.log, out, after=args.after)
    print(f"plot: {out}", file=sys.stderr)
    return 0
