"""The eighth task families' reference solutions and example generators: markup to statistics.

The second half of what `task_families8.py` builds on (the first half, numerals to addresses, is in
`task_reference8.py`): its last five families (HTML and Markdown text, lines of source code, word
games, sorting-algorithm traces, descriptive statistics), with the argument shapes they share (LINES,
VALUES), the reference solutions too long for a lambda (strip_tags, table_of_contents, dedent,
join_continued, wordle, bulls_and_cows, spoonerism, bubble_pass, lomuto, pancake_flips, histogram,
pearson ...) and the seeded example generators (html, markdown, source, guess, values ...: each takes
the `random.Random` the task draws from and only draws from it). The module knows nothing about tasks,
rendering or files, so the task files drawn through it regenerate byte for byte. Nothing here runs on
its own: `python -m d3d.training.task_prompts --families eighth` draws tasks built on it.
"""

from __future__ import annotations

import random
import re
import statistics
from collections import Counter

from d3d.training.task_families import WORDS

LINES = (("lines", "List[str]"),)
VALUES = (("values", "List[int]"),)
ENTITIES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"))
ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
FIVE = ("crane", "slate", "apple", "spell", "lemon", "melon", "eerie", "llama", "tacos", "coast")


# markup


def strip_tags(html: str) -> str:
    return re.sub(r"<[^>]*>", "", html)


def escape(text: str) -> str:
    for plain, entity in ENTITIES:
        text = text.replace(plain, entity)
    return text


def unescape(text: str) -> str:
    for plain, entity in reversed(ENTITIES):
        text = text.replace(entity, plain)
    return text


def html(r: random.Random) -> str:
    parts = [r.choice(WORDS) for _ in range(r.randint(1, 4))]
    tag = r.choice(("b", "i", "em", "a href='x'", "span"))
    i = r.randrange(len(parts))
    parts[i] = f"<{tag}>{parts[i]}</{tag.split()[0]}>"
    return ("<p>" if r.random() < 0.5 else "") + " ".join(parts)


def markdown(r: random.Random) -> list[str]:
    lines = []
    for _ in range(r.randint(2, 5)):
        if r.random() < 0.6:
            title = " ".join(r.choice(WORDS).title() for _ in range(r.randint(1, 2)))
            lines.append("#" * r.randint(1, 3) + " " + title)
        else:
            lines.append(" ".join(r.choice(WORDS) for _ in range(r.randint(2, 4))))
    return lines


def heading_level(line: str) -> int:
    match = re.match(r"(#{1,6}) ", line)
    return len(match.group(1)) if match else 0


def table_of_contents(lines: list[str]) -> list[str]:
    return ["  " * (heading_level(line) - 1) + line.lstrip("#").strip() for line in lines if heading_level(line)]


def slugify(title: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", title.lower()))


def links(text: str) -> list[tuple[str, str]]:
    return re.findall(r"\[([^\]]*)\]\(([^)]*)\)", text)


def link_text(r: random.Random) -> str:
    parts = [r.choice(WORDS) for _ in range(r.randint(1, 3))]
    for _ in range(r.randint(0, 2)):
        parts.insert(r.randint(0, len(parts)), f"[{r.choice(WORDS)}]({r.choice(('a.html', 'https://x.org', '/b'))})")
    return " ".join(parts)


def tags_nest(html_text: str) -> bool:
    stack = []
    for closing, name in re.findall(r"<(/?)(\w+)[^>]*>", html_text):
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack


def tag_soup(r: random.Random) -> str:
    names = [r.choice("bip") for _ in range(r.randint(1, 3))]
    closing = names[::-1] if r.random() < 0.5 else r.sample(names, len(names))[: r.randint(0, len(names))]
    return "".join(f"<{n}>" for n in names) + r.choice(WORDS) + "".join(f"</{n}>" for n in closing)


# source lines


def source(r: random.Random) -> list[str]:
    lines = []
    for _ in range(r.randint(2, 5)):
        indent = " " * r.choice((0, 4, 4, 8))
        body = r.choice(("x = 1", "if x:", "return x", "", "y = x  # note", "pass", "z = 2 ", "print(x)  "))
        lines.append(indent + body if body else "")
    return lines


def indented(r: random.Random) -> list[str]:
    base = " " * r.choice((0, 2, 4))
    return [base + " " * r.choice((0, 0, 4)) + r.choice(("a = 1", "if a:", "b()", "pass"))
            for _ in range(r.randint(2, 4))]


def align_fields(fields: list[str], stop: int) -> str:
    """The fields joined as tabs would lay them out: each but the last padded to the next stop."""
    out = ""
    for field in fields[:-1]:
        out += field
        out += " " * (stop - len(out) % stop)
    return out + (fields[-1] if fields else "")


def dedent(lines: list[str]) -> list[str]:
    widths = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip()]
    cut = min(widths, default=0)
    return [line[cut:] if line.strip() else "" for line in lines]


