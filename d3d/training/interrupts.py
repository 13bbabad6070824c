"""SIGTERM stops a long job the way Ctrl-C does, so `kill` (or a scheduler's pre-emption) never loses work.

Background jobs of a non-interactive shell ignore SIGINT (the shell sets it to SIG_IGN), so `kill -INT`
cannot stop them; SIGTERM is what `kill` and schedulers send. Two ways to take it:

- `sigterm_as_interrupt()`: SIGTERM raises KeyboardInterrupt at once; training uses it (its interrupt
  handler saves a checkpoint of the last finished step).
- `sigterm_after_step()`: the first SIGTERM only asks the loop to stop at its next safe point (`d3d data`
  finishes and appends the batch in flight, up to a minute of generation, then stops); a second SIGTERM
  raises at once.

Only the main thread can install a handler; elsewhere both do nothing. The previous handler comes back
on exit.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class StopRequest:
    """Set by the first SIGTERM under `sigterm_after_step`; the loop checks it between steps."""

    requested: bool = False

    def check(self) -> None:
        """Raise KeyboardInterrupt (the CLI's clean 'interrupted' exit) if a stop was asked for."""
        if self.requested:
            raise KeyboardInterrupt("stopped by SIGTERM after a finished step")


@contextmanager
def _handling_sigterm(handler: Callable[[int, object], None]) -> Iterator[None]:
    """Install `handler` for SIGTERM while the block runs (main thread only), then restore the old one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt immediately, wherever the main thread is."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    with _handling_sigterm(interrupt):
        yield


@contextmanager
def sigterm_after_step() -> Iterator[StopRequest]:
    """The first SIGTERM sets the yielded request (checked between steps); a second one interrupts."""
    stop = StopRequest()

    def request(signum: int, frame: object) -> None:
        if stop.requested:
            raise KeyboardInterrupt
        stop.requested = True

    with _handling_sigterm(request):
        yield stop
