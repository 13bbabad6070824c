"""`d3d serve`: load the target and drafter once, build the engine loop and the app, run uvicorn.

SIGTERM (or Ctrl-C, SIGINT) starts a graceful shutdown: the engine stops admitting and fails
waiting requests with a 503 at once, running requests may finish for `drain_s` seconds (then they
end with an error event), uvicorn closes the listening socket and waits for open responses, and
the process exits with status 0. A second Ctrl-C makes uvicorn stop waiting for open responses.

The server decodes with synchronous speculative rounds at every batch size (`BatchDecoder`);
asynchronous successor drafting stays a single-request mode (`d3d generate --mode async`), see
docs/serving.md.

This module knows nothing about HTTP routes (`app.py`) or batching (`batch_engine.py`).

    run_server(ServeConfig(port=8000, max_batch=8))
"""

from __future__ import annotations

import signal
import socket
import sys
import time
from dataclasses import dataclass

from d3d.errors import D3DError

DTYPE_NAMES = ("auto", "bfloat16", "float16", "float32")
DRAFTER_WEIGHT_NAMES = ("auto", "dense", "int8", "packed")  # `pipeline.DRAFTER_WEIGHT_CHOICES`, spelled here to keep torch out


@dataclass
class ServeConfig:
    """How `d3d serve` runs."""

    host: str = "127.0.0.1"  # interface to listen on
    port: int = 8000  # TCP port
    target: str | None = None  # hub id, local directory or .gguf; None = the embedded SmolLM2
    drafter: str | None = None  # drafter directory; None = the one shipped for the target (else untrained)
    dtype: str = "auto"  # auto, bfloat16, float16 or float32
    device: str | None = None  # cpu, cuda ...; None = cuda if available
    max_batch: int = 8  # sequences decoded together per round
    max_queue: int = 64  # requests waiting beyond the batch; more get 429
    served_model_name: str | None = None  # the `model` id clients use; None = the target's name
    draft_length: str = "auto"  # rows verified per round: auto (adaptive per request and batch), all, or k
    drain_s: float = 30.0  # on SIGTERM, seconds running requests may still finish
    log_level: str = "warning"  # uvicorn's log level
    precision: str = "auto"  # precision switches: a preset or switch names (`d3d/models/precision.py`)
    weights: str = "auto"  # "int8": weight-only int8 target and drafter; "packed": prepacked bfloat16; auto: packed where it runs
    drafter_weights: str = "auto"  # the drafter's runtime weights: auto (the target's), dense or int8
    max_body_bytes: int = 4 * 1024 * 1024  # request bodies beyond this get a 413
    max_prompt_chars: int = 0  # prompt text beyond this many characters is refused before tokenizing; 0 = 16 per context token

    def validate(self) -> None:
        if self.dtype not in DTYPE_NAMES:
            raise D3DError(f"unknown dtype '{self.dtype}' (choose from {', '.join(DTYPE_NAMES)})")
        if self.drafter_weights not in DRAFTER_WEIGHT_NAMES:
            raise D3DError(f"unknown drafter weight format '{self.drafter_weights}' "
                           f"(choose from {', '.join(DRAFTER_WEIGHT_NAMES)})")
        if not 0 <= self.port < 65536:
            raise D3DError(f"--port must be in 0..65535, got {self.port}")
        if self.max_batch < 1 or self.max_queue < 0:
            raise D3DError(f"--max-batch must be >= 1 and --max-queue >= 0, got {self.max_batch}, {self.max_queue}")
        if self.max_body_bytes < 1 or self.max_prompt_chars < 0:
            raise D3DError(f"--max-body-bytes must be >= 1 and --max-prompt-chars >= 0, got {self.max_body_bytes}, "
                           f"{self.max_prompt_chars}")


