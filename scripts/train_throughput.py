"""Seconds per training micro-batch (forward + backward) for loss vocabulary x precision x threads.

Four fixed packed examples of data/smollm2/train.jsonl (K = 32, B = 16, next-token labels), the
target's layers given on the command line, one JSON line per setting (docs/training.md "Throughput"):

    OMP_NUM_THREADS=1 .venv/bin/python scripts/train_throughput.py 0,1,2,3 1      # layers, thread counts
"""
import json
import sys
import time

import torch

from d3d.training.losses import LossConfig
from d3d.training.objective import DrafterObjective, build_drafter_body, training_vocab
from d3d.training.packing import PackedDataset, PackingConfig, collate, load_examples
from d3d.training.resolve import resolve_models
from d3d.training.train_config import TrainConfig

layers = [int(x) for x in sys.argv[1].split(",")]
threads = [int(x) for x in sys.argv[2].split(",")]
cfg = TrainConfig(data=["data/smollm2/train.jsonl"], layers=layers, num_anchors=32, labels="next-token")
facts = resolve_models(cfg)
ex, _ = load_examples(cfg.data, facts.vocab_size, 512, 32)
packing = PackingConfig(16, 32, facts.mask_token_id, "next-token")
data = PackedDataset(ex, packing, 0)
batches = [collate([data[i]], facts.mask_token_id) for i in range(0, 40, 10)]  # 4 fixed micro-batches
rows = sum(int(b["valid"].sum()) + int((b["block_labels"] != -100).any(-1).sum()) * 16 for b in batches)
vocab, _ = training_vocab(ex, 8192, facts)
loss = LossConfig(16, labels="next-token")
model = build_drafter_body(cfg, facts)
for t in threads:
    torch.set_num_threads(t)
    for vname, v in [("full", None), ("8192", vocab)]:
        module = DrafterObjective(model, loss, None, v)
        for prec in ["fp32", "bf16"]:
            def step():
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=prec == "bf16"):
                    out = module(**batches[0])
                out["total"].backward()
            step()  # warm-up
            t0 = time.perf_counter()
            for b in batches:
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=prec == "bf16"):
                    out = module(**b)
                out["total"].backward()
            s = (time.perf_counter() - t0) / len(batches)
            model.zero_grad(set_to_none=True)
            print(json.dumps({"layers": len(layers), "threads": t, "vocab": vname, "precision": prec,
                              "s_per_micro_batch": round(s, 3), "rows_per_s": round(rows / len(batches) / s, 1)}), flush=True)
