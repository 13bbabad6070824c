"""Training: target-generated data (`d3d data`) and drafter training (`d3d train`).

Imports point downward only: training uses d3d.inference (decoding, sampling) and d3d.models.
"""
