#!/usr/bin/env python3
"""Compares two benchmark runs and flags regressions.

Usage:

    scripts/bench_compare.py OLD.json NEW.json [--threshold PERCENT]
                             [--alpha P] [--by-ratio] [--filter REGEX]
                             [--markdown] [--fail-on-regression]

OLD and NEW are either scripts/bench.sh's merged bench/results/latest.json or
one binary's Google Benchmark JSON (--benchmark_out=FILE
--benchmark_out_format=json). Benchmarks are matched by binary, name and
thread count; each one's time is the median over its repetitions.

A benchmark is a regression when its median time grew by more than
--threshold percent (default 10) and, when both runs have at least 3
repetitions of it, a one-sided Mann-Whitney U test says the new times are
slower with p < --alpha (default 0.05). With fewer repetitions only the
threshold decides: on a noisy machine, run with more repetitions rather than
trust single figures. An improvement is the same the other way.

--by-ratio compares each resil benchmark's ratio to its group's first
baseline (see bench/README.md) instead of its time: the baseline ran on the
same machine minutes apart, so this cancels much of the difference between
two CI runners. (Ratios are medians over medians: no U test, threshold only.)

Exit status: 0, or 1 with --fail-on-regression when anything regressed;
2 on bad input. Standard library only.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_report import Result, baselines_for, fmt_ns, load_results  # noqa: E402

MIN_SAMPLES_FOR_TEST = 3


# ------------------------------------------------------- Mann-Whitney U


@lru_cache(maxsize=None)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the C(m+n, m) orderings give each U = 0 .. m*n."""
    if m == 0 or n == 0:
        return (1,)
    with_last_x = _u_counts(m - 1, n)  # the largest value is an x: it beats all n ys
    with_last_y = _u_counts(m, n - 1)
    counts = [0] * (m * n + 1)
    for u, c in enumerate(with_last_x):
        counts[u + n] += c
    for u, c in enumerate(with_last_y):
        counts[u] += c
    return tuple(counts)


def p_greater(xs: list[float], ys: list[float]) -> float:
    """One-sided p-value that xs tend to be larger than ys (Mann-Whitney U;
    exact for small samples, normal approximation beyond)."""
    m, n = len(xs), len(ys)
    u = sum(1.0 if x > y else 0.5 if x == y else 0.0 for x in xs for y in ys)
    if m * n <= 400:
        counts = _u_counts(m, n)
        at_least = sum(c for k, c in enumerate(counts) if k >= math.ceil(u - 1e-9))
        return at_least / math.comb(m + n, m)
    mean = m * n / 2
    sd = math.sqrt(m * n * (m + n + 1) / 12)
    z = (u - 0.5 - mean) / sd
    return 0.5 * math.erfc(z / math.sqrt(2))


# ------------------------------------------------------------ comparing


class Row:
    def __init__(self, key: str, old: list[float], new: list[float], threshold: float, alpha: float, unit: str):
        self.key, self.unit = key, unit
        self.old, self.new = statistics.median(old), statistics.median(new)
        self.change = self.new / self.old - 1 if self.old > 0 else math.inf
        self.tested = len(old) >= MIN_SAMPLES_FOR_TEST and len(new) >= MIN_SAMPLES_FOR_TEST
        self.p_slower = p_greater(new, old) if self.tested else None
        self.p_faster = p_greater(old, new) if self.tested else None
        slower_sure = not self.tested or self.p_slower < alpha
        faster_sure = not self.tested or self.p_faster < alpha
        if self.change > threshold and slower_sure:
            self.verdict = "REGRESSION"
        elif self.change < -threshold / (1 + threshold) and faster_sure:
            self.verdict = "improved"
        elif abs(self.change) > threshold:
            self.verdict = "noise?"  # past the threshold, but the test does not back it
        else:
            self.verdict = ""

    def cells(self) -> list[str]:
        show = fmt_ns if self.unit == "ns" else (lambda v: f"{v:.3g}")
        # The p-value of the direction the median moved in.
        p = "—" if self.p_slower is None else f"{self.p_slower if self.change > 0 else self.p_faster:.3f}"
        return [self.key, show(self.old), show(self.new), f"{100 * self.change:+.1f} %", p, self.verdict]