def join_continued(lines: list[str]) -> list[str]:
    out, pending = [], ""
    for line in lines:
        if line.endswith("&"):
            pending += line[:-1]
        else:
            out.append(pending + line)
            pending = ""
    return out + ([pending] if pending else [])


def continued(r: random.Random) -> list[str]:
    return [r.choice(("a = 1 + &", "b = 2", "c = (3 &", " + 4)", "call f(x, &")) for _ in range(r.randint(2, 5))]


def squeeze_blank(lines: list[str]) -> list[str]:
    return [line for i, line in enumerate(lines) if line.strip() or i == 0 or lines[i - 1].strip()]


def indent_changes(lines: list[str]) -> list[int]:
    """Per non-blank line: its indentation minus the previous non-blank line's (the first against 0)."""
    out, before = [], 0
    for line in lines:
        if line.strip():
            width = len(line) - len(line.lstrip(" "))
            out.append(width - before)
            before = width
    return out


# word games


def wordle(guess: str, answer: str) -> str:
    marks = ["G" if g == a else "." for g, a in zip(guess, answer)]
    left = Counter(a for g, a in zip(guess, answer) if g != a)
    for i, g in enumerate(guess):
        if marks[i] == "." and left[g] > 0:
            marks[i] = "Y"
            left[g] -= 1
    return "".join(marks)


def bulls_and_cows(secret: str, guess: str) -> tuple[int, int]:
    bulls = sum(s == g for s, g in zip(secret, guess))
    common = sum((Counter(secret) & Counter(guess)).values())
    return bulls, common - bulls


def four_digits(r: random.Random) -> str:
    return "".join(r.sample("0123456789", 4)) if r.random() < 0.5 else "".join(r.choice("1234") for _ in range(4))


def hangman(word: str, guessed: str) -> str:
    return "".join(c if c in guessed else "_" for c in word)


def guessed_letters(r: random.Random) -> str:
    return "".join(r.sample("aeiorstnlmpc", r.randint(0, 6)))


def one_letter_changed(a: str, b: str) -> bool:
    return len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1


def spoonerism(first: str, second: str) -> str:
    def split(word: str) -> tuple[str, str]:
        match = re.match(r"([^aeiou]*)(.*)", word)
        return match.group(1), match.group(2)

    (a, rest_a), (b, rest_b) = split(first), split(second)
    return f"{b}{rest_a} {a}{rest_b}"


def one_row(word: str) -> bool:
    return any(set(word.lower()) <= set(row) for row in ROWS)


def row_words(r: random.Random) -> list[str]:
    pool = ("type", "dad", "zoo", "alaska", "peace", "pot", "flash", "quiet", "mom", "riot")
    return [r.choice(pool) for _ in range(r.randint(1, 4))]


def chain_ok(words: list[str]) -> bool:
    return all(a[-1] == b[0] for a, b in zip(words, words[1:]))


def chain(r: random.Random) -> list[str]:
    pool = ("apple", "egg", "goat", "tiger", "rose", "emu", "unit", "tea", "ant")
    words = [r.choice(pool)]
    for _ in range(r.randint(1, 3)):
        follow = [w for w in pool if w[0] == words[-1][-1]]
        words.append(r.choice(follow) if follow and r.random() < 0.8 else r.choice(pool))
    return words


def from_tiles(words: list[str], tiles: str) -> str:
    fits = [w for w in words if not Counter(w) - Counter(tiles)]
    return max(fits, key=len, default="")


def tiles_for_words(r: random.Random) -> tuple[list[str], str]:
    words = r.sample(WORDS, 4)
    letters = list(r.choice(words)[: r.randint(3, 6)] + "".join(r.sample("aeiourstnlcd", r.randint(1, 4))))
    r.shuffle(letters)
    return words, "".join(letters)


# sorting traces


def bubble_pass(values: list[int]) -> list[int]:
    out = list(values)
    for i in range(len(out) - 1):
        if out[i] > out[i + 1]:
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


