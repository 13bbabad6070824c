"""The `d3d` command line.

    d3d generate --prompt "Write a haiku about the sea." [--mode sync] [--compare]
    d3d bench --suite humaneval --limit 20 --modes ar,sync,hf,pld
    d3d bench --modes ar,sync,sync@new --drafter-variant new=runs/drafter/drafter
    d3d generate --prompt "..." --mode async --budget auto --timeline runs/timeline.json
    d3d cost --sizes 1,16
    d3d data --out data/train.jsonl --prompts prompts.jsonl --self-instruct 200 --greedy
    d3d train --data data/train.jsonl --num-layers 4 --output-dir runs/drafter
    d3d plot runs/drafter/log.jsonl --out curve.png
    d3d prune --drafter runs/drafter/drafter --select-dev dev2.jsonl --min-layers 2
    d3d draft-vocab --drafter runs/prune/drafter --data data/train.jsonl --size 8192 --out runs/shipped
    d3d eval-drafter --drafter runs/drafter/drafter --data data/dev.jsonl --save
    d3d export --format vllm --drafter runs/causal/drafter --out exports/causal
    d3d serve --dtype bfloat16 --max-batch 8 --max-queue 64
    d3d loadtest --dtype bfloat16 --concurrency 1,2,4,8

Subcommands parse flags and call typed functions by keyword; nothing here decodes or measures.
A `D3DError` (bad input) becomes one line on stderr and exit status 2; Ctrl-C exits with 130.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import fields
from pathlib import Path

from d3d.errors import D3DError
from d3d.evaluation.eval_drafter import add_eval_drafter_parser
from d3d.training.data_cli import add_data_parser
from d3d.training.export_cli import add_average_parser, add_export_parser, add_grow_parser
from d3d.serving.serve_cli import add_serve_parser
from d3d.training.prune_cli import add_prune_parser
from d3d.training.train_cli import add_plot_parser, add_train_parser

EXIT_BAD_INPUT = 2
COST_SIZES_DEFAULT = "1,2,4,8,16,32"  # d3d cost --sizes
EXIT_INTERRUPTED = 130


def _sampling_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling threshold")
    p.add_argument("--top-k", type=int, default=0, help="keep the k most likely tokens (0 = off)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")


def _model_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default=None, help="hub id, local directory or .gguf (default: embedded SmolLM2-135M-Instruct)")
    p.add_argument("--drafter", default=None, help="drafter directory (default: the one shipped for the target; 'untrained': the target's first layers, untrained)")
    p.add_argument("--block-size", type=int, default=None,
                   help="block size B (default: the drafter's run block size, else the one it was trained with)")
    p.add_argument("--draft-length", default="auto",
                   help="rows the target verifies per sync or tree round: 'auto' (chosen per round from the drafter's "
                        "confidence and this machine's pass costs; plain steps when drafting does not pay) or k "
                        "(anchor + k-1 drafted tokens; 1 = never speculate)")
    p.add_argument("--tree-branches", default="drafter,lookup",
                   help="mode tree: candidate sources of the token tree, a comma-separated subset of drafter "
                        "(the drafter's top tokens per block position) and lookup (prompt lookup); docs/tree.md")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda if available)")
    _dtype_flag(p)
    _runtime_flags(p)
    _drafter_weights_flag(p)


def _runtime_flags(p: argparse.ArgumentParser) -> None:
    """--precision and --weights (one definition, shared with `d3d serve`)."""
    from d3d.serving.flags import add_runtime_flags

    add_runtime_flags(p)
    p.add_argument("--compile", action="store_true",
                   help="torch.compile each layer's MLP and norms (the first passes compile; eager by default)")


def _drafter_weights_flag(p: argparse.ArgumentParser) -> None:
    """--drafter-weights (one definition, shared with `d3d serve`)."""
    from d3d.serving.flags import add_drafter_weights_flag

    add_drafter_weights_flag(p)


def _dtype_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float16", "float32"],
                   help="weights and compute: auto = bfloat16 on CUDA and on CPUs with native bfloat16, else float32; "
                        "every mode of a run uses the same dtype")


def _async_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", default="auto",
                   help="async successor budget: 'auto' (measure t_d against t_v on this machine) or 'C,F' "
                        "(position coverage, fan-out)")
    p.add_argument("--draft-threads", type=int, default=None, help="async: torch threads of the drafting worker (default: half the cores)")
    p.add_argument("--target-threads", type=int, default=None, help="async: torch threads of the target (default: the other half)")
    p.add_argument("--async-backend", default=None, choices=["process", "thread", "inline"],
                   help="async: where drafting runs (default: a worker process on CPU, a thread + CUDA stream on GPU)")
    p.add_argument("--timeline", default=None, help="async: save the t_d / t_v timeline as JSON here, and a .png plot beside it")


def _async_config(args: argparse.Namespace):
    from d3d.inference.async_engine import AsyncConfig

    config = AsyncConfig(budget=args.budget, backend=args.async_backend, draft_threads=args.draft_threads,
                         target_threads=args.target_threads)
    config.validate()
    return config


def _save_timeline(stats, path: str | None) -> None:
    from d3d.evaluation.timeline import plot_timeline, save_timeline

    if path and getattr(stats, "timeline", None):
        json_path = save_timeline(stats, path)
        png = plot_timeline(json_path, json_path.with_suffix(".png"))
        print(f"timeline: {json_path} and {png}", file=sys.stderr)


def _prefill_flags(p: argparse.ArgumentParser, many: bool) -> None:
    if many:
        p.add_argument("--prefill-keep", default=None, metavar="RHO[,RHO...]",
                       help="selective prefill: add a mode sync@keepRHO per retention RHO in (0, 1], e.g. 0.1,0.2,0.3 (docs/prefill.md)")
    else:
        p.add_argument("--prefill-keep", default=None, metavar="RHO",
                       help="selective prefill (sync or ar): the target reads about RHO in (0, 1] of the prompt, chosen by "
                            "--prefill-select; the output may differ from full-prompt decoding (docs/prefill.md)")
    p.add_argument("--prefill-chunk", type=int, default=32, help="selective prefill: tokens per scored prompt chunk")
    # defaults spelled here to keep torch out of the parser; a test holds them equal to BenchConfig's
    selectors = "lexical (default), probe (the paper's), target-layers, last, random or target-layers+lexical"
    p.add_argument("--prefill-select", default="lexical", metavar="SELECTOR[,...]" if many else "SELECTOR",
                   help=f"selective prefill: how prompt chunks are chosen: {selectors}"
                        + (" (comma list: one mode sync@keepRHO@SELECTOR each, all in the same run)" if many else "")
                        + "; random is seeded by --seed (docs/prefill.md)")
    p.add_argument("--prefill-layers", default="3-7", metavar="LAYERS",
                   help="selective prefill: the target layers whose attention the target-layers selectors read, e.g. 3-7 or 2,5")


def _prefill_keeps(value: str | None) -> tuple[float, ...]:
    """--prefill-keep's comma-separated retentions, each checked (D3DError if outside (0, 1])."""
    from d3d.inference.prefill import parse_prefill_keep

    return tuple(parse_prefill_keep(x.strip()) for x in (value or "").split(",") if x.strip())


