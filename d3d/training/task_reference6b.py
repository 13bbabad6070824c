"""The sixth task families' reference solutions and example generators: standings to schedules.

The second half of what `task_families6.py` builds on (the first half, check digits to queues, is in
`task_reference6.py`): its last five families (sports tables, units and number formatting, encodings,
small parsers, timetables and calendar rules), with the argument shapes they share (RESULTS, DAY_TEXT),
the tables some solutions read (team names, tennis calls, number words, SI and binary prefixes,
chemical elements), the reference solutions too long for a lambda (standings, tennis_call, lead_changes,
si_prefixed, number_in_words, varint_encode, zeckendorf, split_quoted_csv, read_ini, count_atoms,
easter_sunday, business_days_later ...) and the seeded example generators (match_results,
tennis_points, running_scores, quoted_csv_line, ini_lines, nested_path, formula, date_text ...: each
takes the `random.Random` the task draws from and only draws from it). The module knows nothing about
tasks, rendering or files, so the task files drawn through it regenerate byte for byte. Nothing here
runs on its own: `python -m d3d.training.task_prompts --families sixth` draws tasks built on it.
"""

from __future__ import annotations

import datetime
import random
import re
from collections import Counter
from decimal import Decimal
from math import gcd

from d3d.training.task_families import WORDS

RESULTS = (("results", "List[str]"),)
DAY_TEXT = (("date", "str"),)
TEAMS = ("Ants", "Bees", "Cats", "Dogs", "Owls")
TENNIS_CALLS = ("love", "15", "30", "40")
SMALL_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
SI_PREFIXES = ((10 ** 9, "G"), (10 ** 6, "M"), (10 ** 3, "k"))
BINARY_PREFIXES = ((2 ** 30, "GiB"), (2 ** 20, "MiB"), (2 ** 10, "KiB"))
SPOONS = {"tsp": 1, "tbsp": 3, "cup": 48}
ELEMENTS = ("H", "C", "N", "O", "S", "Na", "Cl", "Fe", "Mg")
SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def parse_result(line: str) -> tuple[str, int, int, str]:
    home, score, away = line.split()
    home_goals, away_goals = map(int, score.split("-"))
    return home, home_goals, away_goals, away


def team_rows(results: list[str]) -> dict[str, list[int]]:
    """Each team's [points, goals for, goals against], teams in alphabetical order."""
    rows: dict[str, list[int]] = {}
    for line in results:
        home, hg, ag, away = parse_result(line)
        for team, scored, let_in in ((home, hg, ag), (away, ag, hg)):
            row = rows.setdefault(team, [0, 0, 0])
            row[0] += 3 if scored > let_in else scored == let_in
            row[1] += scored
            row[2] += let_in
    return dict(sorted(rows.items()))


def standings(results: list[str]) -> list[str]:
    rows = team_rows(results)
    return sorted(rows, key=lambda t: (-rows[t][0], rows[t][2] - rows[t][1], -rows[t][1], t))


def match_results(r: random.Random) -> list[str]:
    teams = r.sample(TEAMS, r.randint(2, 4))
    return [f"{home} {r.randint(0, 3)}-{r.randint(0, 3)} {away}"
            for home, away in (r.sample(teams, 2) for _ in range(r.randint(1, 4)))]


def tennis_call(points: str) -> str:
    a, b = points.count("A"), points.count("B")
    if max(a, b) >= 4 and abs(a - b) >= 2:
        return "game " + ("A" if a > b else "B")
    if a >= 3 and b >= 3:
        return "deuce" if a == b else "advantage " + ("A" if a > b else "B")
    return f"{TENNIS_CALLS[a]}-{TENNIS_CALLS[b]}"


def tennis_points(r: random.Random) -> str:
    """The points of one game, stopping at the latest with the point that wins it."""
    points = ""
    for _ in range(r.randint(1, 10)):
        points += r.choice("AB")
        if tennis_call(points).startswith("game"):
            break
    return points


def lead_changes(scores: list[tuple[int, int]]) -> int:
    leader, changes = "", 0
    for home, away in scores:
        now = "home" if home > away else "away" if away > home else leader
        changes += bool(leader) and now != leader
        leader = now
    return changes


def running_scores(r: random.Random) -> list[tuple[int, int]]:
    home = away = 0
    scores = []
    for _ in range(r.randint(2, 7)):
        if r.random() < 0.5:
            home += r.randint(1, 3)
        else:
            away += r.randint(1, 3)
        scores.append((home, away))
    return scores