def bubble_passes(values: list[int]) -> int:
    """Passes until one makes no swap, that last pass included."""
    passes, out = 0, list(values)
    while True:
        passes += 1
        after = bubble_pass(out)
        if after == out:
            return passes
        out = after


def insertion_steps(values: list[int], steps: int) -> list[int]:
    out = list(values)
    for i in range(1, min(steps + 1, len(out))):
        j = i
        while j > 0 and out[j - 1] > out[j]:
            out[j - 1], out[j] = out[j], out[j - 1]
            j -= 1
    return out


def selection_swaps(values: list[int]) -> int:
    out, swaps = list(values), 0
    for i in range(len(out)):
        j = min(range(i, len(out)), key=lambda m: (out[m], m))
        if out[j] != out[i]:
            out[i], out[j] = out[j], out[i]
            swaps += 1
    return swaps


def lomuto(values: list[int]) -> list[int]:
    out = list(values)
    pivot, store = out[-1], 0
    for i in range(len(out) - 1):
        if out[i] < pivot:
            out[i], out[store] = out[store], out[i]
            store += 1
    out[store], out[-1] = out[-1], out[store]
    return out


def merge_pass(values: list[int], width: int) -> list[int]:
    out = []
    for i in range(0, len(values), 2 * width):
        out += sorted(values[i: i + 2 * width])
    return out


def pancake_flips(values: list[int]) -> list[int]:
    out, flips = list(values), []
    for size in range(len(out), 1, -1):
        if out[size - 1] == max(out[:size]):
            continue
        top = out.index(max(out[:size]))
        if top:
            flips.append(top + 1)
            out[: top + 1] = out[: top + 1][::-1]
        flips.append(size)
        out[:size] = out[:size][::-1]
    return flips


def sorted_runs(r: random.Random, width: int) -> list[int]:
    data = values(r, 3, 9)
    return [v for i in range(0, len(data), width) for v in sorted(data[i: i + width])]


def cocktail_pass(values: list[int]) -> list[int]:
    out = bubble_pass(values)
    for i in range(len(out) - 2, -1, -1):
        if out[i] > out[i + 1]:
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


def bisection_probes(values: list[int], target: int) -> list[int]:
    low, high, probes = 0, len(values) - 1, []
    while low <= high:
        mid = (low + high) // 2
        probes.append(mid)
        if values[mid] == target:
            break
        low, high = (mid + 1, high) if values[mid] < target else (low, mid - 1)
    return probes


def odd_even_pass(values: list[int]) -> list[int]:
    out = list(values)
    for start in (1, 0):
        for i in range(start, len(out) - 1, 2):
            if out[i] > out[i + 1]:
                out[i], out[i + 1] = out[i + 1], out[i]
    return out


def values(r: random.Random, low: int = 3, high: int = 7, top: int = 20) -> list[int]:
    return [r.randint(0, top) for _ in range(r.randint(low, high))]


# statistics


def histogram(data: list[int], width: int) -> dict[int, int]:
    return dict(sorted(Counter(v // width * width for v in data).items()))


def modes(data: list[int]) -> list[int]:
    counts = Counter(data)
    return sorted(v for v, c in counts.items() if c == max(counts.values()))


def trimmed_mean(data: list[int], cut: int) -> float:
    kept = sorted(data)[cut: len(data) - cut]
    return round(sum(kept) / len(kept), 2)


def cumulative_counts(data: list[int]) -> list[tuple[int, int]]:
    out, total = [], 0
    for v, c in sorted(Counter(data).items()):
        total += c
        out.append((v, total))
    return out


def standard_scores(data: list[int]) -> list[float]:
    mean, spread = statistics.fmean(data), statistics.pstdev(data)
    return [round((v - mean) / spread, 2) if spread else 0.0 for v in data]


def pearson(xs: list[int], ys: list[int]) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return round(sxy / (sxx * syy) ** 0.5, 2) if sxx and syy else 0.0


def paired(r: random.Random) -> tuple[list[int], list[int]]:
    xs = values(r, 3, 6, 10)
    if r.random() >= 0.6:
        return xs, values(r, len(xs), len(xs), 10)
    ys = [x * r.choice((1, -1, 2)) + r.randint(-3, 3) for x in xs]
    return xs, ys


def median_deviation(data: list[int]) -> float:
    middle = statistics.median(data)
    return float(statistics.median(abs(v - middle) for v in data))