def build(cfg: ServeConfig, log=print):
    """(app, engine loop) for `cfg`: the models are loaded here, once."""
    from d3d.inference.batch_engine import BatchDecoder
    from d3d.inference.pipeline import load_drafter, load_target
    from d3d.serving.app import create_app
    from d3d.serving.engine_loop import EngineConfig, EngineLoop
    from d3d.serving.metrics import ServingMetrics
    from d3d.serving.validation import RequestLimits, ServedModel

    cfg.validate()
    target = load_target(cfg.target, cfg.device, cfg.dtype, cfg.precision, cfg.weights)  # the pipeline resolves "auto"
    model = target.native("serving")
    choice = load_drafter(target, cfg.drafter, weights=cfg.drafter_weights)
    log(f"[d3d serve] target {target.name} ({target.dtype}, {target.weights} weights, {target.device}); {choice.description}")
    drafter = choice.drafter
    served = ServedModel(cfg.served_model_name or target.name, target.tokenizer, target.context_length,
                         target.eos_token_ids, model.spec.vocab_size, int(time.time()),
                         RequestLimits(cfg.max_body_bytes, cfg.max_prompt_chars))
    metrics = ServingMetrics(drafter.block_size, cfg.max_batch)
    policy, gate = draft_policy_factory(cfg.draft_length, model, choice, log)

    def make_decoder() -> BatchDecoder:
        return BatchDecoder(model, drafter, cfg.max_batch, draft_policy=policy, gate=gate)

    engine = EngineLoop(make_decoder, EngineConfig(cfg.max_batch, cfg.max_queue, cfg.drain_s), metrics)
    return create_app(served, engine, metrics), engine


def draft_policy_factory(draft_length: str, model, choice, log=print):
    """(each request's verification-length policy factory or None, the batch's drafting gate or None).

    "auto": adaptive, from this machine's measured pass costs taken as each request's share of
    the batched pass (`BatchShare`), the drafter's measured pass time and its acceptance
    calibration, with a `BatchGate` that skips the drafter pass while drafting does not pay (it
    replaces each request's own back-off); "all": verify every drafted token; k: verify exactly
    k - 1 drafted tokens.
    """
    from d3d.inference.batch_engine import BatchGate, BatchShare
    from d3d.inference.draft_length import Calibration, DraftLengthPolicy, parse_draft_length
    from d3d.inference.pass_costs import PassCosts, drafter_pass_seconds, machine_pass_costs

    if draft_length == "all":
        return None, None
    rows = parse_draft_length(draft_length)
    if rows is not None:
        return (lambda batch_size: DraftLengthPolicy(PassCosts({1: 1.0}), fixed=rows - 1)), None
    costs = machine_pass_costs(model, log=log)
    draft_s = drafter_pass_seconds(choice.drafter, model, costs)
    calibration = Calibration.load(choice.path)
    log(f"[d3d serve] adaptive verification length: t_v(1) {costs.seconds(1) * 1e3:.1f} ms, t_v(16) "
        f"{costs.seconds(16) * 1e3:.1f} ms, t_d {draft_s * 1e3:.1f} ms, "
        f"{'identity' if calibration.identity else 'measured'} calibration")
    gate = BatchGate(costs, draft_s, choice.drafter.block_size)
    return (lambda batch_size: DraftLengthPolicy(BatchShare(costs, batch_size), calibration, draft_s=draft_s,
                                                 max_skip=0)), gate


def check_port_free(host: str, port: int) -> None:
    """D3DError (one line, exit 2) if the address is taken, before minutes of model loading."""
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as err:
        raise D3DError(f"cannot listen on {host}:{port}: {err.strerror}") from None


def run_server(cfg: ServeConfig) -> int:
    """Serve until SIGTERM / Ctrl-C; returns the exit status."""
    import uvicorn

    cfg.validate()
    check_port_free(cfg.host, cfg.port)
    app, engine = build(cfg, log=lambda m: print(m, file=sys.stderr, flush=True))

    class DrainingServer(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            engine.begin_drain()
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, host=cfg.host, port=cfg.port, log_level=cfg.log_level,
                            timeout_graceful_shutdown=int(cfg.drain_s) + 5)
    print(f"[d3d serve] listening on http://{cfg.host}:{cfg.port} (max batch {cfg.max_batch}, "
          f"max queue {cfg.max_queue})", file=sys.stderr, flush=True)
    server = DrainingServer(config)
    # uvicorn re-raises a captured SIGTERM / SIGINT once it has shut down gracefully; with these
    # handlers in place that is a no-op, so a drained shutdown (Ctrl-C included) exits with status 0.
    signal.signal(signal.SIGTERM, lambda *_: None)
    signal.signal(signal.SIGINT, lambda *_: None)
    server.run()
    engine.close()
    print("[d3d serve] stopped", file=sys.stderr, flush=True)
    return 0