def _prefill_selector(select: str, layers: str) -> tuple[str, tuple[int, ...]]:
    """generate's one --prefill-select and its --prefill-layers, checked (D3DError)."""
    from d3d.inference.selectors import parse_probe_layers, parse_selectors

    names = parse_selectors(select)
    if len(names) > 1:
        raise D3DError(f"--prefill-select takes one selector for generate, got {select}")
    return names[0], parse_probe_layers(layers)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="d3d", description="Lossless speculative decoding with a block-diffusion drafter.")
    sub = parser.add_subparsers(dest="command", required=True)

    gen = sub.add_parser("generate", help="answer one prompt, streaming, then print statistics")
    gen.add_argument("--prompt", required=True, help="the user message (the chat template is applied)")
    gen.add_argument("--mode", default=None, choices=["ar", "sync", "async", "tree"],
                     help="ar = plain decoding; sync = speculative; async = speculative, drafting during verification; "
                          "tree = a token tree from the drafter and prompt lookup, verified in one pass (default: tree, "
                          "the fastest measured; sync with --prefill-keep)")
    gen.add_argument("--max-new-tokens", type=int, default=256, help="generation budget")
    gen.add_argument("--stop", action="append", default=[], help="stop string (repeatable)")
    gen.add_argument("--compare", action="store_true", help="also run plain decoding and print the speedup")
    gen.add_argument("--json", action="store_true", help="print the statistics as one JSON line at the end")
    _model_flags(gen)
    _sampling_flags(gen)
    _async_flags(gen)
    _prefill_flags(gen, many=False)
    gen.set_defaults(func=cmd_generate)

    bench = sub.add_parser("bench", help="run decoding modes interleaved on a suite; table then one JSON line")
    bench.add_argument("--suite", default="humaneval", help="humaneval, mixed (built-in math, code, chat, writing), longctx / longctx2 (scored long-context prompts, docs/prefill.md) or a .jsonl file with a 'prompt' field per line")
    bench.add_argument("--limit", type=int, default=None, help="first N prompts only")
    bench.add_argument("--modes", default="ar,sync",
                       help="comma-separated: ar, sync, async, hf (transformers generate), pld (prompt lookup), "
                            "ar-drafter / hf-assisted (classic speculative decoding with --ar-drafter, native / transformers)")
    bench.add_argument("--drafter-variant", dest="drafter_variants", action="append", default=[], metavar="NAME=DIR",
                       help="register another drafter under NAME (letters, digits, -, _) for modes sync@NAME, "
                            "async@NAME, tree@NAME (also sync@NAME+b8): the same target, beside the run's drafter "
                            "(repeatable)")
    bench.add_argument("--ar-drafter", default=None, help="AR draft model directory (d3d train --diffusion-weight 0)")
    bench.add_argument("--ar-draft-tokens", type=int, default=4, help="k: tokens the AR draft model proposes per round")
    bench.add_argument("--sweep", nargs="+", default=[], metavar="C,F",
                       help="async budgets to run one by one (modes async@C,F), e.g. --sweep 2,1 4,1 4,2")
    bench.add_argument("--max-new-tokens", type=int, default=128, help="generation budget per prompt")
    bench.add_argument("--out", default=None, help="results file (JSONL; resumed if it exists)")
    bench.add_argument("--fresh", action="store_true", help="ignore existing results and start over")
    bench.add_argument("--write-prompts", default=None, metavar="PATH.jsonl",
                       help="only write the suite's prompts (after --limit) as a prompt file and exit, e.g. for "
                            "d3d data --eval-only (offline acceptance on exactly what the bench sends)")
    _model_flags(bench)
    _sampling_flags(bench)
    _async_flags(bench)
    _prefill_flags(bench, many=True)
    bench.set_defaults(func=cmd_bench)

    cost = sub.add_parser("cost", help="time k-token target passes against a 1-token step (the speedup ceiling)")
    cost.add_argument("--sizes", default=COST_SIZES_DEFAULT, help="comma-separated pass sizes (--profile: 1,16)")
    cost.add_argument("--context", type=int, default=256, help="cached tokens before each pass")
    cost.add_argument("--repeats", type=int, default=20, help="timed repeats per size (median)")
    cost.add_argument("--target", default=None, help="hub id, local directory or .gguf (default: embedded)")
    cost.add_argument("--device", default=None, help="cpu, cuda ... (default: cuda if available)")
    _dtype_flag(cost)
    _runtime_flags(cost)
    cost.add_argument("--profile", action="store_true",
                      help="instead: per-op time (torch.profiler) of a 1-row and a 16-row step, bytes of weights read, GB/s")
    cost.add_argument("--save", action="store_true",
                      help="instead: measure this machine's pass-cost table again (its own sizes and context) and "
                           "store it as the one decoding reads (--draft-length auto, async, tree); run it quiet")
    cost.add_argument("--batch", type=int, default=0, metavar="N",
                      help="instead: time the batched engine's passes (plain step, drafter pass with the proposals, "
                           "verification of w rows each) for batches up to N through the ragged caches the server "
                           "runs, and the tokens a round must append to pay (docs/serving.md)")
    cost.add_argument("--drafter", default=None, help="with --batch: drafter directory (default: the shipped one)")
    _drafter_weights_flag(cost)
    cost.set_defaults(func=cmd_cost)
    add_data_parser(sub)
    add_train_parser(sub)
    add_plot_parser(sub)
    add_prune_parser(sub)
    add_serve_parser(sub)
    add_eval_drafter_parser(sub)
    add_export_parser(sub)
    add_average_parser(sub)
    add_grow_parser(sub)

    vocab = sub.add_parser("draft-vocab", help="copy a drafter with a frequency-ranked drafting vocabulary (faster drafting)")
    vocab.add_argument("--drafter", required=True, help="drafter directory")
    vocab.add_argument("--data", nargs="+", required=True, metavar="PATH", help="d3d data files whose responses are counted")
    vocab.add_argument("--size", type=int, default=8192, help="tokens the drafter may propose")
    vocab.add_argument("--extend", action="store_true",
                       help="keep the drafter's drafting vocabulary and add the most frequent tokens it lacks, up to --size")
    vocab.add_argument("--out", required=True, help="directory of the new drafter")
    vocab.add_argument("--target", default=None, help="target whose end-of-sequence ids are always kept (default: embedded)")
    vocab.set_defaults(func=cmd_draft_vocab)
    return parser


