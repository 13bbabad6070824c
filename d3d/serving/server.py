"""`d3d serve`: load the target and drafter once, build the engine loop and the app, run uvicorn.

SIGTERM (or Ctrl-C) starts a graceful shutdown: the engine stops admitting and fails waiting
requests with a 503 at once, running requests may finish for `drain_s` seconds (then they end
with an error event), uvicorn closes the listening socket and waits for open responses, and the
process exits with status 0.

The server decodes with synchronous speculative rounds at every batch size (`BatchDecoder`);
asynchronous successor drafting stays a single-request mode (`d3d generate --mode async`), see
docs/serving.md.

This module knows nothing about HTTP routes (`app.py`) or batching (`batch_engine.py`).

    run_server(ServeConfig(port=8000, max_batch=8))
"""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass

import torch

from d3d.errors import D3DError

DTYPE_NAMES = ("auto", "bfloat16", "float16", "float32")


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
    drain_s: float = 30.0  # on SIGTERM, seconds running requests may still finish
    log_level: str = "warning"  # uvicorn's log level

    def validate(self) -> None:
        if self.dtype not in DTYPE_NAMES:
            raise D3DError(f"unknown dtype '{self.dtype}' (choose from {', '.join(DTYPE_NAMES)})")
        if not 0 <= self.port < 65536:
            raise D3DError(f"--port must be in 0..65535, got {self.port}")
        if self.max_batch < 1 or self.max_queue < 0:
            raise D3DError(f"--max-batch must be >= 1 and --max-queue >= 0, got {self.max_batch}, {self.max_queue}")


def torch_dtype(name: str, device: torch.device | str | None) -> torch.dtype | None:
    """The dtype to load the target in; "auto" is resolved by the pipeline (None = its default)."""
    from d3d.inference import pipeline

    resolve = getattr(pipeline, "resolve_dtype", None)  # the pipeline's own "auto" rule, where it has one
    if resolve is not None:
        return resolve(name, device)
    if name == "auto":
        return None
    return getattr(torch, name)


def build(cfg: ServeConfig, log=print):
    """(app, engine loop) for `cfg`: the models are loaded here, once."""
    from d3d.inference.batch_engine import BatchDecoder
    from d3d.inference.pipeline import load_drafter, load_target
    from d3d.serving.app import ServedModel, create_app
    from d3d.serving.engine_loop import EngineConfig, EngineLoop
    from d3d.serving.metrics import ServingMetrics

    cfg.validate()
    target = load_target(cfg.target, cfg.device, torch_dtype(cfg.dtype, cfg.device))
    model = target.native("serving")
    choice = load_drafter(target, cfg.drafter)
    log(f"[d3d serve] target {target.name} ({target.dtype}, {target.device}); {choice.description}")
    drafter = choice.drafter
    served = ServedModel(cfg.served_model_name or target.name, target.tokenizer, target.context_length,
                         target.eos_token_ids, model.spec.vocab_size, int(time.time()))
    metrics = ServingMetrics(drafter.block_size, cfg.max_batch)
    policy = verify_length_policy()

    def make_decoder() -> BatchDecoder:
        return BatchDecoder(model, drafter, cfg.max_batch, verify_length=policy)

    engine = EngineLoop(make_decoder, EngineConfig(cfg.max_batch, cfg.max_queue, cfg.drain_s), metrics)
    return create_app(served, engine, metrics), engine


def verify_length_policy():
    """The adaptive verification length, if this build has one (d3d/inference/draft_length.py)."""
    try:
        from d3d.inference import draft_length  # noqa: F401
    except ImportError:
        return None
    return getattr(draft_length, "serving_policy", None)


def run_server(cfg: ServeConfig) -> int:
    """Serve until SIGTERM / Ctrl-C; returns the exit status."""
    import uvicorn

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
    # uvicorn re-raises a captured SIGTERM once it has shut down gracefully; with this handler in
    # place that is a no-op, so a drained shutdown exits with status 0.
    signal.signal(signal.SIGTERM, lambda *_: None)
    server.run()
    engine.close()
    print("[d3d serve] stopped", file=sys.stderr, flush=True)
    return 0
