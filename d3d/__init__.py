"""d3d: lossless speculative decoding with a standalone block-diffusion drafter (D3D).

Layout (imports point downward only):
    d3d.cli          command line (`d3d generate`, `d3d bench`)
    d3d.evaluation   benchmark suites and the interleaved benchmark harness
    d3d.inference    verification, autoregressive and speculative decoding engines, baselines
    d3d.models       the native Llama-family runtime, KV cache, drafter, model loading
"""

__version__ = "0.1.0"
