"""Draw the selective-prefill probe's chunk scores over one long-context prompt, needle marked.

Runs only the drafter (its full-prompt pass with the `[M]` probe, `d3d/inference/prefill.py`) on a
prompt of the built-in long-context suite, selects at one retention, and plots each chunk's
attention mass: kept chunks in one colour, dropped ones in another, the chunks holding the answer
marked. Prints where the answer's chunks rank.

    .venv/bin/python scripts/plot_prefill_probe.py --task passkey --length 2000 --index 0 --keep 0.2 \
        --out docs/img/prefill_probe.png
"""

from __future__ import annotations

import argparse

import torch

from d3d.evaluation import longctx
from d3d.inference.pipeline import Pipeline
from d3d.inference.prefill import DEFAULT_CHUNK_SIZE, PrefillConfig, Selection, select_prompt
from d3d.inference.prompt_layout import protected_tokens
from d3d.plotting import pyplot, save_figure


def answer_chunks(texts: list[str], answer: str) -> list[int]:
    """Indices of the chunks holding `answer`, or its start when it runs into the next chunk."""
    hits = []
    for c, text in enumerate(texts):
        following = texts[c + 1] if c + 1 < len(texts) else ""
        if answer in text or (answer in text + following and answer not in following):
            hits.append(c)
    return hits


def plot(selection: Selection, needles: list[int], title: str, out: str) -> None:
    plt = pyplot()

    scores = selection.chunk_scores.numpy()
    colours = ["tab:blue" if k else "lightgray" for k in selection.chunk_kept.tolist()]
    fig, ax = plt.subplots(figsize=(10, 3.6))
    ax.bar(range(len(scores)), scores, color=colours, width=1.0, edgecolor="none")
    if needles:
        ax.axvspan(min(needles) - 0.5, max(needles) + 0.5, color="tab:red", alpha=0.25, linewidth=0)
        ax.annotate("answer (needle)", (max(needles) + 0.5, scores.max()), color="tab:red", ha="left", va="top",
                    xytext=(4, 0), textcoords="offset points")
    ax.set_xlabel(f"prompt chunk ({int(selection.chunk_ends[0] - selection.chunk_starts[0])} tokens each, in order)")
    ax.set_ylabel("probe attention mass\n(sum over heads and layers)")
    ax.set_title(title, fontsize=10)
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color="tab:blue", label="kept"), Patch(color="lightgray", label="dropped")],
              loc="upper left", fontsize=8)
    ax.set_xlim(-0.5, len(scores) - 0.5)
    print(f"wrote {save_figure(fig, out)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="passkey", choices=longctx.TASKS, help="long-context task type")
    parser.add_argument("--length", type=int, default=2000, help="context length (approximate tokens)")
    parser.add_argument("--index", type=int, default=0, help="prompt index within the task")
    parser.add_argument("--keep", type=float, default=0.2, help="retention rho of the selection drawn")
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE, help="tokens per chunk")
    parser.add_argument("--out", default="docs/img/prefill_probe.png", help="PNG to write")
    args = parser.parse_args()

    prompt = getattr(longctx, f"{args.task}_prompt")(args.length, args.index)
    pipe = Pipeline.load()
    ids = pipe.target.encode_chat(prompt.text)
    protected = protected_tokens(pipe.target.tokenizer, ids[0], pipe.target.chat_frame)
    with torch.inference_mode():
        selection, _ = select_prompt(pipe.drafter.drafter, ids, protected, PrefillConfig(args.keep, args.chunk_size))
    texts = [pipe.target.tokenizer.decode(ids[0, s:e]) for s, e in zip(selection.chunk_starts.tolist(), selection.chunk_ends.tolist())]
    answer = prompt.reference[0] if args.task != "docqa" else prompt.text.rsplit("function ", 1)[1].split(" do?")[0]
    needles = answer_chunks(texts, answer)
    rank = torch.argsort(selection.chunk_scores, descending=True).tolist()
    print(f"{prompt.id}: {ids.shape[1]} tokens, {len(texts)} chunks, kept {len(selection.kept)} tokens "
          f"({selection.kept_share:.0%}); answer chunks {needles} rank {[rank.index(c) + 1 for c in needles]} "
          f"kept {[bool(selection.chunk_kept[c]) for c in needles]}")
    title = (f"{prompt.id}: probe scores of {len(texts)} chunks, rho = {args.keep} keeps "
             f"{int(selection.chunk_kept.sum())} (+ {int(selection.protected.sum())} protected tokens)")
    plot(selection, needles, title, args.out)


if __name__ == "__main__":
    main()
