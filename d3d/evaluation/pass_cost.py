"""How much a k-token target pass costs relative to a 1-token decode step.

Speculative decoding's speedup is bounded by about tau / (cost of a B-token verification pass /
cost of a 1-token step), so this ratio is the ceiling on a given machine. Passes of all sizes are
timed interleaved (round-robin, median of repeats) on the same cached context, and the cache is
cropped back after each pass, so every pass sees the same prefix (`d3d.inference.pass_costs`, which
also caches the table per machine for the adaptive verification length).

    d3d cost --sizes 1,2,4,8,16,32 --context 256
"""

from __future__ import annotations

import json
import sys

from d3d.inference.pass_costs import measure_pass_costs

__all__ = ["measure_pass_costs", "report"]


def report(costs: dict[int, float], out=sys.stdout) -> dict:
    base = costs[min(costs)]
    print(f"{'tokens':>6} {'ms':>9} {'x 1-token':>10}", file=out)
    for k, s in costs.items():
        print(f"{k:>6} {s * 1e3:>9.2f} {s / base:>10.2f}", file=out)
    result = {str(k): {"ms": round(s * 1e3, 3), "ratio": round(s / base, 3)} for k, s in costs.items()}
    print(json.dumps(result), file=out)
    return result