class TextStreamer:
    """Prints the decoded text of a growing token list, holding back incomplete characters."""

    def __init__(self, decode: Callable[[list[int]], str], out=None) -> None:
        self.decode, self.out = decode, sys.stdout if out is None else out
        self.tokens: list[int] = []
        self.printed = 0

    def push(self, chunk: Iterable[int]) -> None:
        self.tokens.extend(chunk)
        text = self.decode(self.tokens)
        if text.endswith("\ufffd"):
            return
        self.out.write(text[self.printed :])
        self.out.flush()
        self.printed = len(text)

    def close(self) -> None:
        text = self.decode(self.tokens)
        self.out.write(text[self.printed :] + "\n")
        self.out.flush()


def format_stats(stats) -> str:
    hist = " ".join(f"{k}:{n}" for k, n in enumerate(stats.accept_hist) if n)
    tps = stats.new_tokens / stats.total_s if stats.total_s else 0.0
    lines = [
        f"mode {stats.mode} | {stats.new_tokens} tokens in {stats.total_s:.2f} s ({tps:.1f} tokens/s) | stop: {stats.stop_reason}",
        f"rounds {stats.rounds} | tau {stats.tau:.2f} | accepted-length histogram {hist or '-'}",
        f"prefill {stats.prefill_s * 1e3:.0f} ms | draft {stats.mean_draft_s * 1e3:.1f} ms/round | verify {stats.mean_verify_s * 1e3:.1f} ms/round",
    ]
    if getattr(stats, "draft_lengths", None):
        ks = " ".join(f"{k}:{n}" for k, n in stats.draft_lengths.items())
        skipped = getattr(stats, "skipped_rounds", 0)
        lines.append(f"rows verified per round (k; 1 = plain step) {ks}"
                     + (f" | {skipped} plain steps skipped drafting (back-off)" if skipped else ""))
    if hasattr(stats, "wins"):  # tree decoding
        wins = " ".join(f"{k}:{n}" for k, n in sorted(stats.wins.items()))
        nodes = " ".join(f"{k}:{n}" for k, n in stats.nodes_hist.items())
        lines.append(f"tree: {stats.mean_nodes:.1f} nodes per round (nodes:rounds {nodes or '-'}) | accepted path "
                     f"from (branch:rounds) {wins or '-'} | drafter ran in {stats.drafter_rounds} of {stats.rounds} rounds")
    if hasattr(stats, "select_s"):  # selective prefill
        lines.append(f"selective prefill: the target read {stats.prompt_tokens} of {stats.full_prompt_tokens} prompt tokens "
                     f"(rho {stats.keep}, selector {stats.selector}) | selection {stats.select_s * 1e3:.0f} ms | TTFT {stats.ttft_s * 1e3:.0f} ms")
    if hasattr(stats, "hit_rate"):  # asynchronous decoding
        lines.append(
            f"async {stats.budget} (N_async {stats.n_async}, {stats.backend}) | hit rate {stats.hit_rate:.2f} "
            f"({stats.hits}/{stats.hits + stats.misses}) | t_d {stats.mean_successor_s * 1e3:.1f} ms | "
            f"t_v {stats.mean_verify_s * 1e3:.1f} ms | hidden {stats.hidden_share:.0%} | waited {stats.wait_s:.2f} s"
            + (f" | FALLBACK: {stats.fallback}" if stats.fallback else ""))
    return "\n".join(lines)


