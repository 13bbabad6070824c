"""Prometheus metrics of `d3d serve` (scraped at `GET /metrics`).

One `ServingMetrics` per server, on its own registry (so tests can run several servers in one
process). The engine loop reports rounds, tokens and latencies; the HTTP layer reports rejections.
prometheus-client is thread-safe, so the engine thread updates the metrics directly.

Names (all prefixed `d3d_`): requests_total{outcome}, prompt_tokens_total, generation_tokens_total,
rounds_total, round_tokens_total, tau (round_tokens_total / rounds_total since start),
accepted_length (histogram of tokens appended per request per round), batch_size (histogram of
sequences per round), running_requests, queue_depth, time_to_first_token_seconds.

This module knows nothing about models or HTTP.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

OUTCOMES = ("finished", "cancelled", "rejected", "error")  # values of the requests_total label
TTFT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ServingMetrics:
    """Every metric the server exports, registered on one registry."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, block_size: int = 16, max_batch: int = 8) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("d3d_requests", "Requests by outcome", ["outcome"], registry=r)
        self.prompt_tokens = Counter("d3d_prompt_tokens", "Prompt tokens of admitted requests", registry=r)
        self.generation_tokens = Counter("d3d_generation_tokens", "Tokens generated", registry=r)
        self.rounds = Counter("d3d_rounds", "Verification rounds, summed over requests", registry=r)
        self.round_tokens = Counter("d3d_round_tokens", "Tokens appended by those rounds", registry=r)
        self.tau = Gauge("d3d_tau", "Mean tokens appended per request-round since start", registry=r)
        self.accepted = Histogram("d3d_accepted_length", "Tokens appended per request per round",
                                  buckets=tuple(range(1, block_size + 1)), registry=r)
        self.batch = Histogram("d3d_batch_size", "Sequences per round", buckets=tuple(range(1, max_batch + 1)),
                               registry=r)
        self.running = Gauge("d3d_running_requests", "Requests in the running batch", registry=r)
        self.queue = Gauge("d3d_queue_depth", "Requests waiting to join the batch", registry=r)
        self.ttft = Histogram("d3d_time_to_first_token_seconds", "Submission to first token",
                              buckets=TTFT_BUCKETS, registry=r)
        for outcome in OUTCOMES:
            self.requests.labels(outcome)
        self._rounds = self._round_tokens = 0

    def record_round(self, appended: list[int]) -> None:
        """One engine round: tokens each running request appended."""
        self.batch.observe(len(appended))
        for n in appended:
            self.accepted.observe(n)
        self.rounds.inc(len(appended))
        self.round_tokens.inc(sum(appended))
        self._rounds += len(appended)
        self._round_tokens += sum(appended)
        self.tau.set(self._round_tokens / self._rounds if self._rounds else 0.0)

    def record_outcome(self, outcome: str) -> None:
        self.requests.labels(outcome).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
