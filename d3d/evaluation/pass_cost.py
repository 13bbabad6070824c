"""How much a k-token target pass costs relative to a 1-token decode step.

Speculative decoding's speedup is bounded by about tau / (cost of a B-token verification pass /
cost of a 1-token step), so this ratio is the ceiling on a given machine. Passes of all sizes are
timed interleaved (round-robin, median of repeats) on the same cached context, and the cache is
cropped back after each pass, so every pass sees the same prefix (`d3d.inference.pass_costs`, which
also caches the table per machine for the adaptive verification length).

    d3d cost --sizes 1,2,4,8,16,32 --context 256
    d3d cost --batch 8      # the batched engine's passes, up to 8 sequences (`inference.batch_costs`)
"""

from __future__ import annotations

import json
import sys

from d3d.inference.batch_costs import measure_batch_costs
from d3d.inference.pass_costs import measure_pass_costs

__all__ = ["measure_batch_costs", "measure_pass_costs", "report", "report_batch"]


def report(costs: dict[int, float], out=None) -> dict:
    """The k-row pass table in ms and as a ratio to the 1-row step, then one JSON line (`out`:
    sys.stdout when None, read at call time so that a redirected stdout is honoured)."""
    out = sys.stdout if out is None else out
    base = costs[min(costs)]
    print(f"{'tokens':>6} {'ms':>9} {'x 1-token':>10}", file=out)
    for k, s in costs.items():
        print(f"{k:>6} {s * 1e3:>9.2f} {s / base:>10.2f}", file=out)
    result = {str(k): {"ms": round(s * 1e3, 3), "ratio": round(s / base, 3)} for k, s in costs.items()}
    print(json.dumps(result), file=out)
    return result


def report_batch(costs, block: int, out=None) -> dict:
    """The batched table (`batch_costs.BatchCosts`): per measured batch size, a plain step, the
    drafter pass and a verification of the whole block, in ms, and the tokens a round must append
    (over the batch) to pay for itself against plain steps; then one JSON line (`out`: sys.stdout
    when None, read at call time)."""
    out = sys.stdout if out is None else out
    print(f"{'batch':>5} {'plain ms':>9} {'drafter ms':>11} {f'verify x{block} ms':>14} {'break-even tokens':>18}", file=out)
    rows = {}
    for b in sorted(costs.draft_table):
        plain, draft, verify = costs.plain(b), costs.draft(b), costs.verify(b, block)
        even = costs.break_even(b, block)
        print(f"{b:>5} {plain * 1e3:>9.2f} {draft * 1e3:>11.2f} {verify * 1e3:>14.2f} {even:>18.1f}", file=out)
        rows[str(b)] = {"plain_ms": round(plain * 1e3, 3), "draft_ms": round(draft * 1e3, 3),
                        "verify_block_ms": round(verify * 1e3, 3), "break_even_tokens": round(even, 2)}
    result = {"block_size": block, "batches": rows, "table": costs.to_json()}
    print(json.dumps(result), file=out)
    return result