def default_mode(keep: float | None) -> str:
    """`d3d generate`'s mode when --mode is not given: the tree, the fastest lossless mode measured on both
    suites (docs/tree.md, "The default mode"); sync when a selective prefill is asked for, which runs only
    with sync or ar."""
    return "tree" if keep is None else "sync"


def cmd_generate(args: argparse.Namespace) -> int:
    from d3d.inference.draft_length import parse_draft_length
    from d3d.inference.engine import GenerationConfig
    from d3d.inference.pipeline import Pipeline, stats_for
    from d3d.inference.prefill import SelectiveStats
    from d3d.inference.sampling import SamplingConfig
    from d3d.inference.tree_engine import parse_branches

    sampling = SamplingConfig(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p)
    cfg = GenerationConfig(max_new_tokens=args.max_new_tokens, sampling=sampling, stop_strings=tuple(args.stop), seed=args.seed)
    cfg.validate()
    if args.block_size is not None and args.block_size < 2:
        raise D3DError(f"block size must be at least 2, got {args.block_size}")
    keeps = _prefill_keeps(args.prefill_keep)
    if len(keeps) > 1:
        raise D3DError(f"--prefill-keep takes one retention for generate, got {args.prefill_keep}")
    keep = keeps[0] if keeps else None
    args.mode = args.mode or default_mode(keep)
    if keep is not None and args.mode not in ("sync", "ar"):
        raise D3DError(f"--prefill-keep runs with --mode sync or ar, not {args.mode}")
    if args.prefill_chunk < 1:
        raise D3DError(f"--prefill-chunk must be at least 1, got {args.prefill_chunk}")
    select, layers = _prefill_selector(args.prefill_select, args.prefill_layers)
    if keep is not None and args.mode == "ar" and select == "probe":
        raise D3DError("--prefill-select probe needs a drafter and --mode ar has none: choose another selector or --mode sync")
    branches = parse_branches(args.tree_branches)
    pipe = Pipeline.load(target=args.target, drafter=args.drafter, block_size=args.block_size, device=args.device,
                         async_config=_async_config(args), dtype=args.dtype, precision=args.precision, weights=args.weights,
                         compiled=args.compile, drafter_weights=args.drafter_weights)
    prompt_ids = pipe.target.encode_chat(args.prompt)
    pipe.tree_branches = branches
    if args.mode in ("sync", "async") or (args.mode == "tree" and "drafter" in branches):
        print(f"[d3d] {pipe.drafter.description}", file=sys.stderr)
    if keep is not None:
        print(f"[d3d] selective prefill (rho {keep}, selector {select}): the answer follows the reduced prompt, not the full one", file=sys.stderr)
    pipe.prefill_chunk_size, pipe.prefill_select, pipe.prefill_layers = args.prefill_chunk, select, layers
    pipe.draft_length = parse_draft_length(args.draft_length)
    stats = stats_for(args.mode) if keep is None else SelectiveStats(args.mode)
    streamer = TextStreamer(pipe.target.decode)
    for chunk in pipe.stream(prompt_ids, args.mode, cfg, stats, keep):
        streamer.push(chunk)
    streamer.close()
    print("---")
    print(f"target {pipe.target.name} | dtype {str(pipe.target.dtype).removeprefix('torch.')} | device {pipe.target.device}")
    print(format_stats(stats))
    _save_timeline(stats, args.timeline)
    result = {"stats": stats.as_dict()}
    if args.compare and args.mode != "ar":
        ar_tokens, ar_stats = pipe.generate(prompt_ids, "ar", cfg)
        speedup = ar_stats.total_s / stats.total_s if stats.total_s else 0.0
        same = ar_tokens == streamer.tokens
        ident = ("yes" if same else "NO") if sampling.greedy else "n/a (sampling)"
        if keep is not None:
            ident += " (not expected: the target read a reduced prompt; plain decoding read all of it)"
        print(f"plain decoding (full prompt): {ar_stats.new_tokens} tokens in {ar_stats.total_s:.2f} s "
              f"({ar_stats.new_tokens / ar_stats.total_s:.1f} tokens/s) | speedup {speedup:.2f}x | identical output: {ident}")
        result |= {"ar": ar_stats.as_dict(), "speedup": round(speedup, 3), "identical": same if sampling.greedy else None}
    if args.json:
        print(json.dumps(result))
    pipe.close()
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from d3d.evaluation.bench import BenchConfig, run_bench

    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    if args.limit is not None and args.limit < 1:
        raise D3DError(f"--limit must be at least 1, got {args.limit}")
    if args.write_prompts:
        from d3d.evaluation.suites import write_suite_prompts

        count = write_suite_prompts(args.suite, args.limit, Path(args.write_prompts))
        print(f"{count} prompts of suite {args.suite}: {args.write_prompts}")
        return 0
    # every BenchConfig field is the parsed flag of the same name (the flags are kebab-case spellings
    # of the fields), converted where the command line spells it differently
    given = {f.name: getattr(args, f.name) for f in fields(BenchConfig) if hasattr(args, f.name)}
    converted = {"modes": modes, "sweep": tuple(args.sweep), "prefill_keep": _prefill_keeps(args.prefill_keep),
                 "drafter_variants": tuple(args.drafter_variants)}
    cfg = BenchConfig(**given | converted)
    run_bench(cfg)
    return 0