def by_key(results: list[Result]) -> dict[str, Result]:
    return {f"{r.binary}: {r.label}": r for r in results if not r.error and r.times_ns}


def ratio_samples(results: list[Result]) -> dict[str, list[float]]:
    """Each benchmark's ratio to its group's first baseline (baselines themselves left out)."""
    out: dict[str, list[float]] = {}
    for r in results:
        if r.kind == "baseline" or r.error or not r.ns_per_op:
            continue
        bases = baselines_for(r, results)
        if bases and bases[0].ns_per_op:
            out[f"{r.binary}: {r.label} ÷ {bases[0].variant}"] = [r.ns_per_op / bases[0].ns_per_op]
    return out


def describe_missing(keys: list[str], other: dict) -> list[str]:
    """Names the missing benchmarks, a whole binary missing on the other
    side in one phrase."""
    binaries_there = {k.split(": ", 1)[0] for k in other}
    by_binary: dict[str, list[str]] = {}
    for k in keys:
        binary, _, name = k.partition(": ")
        by_binary.setdefault(binary, []).append(name)
    return [f"{binary} (all {len(names)})" if binary not in binaries_there else f"{binary}: " + ", ".join(names)
            for binary, names in by_binary.items()]


def table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|---|" + "--:|" * (len(header) - 2) + "---|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fmt = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i == 0 or i == len(cells) - 1 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r).rstrip() for r in rows])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--threshold", type=float, default=10.0, help="percent slower that counts (default 10)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance for the U test (default 0.05)")
    parser.add_argument("--by-ratio", action="store_true", help="compare ratios to the baseline, not times")
    parser.add_argument("--filter", help="only benchmarks whose 'binary: name' matches this regex")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--fail-on-regression", action="store_true", help="exit 1 when anything regressed")
    opts = parser.parse_args(argv)
    if opts.threshold <= 0 or not 0 < opts.alpha < 1:
        parser.error("--threshold must be > 0 and --alpha in (0, 1)")

    try:
        _, old_results = load_results(opts.old)
        _, new_results = load_results(opts.new)
    except (OSError, ValueError) as error:
        print(f"bench_compare: {error}", file=sys.stderr)
        return 2
    for path, results in ((opts.old, old_results), (opts.new, new_results)):
        if not results:
            print(f"bench_compare: {path} holds no benchmark results", file=sys.stderr)
            return 2

    if opts.by_ratio:
        old, new, unit = ratio_samples(old_results), ratio_samples(new_results), "ratio"
    else:
        old = {k: r.times_ns for k, r in by_key(old_results).items()}
        new = {k: r.times_ns for k, r in by_key(new_results).items()}
        unit = "ns"
    pattern = re.compile(opts.filter) if opts.filter else None
    keep = lambda k: pattern is None or pattern.search(k)  # noqa: E731

    threshold = opts.threshold / 100
    rows = [Row(k, old[k], new[k], threshold, opts.alpha, unit) for k in old if k in new and keep(k)]
    header = ["benchmark", f"old {unit}", f"new {unit}", "change", "p", "verdict"]
    print(table(header, [r.cells() for r in rows], opts.markdown))

    for path, mine, theirs in ((opts.old, old, new), (opts.new, new, old)):
        missing = describe_missing([k for k in mine if k not in theirs and keep(k)], theirs)
        if missing:
            print(f"\nonly in {path}: " + "; ".join(missing))

    regressions = [r for r in rows if r.verdict == "REGRESSION"]
    improved = [r for r in rows if r.verdict == "improved"]
    untested = sum(1 for r in rows if not r.tested)
    print(f"\n{len(rows)} compared, {len(regressions)} regressed by more than {opts.threshold:g} %, "
          f"{len(improved)} improved" + (f"; {untested} with fewer than {MIN_SAMPLES_FOR_TEST} repetitions "
                                         "judged by the threshold alone" if untested else ""))
    return 1 if regressions and opts.fail_on_regression else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