def batting_average(hits: int, at_bats: int) -> str:
    thousandths = (2000 * hits + at_bats) // (2 * at_bats)
    whole = str(thousandths // 1000) if thousandths >= 1000 else ""
    return f"{whole}.{thousandths % 1000:03d}"


def hits_and_at_bats(r: random.Random) -> tuple[int, int]:
    at_bats = r.randint(1, 12)
    return r.randint(0, at_bats), at_bats


def si_prefixed(value: int) -> str:
    unit, prefix = next(((u, p) for u, p in SI_PREFIXES if value >= u), (1, ""))
    tenths = value * 10 // unit
    if not prefix:
        return str(value)
    return f"{tenths // 10}{'' if tenths % 10 == 0 else f'.{tenths % 10}'}{prefix}"


def from_si_prefix(text: str) -> int:
    factor = dict((p, u) for u, p in SI_PREFIXES).get(text[-1], 1)
    return int(Decimal(text.rstrip("kMG")) * factor)


def si_text(r: random.Random) -> str:
    if r.random() < 0.5:
        return f"{r.randint(1, 99)}.{r.randint(1, 9)}{r.choice('kMG')}"
    return f"{r.randint(1, 999)}{r.choice(('', 'k', 'k', 'M', 'G'))}"


def binary_units(size: int) -> str:
    unit, prefix = next(((u, p) for u, p in BINARY_PREFIXES if size >= u), (1, "B"))
    if unit == 1:
        return f"{size} B"
    tenths = size * 10 // unit
    return f"{tenths // 10}.{tenths % 10} {prefix}"


def spread_size(r: random.Random) -> int:
    return r.choice((r.randint(0, 1023), r.randint(1024, 2 ** 20), r.randint(2 ** 20, 2 ** 31),
                     2 ** 10 * r.randint(1, 9)))


def compact_duration(seconds: int) -> str:
    parts = []
    for unit, letter in ((86400, "d"), (3600, "h"), (60, "m"), (1, "s")):
        count, seconds = divmod(seconds, unit)
        if count:
            parts.append(f"{count}{letter}")
    return " ".join(parts) or "0s"


def duration_text(r: random.Random) -> str:
    parts = [f"{r.randint(1, 59)}{unit}" for unit in "hms" if r.random() < 0.6]
    return "".join(parts) or f"{r.randint(1, 59)}m"


def seconds_spread(r: random.Random) -> int:
    return r.choice((r.randint(0, 59), r.randint(60, 7200), r.randint(3600, 200000), 3600 * r.randint(1, 30)))


def number_in_words(n: int) -> str:
    hundreds, rest = divmod(n, 100)
    tens, ones = divmod(rest, 10)
    words = SMALL_NUMBERS[rest] if rest < 20 else TENS[tens] + (f"-{SMALL_NUMBERS[ones]}" if ones else "")
    if not hundreds:
        return words
    return f"{SMALL_NUMBERS[hundreds]} hundred" + (f" and {words}" if rest else "")


def significant(n: int, digits: int) -> int:
    drop = max(0, len(str(n)) - digits)
    step = 10 ** drop
    return (n + step // 2) // step * step


def mixed_number(n: int, k: int) -> str:
    whole, rest = divmod(n, k)
    if rest == 0:
        return str(whole)
    g = gcd(rest, k)
    return (f"{whole} " if whole else "") + f"{rest // g}/{k // g}"


def move_to_front(text: str) -> list[int]:
    alphabet, codes = list("abcdefghijklmnopqrstuvwxyz"), []
    for c in text:
        i = alphabet.index(c)
        codes.append(i)
        alphabet.insert(0, alphabet.pop(i))
    return codes


def burrows_wheeler(text: str) -> str:
    marked = text + "$"
    return "".join(rotation[-1] for rotation in sorted(marked[i:] + marked[:i] for i in range(len(marked))))


def varint_encode(n: int) -> list[int]:
    out = []
    while True:
        n, low = divmod(n, 128)
        out.append(low | (128 if n else 0))
        if not n:
            return out


def varint_decode(data: list[int]) -> int:
    return sum((byte & 127) << (7 * i) for i, byte in enumerate(data))


def wide_number(r: random.Random) -> int:
    return r.choice((r.randint(0, 127), r.randint(128, 16383), r.randint(16384, 3000000)))


def column_label(n: int) -> str:
    label = ""
    while n:
        n, rest = divmod(n - 1, 26)
        label = chr(65 + rest) + label
    return label


def column_index(r: random.Random) -> int:
    return r.choice((r.randint(1, 26), r.randint(27, 702), r.randint(703, 20000)))


def column_number(label: str) -> int:
    number = 0
    for c in label:
        number = 26 * number + ord(c) - 64
    return number


def percent_encode(text: str) -> str:
    return "".join(c if c in SAFE else f"%{ord(c):02X}" for c in text)


def url_text(r: random.Random) -> str:
    return "".join(r.choice(WORDS) + r.choice((" ", "&", "=", "/", "?", "-", "+", "#", ".", ""))
                   for _ in range(r.randint(1, 3)))


def zeckendorf(n: int) -> list[int]:
    fibs = [1, 2]
    while fibs[-1] + fibs[-2] <= n:
        fibs.append(fibs[-1] + fibs[-2])
    terms = []
    for f in reversed(fibs):
        if f <= n:
            terms.append(f)
            n -= f
    return terms


def split_quoted_csv(line: str) -> list[str]:
    fields, field, quoted = [], "", False
    for c in line:
        if c == '"':
            quoted = not quoted
        elif c == "," and not quoted:
            fields.append(field)
            field = ""
        else:
            field += c
    return fields + [field]


def quoted_csv_line(r: random.Random) -> str:
    fields = []
    for _ in range(r.randint(2, 4)):
        kind = r.random()
        if kind < 0.4:
            fields.append(f'"{r.choice(WORDS)}, {r.choice(WORDS)}"')
        elif kind < 0.55:
            fields.append(f'"{r.choice(WORDS)} {r.choice(WORDS)}"')
        else:
            fields.append(r.choice(WORDS + ("", "42")))
    return ",".join(fields)


def read_ini(lines: list[str]) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in lines:
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
        elif line.strip() and not line.startswith(";"):
            key, _, value = line.partition("=")
            current[key.strip()] = value.strip()
    return sections


def ini_lines(r: random.Random) -> list[str]:
    lines = []
    for section in r.sample(("main", "paths", "user", "log"), r.randint(1, 2)):
        lines.append(f"[{section}]")
        for key in r.sample(("name", "level", "size", "mode"), r.randint(0, 3)):
            lines.append(r.choice((f"{key} = {r.choice(WORDS)}", f"{key}={r.randint(1, 9)}")))
            if r.random() < 0.25:
                lines.append(r.choice(("", "; a comment")))
    return lines


def long_options(args: list[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for arg in args:
        if arg.startswith("--"):
            name, has_value, value = arg[2:].partition("=")
            options[name] = value if has_value else "true"
    return options


def option_args(r: random.Random) -> list[str]:
    return [r.choice((f"--{r.choice(('mode', 'size', 'verbose'))}", f"--{r.choice(('mode', 'size'))}={r.randint(1, 9)}",
                      r.choice(WORDS))) for _ in range(r.randint(1, 5))]


def compare_versions(first: str, second: str) -> int:
    a, b = ([int(part) for part in v.split(".")] for v in (first, second))
    width = max(len(a), len(b))
    a, b = a + [0] * (width - len(a)), b + [0] * (width - len(b))
    return (a > b) - (a < b)


def version_pair(r: random.Random) -> tuple[str, str]:
    first = [r.randint(0, 12) for _ in range(r.randint(1, 3))]
    second = r.choice((first + [0], first[:-1] + [first[-1] + r.choice((-1, 1, 9))], list(first),
                       [r.randint(0, 12) for _ in range(r.randint(1, 3))]))
    return ".".join(map(str, first)), ".".join(str(max(0, part)) for part in second)


def lookup_dotted(data: dict, path: str) -> int:
    for key in path.split("."):
        if not isinstance(data, dict) or key not in data:
            return -1
        data = data[key]
    return data if isinstance(data, int) else -1


def nested_path(r: random.Random) -> tuple[dict, str]:
    """Nested dictionaries two or three deep with integer leaves, and a path to a leaf or with a wrong key."""
    keys = ("a", "b", "db", "port", "user")
    depth = r.randint(2, 3)

    def build(level: int) -> dict:
        return {key: (r.randint(0, 99) if level == 1 else build(level - 1)) for key in r.sample(keys, r.randint(1, 2))}

    data, node, path = build(depth), None, []
    node = data
    while isinstance(node, dict):
        key = r.choice(sorted(node))
        path.append(key)
        node = node[key]
    if r.random() < 0.35:
        path[r.randrange(len(path))] = "host"
    return data, ".".join(path)


def priced_text(r: random.Random) -> str:
    return " ".join(r.choice((r.choice(WORDS), f"${r.randint(0, 20)}", f"${r.randint(0, 9)}.{r.randint(0, 99):02d}"))
                    for _ in range(r.randint(2, 6)))


def count_atoms(formula: str) -> dict[str, int]:
    atoms: Counter = Counter()
    for element, count in re.findall(r"([A-Z][a-z]?)(\d*)", formula):
        atoms[element] += int(count or 1)
    return dict(atoms)


def formula(r: random.Random) -> str:
    return "".join(element + r.choice(("", "", str(r.randint(2, 6))))
                   for element in r.choices(ELEMENTS, k=r.randint(1, 4)))


def dice_range(notation: str) -> tuple[int, int]:
    count, sides, sign, bonus = re.fullmatch(r"(\d*)d(\d+)([+-]?)(\d*)", notation).groups()
    dice, modifier = int(count or 1), int(sign + bonus) if bonus else 0
    return dice + modifier, dice * int(sides) + modifier


def dice_notation(r: random.Random) -> str:
    count = r.choice(("", str(r.randint(1, 4))))
    return f"{count}d{r.choice((4, 6, 8, 10, 12, 20))}" + r.choice(("", f"+{r.randint(1, 5)}", f"-{r.randint(1, 3)}"))


def coordinate_text(r: random.Random) -> str:
    space = lambda: r.choice(("", " "))  # noqa: E731
    return " ".join(f"({r.randint(-9, 9)},{space()}{r.randint(-9, 9)})" for _ in range(r.randint(1, 4)))


def hand_angle(hour: int, minute: int) -> float:
    twice = abs(60 * (hour % 12) - 11 * minute) % 720
    return min(twice, 720 - twice) / 2


def as_date(text: str) -> datetime.date:
    return datetime.date.fromisoformat(text)


def date_text(r: random.Random, first: int = 2015, last: int = 2030) -> str:
    return datetime.date(r.randint(first, last), r.randint(1, 12), r.randint(1, 28)).isoformat()


def year_edge_date(r: random.Random) -> tuple[int, int, int]:
    """(day, month, year), often in the first or last days of a year, where ISO weeks change years."""
    month, year = r.choice((1, 12, r.randint(1, 12))), r.randint(2010, 2030)
    edge = r.choice((1, 2, 3)) if month == 1 else r.choice((29, 30, 31)) if month == 12 else r.randint(1, 28)
    return r.randint(1, 28) if r.random() < 0.4 else edge, month, year


def weekdays_in_span(start: str, end: str) -> int:
    first, last = as_date(start), as_date(end)
    return sum((first + datetime.timedelta(days)).weekday() < 5 for days in range((last - first).days + 1))


def date_span(r: random.Random) -> tuple[str, str]:
    start = as_date(date_text(r))
    return start.isoformat(), (start + datetime.timedelta(r.randint(0, 20))).isoformat()


def business_days_later(date: str, count: int) -> str:
    day = as_date(date)
    while count:
        day += datetime.timedelta(1)
        count -= day.weekday() < 5
    return day.isoformat()


def next_departure(departures: list[str], now: str) -> str:
    return next((t for t in departures if t >= now), departures[0])


def departures(r: random.Random) -> tuple[list[str], str]:
    times = sorted({f"{r.randint(5, 23):02d}:{r.choice((0, 15, 30, 45)):02d}" for _ in range(r.randint(1, 5))})
    now = r.choice((r.choice(times), f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}"))
    return times, now


def easter_sunday(year: int) -> tuple[int, int]:
    """Western Easter in the Gregorian calendar (the anonymous Gregorian algorithm)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    l = (32 + 2 * e + 2 * i - h - k) % 7  # noqa: E741
    m = (a + 11 * h + 19 * l) // 433
    month = (h + l - 7 * m + 90) // 25
    return month, (h + l - 7 * m + 33 * month + 19) % 32


def nth_weekday(year: int, month: int, weekday: str, nth: int) -> int:
    first = datetime.date(year, month, 1).weekday()
    return 1 + (WEEKDAY_NAMES.index(weekday) - first) % 7 + 7 * (nth - 1)


def convert_offset(time: str, source: int, target: int) -> str:
    minutes = (int(time[:2]) * 60 + int(time[3:]) + 60 * (target - source)) % 1440
    return f"{minutes // 60:02d}:{minutes % 60:02d}"