def cmd_cost(args: argparse.Namespace) -> int:
    from d3d.evaluation.pass_cost import measure_pass_costs, report
    from d3d.inference.pipeline import load_target

    try:
        sizes = sorted({int(x) for x in args.sizes.split(",") if x.strip()})
    except ValueError:
        raise D3DError(f"--sizes must be comma-separated integers, got '{args.sizes}'") from None
    if not sizes or sizes[0] < 1 or args.context < 1 or args.repeats < 1:
        raise D3DError("--sizes, --context and --repeats must be positive")
    if args.save and args.profile:
        raise D3DError("--save stores the pass-cost table; --profile times operators: one at a time")
    if args.batch < 0 or (args.batch and (args.profile or args.save)):
        raise D3DError(f"--batch takes a positive batch size and goes without --profile and --save, got {args.batch}")
    target = load_target(args.target, args.device, args.dtype, args.precision, args.weights, args.compile)
    model = target.native("pass timing")
    if args.batch:
        return _batch_cost(args, target, model)
    if args.save:
        from d3d.inference.pass_costs import save_machine_pass_costs

        path, costs = save_machine_pass_costs(model)
        print(f"saved {path}")
        report(dict(sorted(costs.table.items())))
        return 0
    if args.profile:
        from d3d.evaluation.step_profile import print_step_profiles

        print_step_profiles(model, sizes if args.sizes != COST_SIZES_DEFAULT else [1, 16], args.context, args.repeats)
        return 0
    report(measure_pass_costs(model, sizes, args.context, args.repeats))
    return 0


