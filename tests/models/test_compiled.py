"""`--compile`: the compiled layers compute the eager model (slow: inductor compiles C++ on a CPU)."""

from __future__ import annotations

import pytest
import torch

from d3d.models.attention import Rows
from d3d.models.compiled import compile_layers
from d3d.models.decoder import load_decoder


@pytest.mark.slow
def test_compiled_layers_give_the_eager_logits(tiny_llama_dir):
    eager, compiled = load_decoder(tiny_llama_dir), compile_layers(load_decoder(tiny_llama_dir))
    ids = torch.randint(0, 97, (1, 20), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        outs = []
        for model in (eager, compiled):
            cache = model.new_cache(1, 32)
            out = [model(Rows.clean(ids[:, :12], 0), cache)]
            out += [model(Rows.clean(ids[:, t:t + 1], t), cache) for t in range(12, 16)]  # steps
            out.append(model(Rows.clean(ids[:, 16:], 16), cache))  # a 4-row pass
            outs.append(torch.cat(out, 1))
    assert compiled.compiled
    torch.testing.assert_close(outs[1], outs[0], atol=1e-4, rtol=1e-4)