def _batch_cost(args: argparse.Namespace, target, model) -> int:
    """`d3d cost --batch N`: the batched engine's passes (`inference/batch_costs.py`), printed."""
    from d3d.evaluation.pass_cost import measure_batch_costs, report_batch
    from d3d.inference.pipeline import load_drafter

    drafter = load_drafter(target, args.drafter, weights=args.drafter_weights).drafter
    report_batch(measure_batch_costs(model, drafter, args.batch, repeats=args.repeats), drafter.block_size)
    return 0


def cmd_draft_vocab(args: argparse.Namespace) -> int:
    from d3d.models import hub
    from d3d.training.draft_vocab import write_draft_vocab
    from d3d.training.resolve import target_eos_ids

    eos = target_eos_ids(hub.resolve_model_dir(args.target))
    record = write_draft_vocab(args.drafter, args.out, args.data, args.size, eos, extend=args.extend)
    grown = (f"; grown from {record['extended_from']} tokens covering {record['coverage_before']:.1%}"
             if "extended_from" in record else "")
    print(f"drafter with a {record['size']}-token drafting vocabulary ({record['coverage']:.1%} of the data's "
          f"response tokens; {record['distinct_in_data']} distinct in the data{grown}): {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except D3DError as err:
        print(f"d3d: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("\nd3d: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
