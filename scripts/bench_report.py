#!/usr/bin/env python3
"""Merges resil's benchmark results into one JSON file and a Markdown report.

Usage (scripts/bench.sh runs it; it rarely needs running by hand):

    scripts/bench_report.py --results DIR --out-json FILE --out-md FILE
                            [--build-dir DIR] [--runs FILE]
                            [--repetitions N] [--min-time SECONDS]

DIR holds one Google Benchmark JSON file per binary (bench_<name>.json). The
optional --runs file is the tab-separated log bench.sh keeps per binary
(status, wall and CPU seconds, /proc/stat and /proc/loadavg before and after),
from which the report tells how busy the machine was with other work.

Benchmark names follow one convention (bench/README.md):

    <group>/resil[_<variant>][/<arg>...]     resil code
    <group>/baseline_<what>[/<arg>...]       what it is compared with

Each resil benchmark's time is divided by that of every baseline of its group
with the same arguments and thread count (or, lacking one, the same thread
count). A component "round:N" marks interleaved repeats of one benchmark and
is folded into it, like repetitions. ns/op is CPU time per operation, the
median over repetitions; benchmarks measured in real time (a name component
"real_time" or "manual_time") use wall time. Standard library only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

FORMAT = "resil-bench/1"
UNIT_TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
THREADS_RE = re.compile(r"^threads:(\d+)$")
ROUND_RE = re.compile(r"^round:\d+$")

# Other processes using more than this share of the machine's cores during
# the run (on average, or while any one binary ran) put a warning in the
# report; so does a 1-minute load average above it when that was not measured.
LOADED_SHARE = 0.25
# Hypervisor steal above this share of CPU time is worth a warning too.
STEAL_SHARE = 0.05
# Binaries that ran for less than this many seconds get no load figure of
# their own: /proc/stat's clock ticks are too coarse for them.
MIN_WALL_FOR_SHARE = 1.0


# --------------------------------------------------------------- parsing


@dataclass
class Result:
    """One benchmark (all its repetitions and rounds) of one binary."""

    binary: str
    group: str
    variant: str
    args: tuple[str, ...]
    threads: int
    order: tuple[int, int, int]
    times_ns: list[float] = field(default_factory=list)
    allocs: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def kind(self) -> str:
        if self.variant.startswith("baseline"):
            return "baseline"
        if self.variant.startswith("resil"):
            return "resil"
        return "other"

    @property
    def name(self) -> str:
        """The name without thread count and rounds: group/variant/args."""
        return "/".join(p for p in (self.group, self.variant, *self.args) if p)

    @property
    def label(self) -> str:
        """A unique label within its binary, with the thread count when not 1."""
        return self.name + (f"/threads:{self.threads}" if self.threads != 1 else "")

    @property
    def ns_per_op(self) -> float | None:
        return statistics.median(self.times_ns) if self.times_ns else None

    @property
    def allocs_per_op(self) -> float | None:
        return statistics.median(self.allocs) if self.allocs else None

    @property
    def spread(self) -> float | None:
        """Interquartile range / median over repetitions (and rounds), or None
        with fewer than three: robust to the odd repetition another process
        spoiled, which max - min is not."""
        if len(self.times_ns) < 3 or not self.ns_per_op:
            return None
        q1, _, q3 = statistics.quantiles(self.times_ns, n=4, method="inclusive")
        return (q3 - q1) / self.ns_per_op


def split_name(run_name: str) -> tuple[str, str, tuple[str, ...], bool]:
    """(group, variant, args, measured in real time) of a run name; the
    thread count and rounds are left out of args."""
    parts = run_name.split("/")
    group = parts[0]
    variant = parts[1] if len(parts) > 1 else ""
    rest = [p for p in parts[2:] if not THREADS_RE.match(p) and not ROUND_RE.match(p)]
    real = any(p in ("real_time", "manual_time") for p in parts[1:])
    if THREADS_RE.match(variant) or ROUND_RE.match(variant):  # "name/threads:2"
        variant = ""
    return group, variant, tuple(rest), real


def binary_of(doc: dict, fallback: str) -> str:
    exe = doc.get("context", {}).get("executable")
    return Path(exe).name if exe else fallback


def collect(rows: list[dict], binary_for_row) -> list[Result]:
    """Folds Google Benchmark rows (iterations, or medians when only
    aggregates were reported) into one Result per benchmark and thread count."""
    results: dict[tuple, Result] = {}
    have_iterations: set[tuple] = set()
    pending_aggregates: list[tuple[tuple, dict]] = []
    for row in rows:
        binary = binary_for_row(row)
        run_name = row.get("run_name", row.get("name", ""))
        group, variant, args, real = split_name(run_name)
        threads = int(row.get("threads", 1))
        key = (binary, group, variant, args, threads)
        # Registration order, whatever order the runs finished in (random
        # interleaving reports them shuffled).
        order = (int(row.get("family_index", 1 << 30)), int(row.get("per_family_instance_index", 0)), len(results))
        if key not in results:
            results[key] = Result(binary, group, variant, args, threads, order=order)
        result = results[key]
        result.order = min(result.order, order)
        if row.get("error_occurred"):
            result.error = row.get("error_message") or "error"
            continue
        run_type = row.get("run_type", "iteration")
        if run_type == "iteration":
            have_iterations.add(key)
            add_sample(result, row, real)
        elif row.get("aggregate_name") == "median":
            pending_aggregates.append((key, row))
    # Only aggregates (--benchmark_report_aggregates_only): use the medians.
    for key, row in pending_aggregates:
        if key not in have_iterations:
            add_sample(results[key], row, split_name(row.get("run_name", ""))[3])
    return sorted(results.values(), key=lambda r: r.order)


def add_sample(result: Result, row: dict, real: bool) -> None:
    scale = UNIT_TO_NS.get(row.get("time_unit", "ns"), 1.0)
    value = row.get("real_time" if real else "cpu_time")
    if value is not None:
        result.times_ns.append(float(value) * scale)
    if "allocs/op" in row:
        result.allocs.append(float(row["allocs/op"]))


def load_results(path: Path) -> tuple[dict, list[Result]]:
    """Reads a merged file (this script's output) or one Google Benchmark
    JSON file; returns the document and its results."""
    doc = json.loads(path.read_text())
    if doc.get("format") == FORMAT:
        return doc, collect(doc.get("benchmarks", []), lambda row: row.get("binary", "?"))
    binary = binary_of(doc, path.stem)
    return doc, collect(doc.get("benchmarks", []), lambda row: binary)


def baselines_for(result: Result, results: list[Result]) -> list[Result]:
    """The baselines result is compared with, in registration order: those of
    its group with its arguments and thread count, else with its thread count."""
    if result.kind == "baseline":
        return []
    same_group = [
        r for r in results
        if r.kind == "baseline" and r.binary == result.binary and r.group == result.group
        and r.threads == result.threads and r.ns_per_op
    ]
    exact = [r for r in same_group if r.args == result.args]
    return exact or same_group


def ratios(result: Result, results: list[Result]) -> list[tuple[str, float]]:
    """(baseline variant, ratio) for each of result's baselines."""
    mine = result.ns_per_op
    if mine is None or result.error:
        return []
    return [(b.variant, mine / b.ns_per_op) for b in baselines_for(result, results) if b.ns_per_op]


# ------------------------------------------------------------ the machine


def run_text(args: list[str], cwd: Path | None = None) -> str | None:
    try:
        out = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def cmake_cache(build_dir: Path | None) -> dict[str, str]:
    cache: dict[str, str] = {}
    if build_dir is None:
        return cache
    try:
        text = (build_dir / "CMakeCache.txt").read_text()
    except OSError:
        return cache
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):[A-Z]+=(.*)$", line)
        if match:
            cache[match.group(1)] = match.group(2)
    return cache


def git_commit(source_dir: Path) -> str | None:
    commit = run_text(["git", "rev-parse", "--short=12", "HEAD"], source_dir)
    if commit is None:
        return None
    # --no-optional-locks: only look, never refresh the index.
    changes = run_text(["git", "--no-optional-locks", "status", "--porcelain", "--untracked-files=no"], source_dir)
    return commit + (" (with uncommitted changes)" if changes else "")


def machine_info(build_dir: Path | None, source_dir: Path) -> dict:
    cache = cmake_cache(build_dir)
    compiler = cache.get("CMAKE_CXX_COMPILER", "c++")
    version = run_text([compiler, "--version"])
    flags = " ".join(
        f for f in (cache.get("CMAKE_CXX_FLAGS", ""),
                    cache.get("CMAKE_CXX_FLAGS_" + cache.get("CMAKE_BUILD_TYPE", "").upper(), "")) if f)
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "kernel": f"{platform.system()} {platform.release()}",
        "compiler": version.splitlines()[0] if version else compiler,
        "build_type": cache.get("CMAKE_BUILD_TYPE") or None,
        "cxx_flags": flags or None,
        "resil_commit": git_commit(source_dir),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def run_started(contexts: dict[str, dict]) -> str | None:
    """When the first binary started, from Google Benchmark's contexts, in UTC."""
    dates = []
    for context in contexts.values():
        try:
            dates.append(dt.datetime.fromisoformat(context["date"]).astimezone(dt.timezone.utc))
        except (KeyError, TypeError, ValueError):
            continue
    return min(dates).strftime("%Y-%m-%d %H:%M UTC") if dates else None


def read_runs(path: Path | None) -> list[dict]:
    """bench.sh's per-binary log: binary, status, wall s, own CPU s, then
    /proc/stat jiffies (busy, steal, total) and the load averages, tab-separated."""
    runs: list[dict] = []
    if path is None or not path.exists():
        return runs
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    cores = os.cpu_count() or 1
    for line in path.read_text().splitlines():
        fields = line.split("\t")
        if len(fields) < 9 or fields[0] == "binary":
            continue
        binary, status, wall, own, busy, steal, total, load_before, load_after = fields[:9]
        run = {"binary": binary, "status": status, "load_before": load_before, "load_after": load_after}
        try:
            wall_s = float(wall)
            others_s = max(0.0, int(busy) / hz - float(own))
            # /proc/stat counts in clock ticks: over less than a second or so
            # the share is rough, hence the clamp (and no per-binary figure
            # for short runs, see MIN_WALL_FOR_SHARE).
            run.update(wall_s=wall_s, own_cpu_s=float(own), others_cpu_s=others_s,
                       others_cores=min(float(cores), others_s / wall_s) if wall_s > 0 else 0.0,
                       steal_share=int(steal) / int(total) if int(total) > 0 else 0.0,
                       cores=cores)
        except (ValueError, ZeroDivisionError):
            pass
        runs.append(run)
    return runs


def load_summary(runs: list[dict], cores: int) -> dict:
    timed = [r for r in runs if r.get("wall_s", 0.0) > 0]
    long_enough = [r for r in timed if r["wall_s"] >= MIN_WALL_FOR_SHARE]
    summary: dict = {}
    if runs:
        summary["load_before"] = runs[0]["load_before"]
        summary["load_after"] = runs[-1]["load_after"]
    wall = sum(r["wall_s"] for r in timed)
    if wall >= MIN_WALL_FOR_SHARE:
        summary["others_cores"] = min(float(cores), sum(r["others_cpu_s"] for r in timed) / wall)
        summary["steal_share"] = max(r["steal_share"] for r in timed)
    if long_enough:
        busiest = max(long_enough, key=lambda r: r["others_cores"])
        summary["busiest_binary"] = busiest["binary"]
        summary["busiest_others_cores"] = busiest["others_cores"]
    warnings = []
    try:
        load1 = float(summary.get("load_before", "").split()[0])
    except (ValueError, IndexError):
        load1 = 0.0
    # The CPU other processes used is measured; the load average, which
    # trails by a minute or more, only speaks when that measure is missing.
    if "others_cores" not in summary and load1 > LOADED_SHARE * cores:
        warnings.append(f"1-minute load average {load1:.2f} on {cores} cores when the run began")
    if summary.get("others_cores", 0.0) > LOADED_SHARE * cores:
        warnings.append(f"other processes used {summary['others_cores']:.2f} of {cores} cores on average during the run")
    elif summary.get("busiest_others_cores", 0.0) > LOADED_SHARE * cores:
        warnings.append(f"other processes used {summary['busiest_others_cores']:.2f} of {cores} cores "
                        f"while {summary['busiest_binary']} ran")
    if summary.get("steal_share", 0.0) > STEAL_SHARE:
        warnings.append(f"the hypervisor stole {100 * summary['steal_share']:.1f} % of CPU time")
    summary["warnings"] = warnings
    return summary


# --------------------------------------------------------------- output


def fmt_ns(ns: float | None) -> str:
    if ns is None:
        return "—"
    if ns >= 1000:
        return f"{ns:,.0f}"
    if ns >= 100:
        return f"{ns:.0f}"
    if ns >= 10:
        return f"{ns:.1f}"
    return f"{ns:.2f}"


def fmt_allocs(allocs: float | None) -> str:
    if allocs is None:
        return "—"
    if allocs == 0:
        return "0"
    # With several threads, Google Benchmark allocates a little inside each
    # thread's measured region as threads start and stop: a few allocations
    # over millions of iterations, not per-operation ones.
    if allocs < 0.001:
        return "<0.001"
    return f"{allocs:.3g}"


def fmt_ratio(ratio: float) -> str:
    if ratio < 1:
        return f"{ratio:#.2g}×"
    return f"{ratio:.2f}×" if ratio < 9.995 else f"{ratio:.1f}×" if ratio < 99.95 else f"{ratio:,.0f}×"


def short_baseline(variant: str) -> str:
    return variant.removeprefix("baseline_") or variant


def markdown(machine: dict, run: dict, load: dict, binaries: list[dict], results: list[Result]) -> str:
    cores = machine.get("cores") or 1
    lines = ["# resil benchmark results", ""]
    lines += ["| machine | |", "|---|---|"]
    lines.append(f"| CPU | {machine['cpu_model']}, {cores} cores ({machine['kernel']}) |")
    compiler = machine["compiler"]
    if machine.get("build_type"):
        compiler += f", {machine['build_type']}"
    if machine.get("cxx_flags"):
        compiler += f" (`{machine['cxx_flags']}`)"
    lines.append(f"| compiler | {compiler} |")
    lines.append(f"| resil | {machine.get('resil_commit') or 'not a git checkout'} |")
    lines.append(f"| date | {machine['date']} |")
    if load.get("load_before"):
        lines.append(f"| load average | {load['load_before']} before the run; {load['load_after']} after |")
    if "others_cores" in load:
        busiest = (f" (most: {load['busiest_others_cores']:.2f}, during {load['busiest_binary']})"
                   if "busiest_binary" in load else "")
        lines.append(
            f"| other processes | {load['others_cores']:.2f} of {cores} cores on average during the run{busiest}; "
            f"hypervisor steal ≤ {100 * load['steal_share']:.1f} % |")
    min_time = f" × ≥ {run['min_time_s']:g} s" if run.get("min_time_s") else ""
    lines.append(f"| run | {run['repetitions']} repetition(s){min_time} per benchmark"
                 f"{' (--quick)' if run.get('quick') else ''} |")
    lines.append("")
    if load.get("warnings"):
        lines.append("> **Warning: the machine was loaded** — " + "; ".join(load["warnings"]) +
                     ". Absolute figures are inflated and noisy; the ratios, between benchmarks whose "
                     "repetitions ran interleaved in one binary, are the figures to read.")
        lines.append("")
    lines += [
        "ns/op: CPU time per operation (wall time for benchmarks named `…/real_time`), the median over "
        "repetitions; spread: interquartile range / median over them. allocs/op: `operator new` calls per "
        "operation (<0.001: a few allocations of the benchmark library itself as its threads start and stop, spread "
        "over millions of operations). × baseline: ns/op divided by that of each baseline of the same group at the same "
        "thread count (below 1: faster than the baseline).",
        "",
    ]
    by_binary: dict[str, list[Result]] = {}
    for r in results:
        by_binary.setdefault(r.binary, []).append(r)
    listed = {b["binary"] for b in binaries}
    order = [b["binary"] for b in binaries] + [name for name in by_binary if name not in listed]
    status_of = {b["binary"]: b for b in binaries}
    unpaired: list[str] = []
    for name in order:
        info = status_of.get(name, {})
        heading = f"## {name}"
        if info.get("wall_s", 0.0) >= MIN_WALL_FOR_SHARE:
            heading += f" <sub>(other processes: {info['others_cores']:.2f} cores)</sub>"
        lines += [heading, ""]
        rows = by_binary.get(name, [])
        if info.get("status", "ok") != "ok" or not rows:
            message = info.get("message") or info.get("status") or "no results"
            lines += [f"Not measured: {message}.", ""]
            if not rows:
                continue
        multi_thread = any(r.threads != 1 for r in rows)
        header = ["benchmark"] + (["threads"] if multi_thread else []) + ["ns/op", "spread", "allocs/op", "× baseline"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join("---" if i == 0 else "--:" for i in range(len(header) - 1)) + "|---|")
        for r in ordered(rows):
            cells = [f"`{r.name}`"] + ([str(r.threads)] if multi_thread else [])
            if r.error:
                cells += [f"skipped: {r.error}", "", "", ""]
            else:
                spread = f"{100 * r.spread:.0f} %" if r.spread is not None else "—"
                if r.kind == "baseline":
                    against = "baseline"
                else:
                    pairs = ratios(r, results)
                    against = ", ".join(f"{fmt_ratio(x)} {short_baseline(v)}" for v, x in pairs) or "no baseline"
                    if not pairs:
                        unpaired.append(f"{name}: {r.label}")
                cells += [fmt_ns(r.ns_per_op), spread, fmt_allocs(r.allocs_per_op), against]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    if unpaired:
        lines += ["Benchmarks without a baseline (names should follow `<group>/resil_…` and "
                  "`<group>/baseline_…`, see bench/README.md): " + "; ".join(f"`{u}`" for u in unpaired) + ".", ""]
    return "\n".join(lines)


def ordered(rows: list[Result]) -> list[Result]:
    """Groups in order of appearance; within one, by thread count, baselines first."""
    first_seen: dict[str, tuple[int, int, int]] = {}
    for r in rows:
        first_seen.setdefault(r.group, r.order)
    return sorted(rows, key=lambda r: (first_seen[r.group], r.threads, r.kind != "baseline", r.order))


def dump_json(doc: dict) -> str:
    """Indented at the top, one line per benchmark row and summary entry:
    small enough to keep in git, and a diff shows which benchmarks changed."""
    parts = []
    for key, value in doc.items():
        if isinstance(value, list) and key in ("benchmarks", "summary", "binaries"):
            items = ",\n".join("  " + json.dumps(item, separators=(",", ":")) for item in value)
            parts.append(f" {json.dumps(key)}: [\n{items}\n ]")
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value, separators=(',', ':'))}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


README_BEGIN = "<!-- latest results: begin -->"
README_END = "<!-- latest results: end -->"


def update_readme(readme: Path, report: str) -> None:
    """Replaces what lies between the two markers with the report, its title
    dropped and its headings one level down."""
    text = readme.read_text()
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        raise SystemExit(f"bench_report: {readme} lacks the lines {README_BEGIN} and {README_END}")
    body = report.split("\n", 1)[1].strip("\n")
    body = re.sub(r"^(#+) ", lambda m: "#" + m.group(1) + " ", body, flags=re.M)
    readme.write_text(text[:begin + len(README_BEGIN)] + "\n\n" + body + "\n\n" + text[end:])


# ------------------------------------------------------------------ main


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, required=True, help="directory of bench_*.json files")
    parser.add_argument("--out-json", type=Path, required=True)
    parser.add_argument("--out-md", type=Path, required=True)
    parser.add_argument("--build-dir", type=Path, help="the benchmarks' CMake build directory")
    parser.add_argument("--source-dir", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--runs", type=Path, help="bench.sh's per-binary log (runs.tsv)")
    parser.add_argument("--repetitions", type=int, help="as run (default: read from the results)")
    parser.add_argument("--min-time", type=float, help="seconds per repetition, as run")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--readme", type=Path,
                        help=f"also put the tables into this file, between {README_BEGIN} and {README_END}")
    opts = parser.parse_args(argv)

    machine = machine_info(opts.build_dir, opts.source_dir)
    runs = read_runs(opts.runs)
    binaries: list[dict] = [dict(r) for r in runs]
    known = {b["binary"] for b in binaries}
    rows: list[dict] = []
    contexts: dict[str, dict] = {}
    for path in sorted(opts.results.glob("bench_*.json")):
        if path.stat().st_size == 0:  # e.g. a --benchmark_filter that matched nothing
            continue
        try:
            doc = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            print(f"bench_report: skipping {path}: {error}", file=sys.stderr)
            continue
        binary = path.stem
        contexts[binary] = doc.get("context", {})
        # Repetitions only: aggregates (mean, median, ...) are recomputed
        # from them, and the U test in bench_compare.py needs them.
        for row in doc.get("benchmarks", []):
            if row.get("run_type", "iteration") == "iteration":
                rows.append({"binary": binary, **row})
        if binary not in known:
            binaries.append({"binary": binary, "status": "ok"})
    for b in binaries:
        if b.get("status", "ok") == "ok" and b["binary"] not in contexts:
            b["status"] = "no results"
            b.setdefault("message", "the binary wrote no results (it may have skipped itself; see its log)")
        elif b.get("status", "ok") not in ("ok", "no results"):
            b.setdefault("message", b["status"])
    results = collect(rows, lambda row: row["binary"])
    started = run_started(contexts)
    if started:
        machine["date"] = started
    cores = machine.get("cores") or 1
    load = load_summary(runs, cores)
    repetitions = opts.repetitions or max((int(r.get("repetitions", 1)) for r in rows), default=1)
    run = {"repetitions": repetitions, "min_time_s": opts.min_time, "quick": opts.quick,
           "time": "cpu_time (real_time for benchmarks named .../real_time or .../manual_time)"}
    summary = []
    for r in results:
        summary.append({
            "binary": r.binary, "name": r.name, "group": r.group, "variant": r.variant, "kind": r.kind,
            "threads": r.threads, "ns_per_op": r.ns_per_op, "allocs_per_op": r.allocs_per_op,
            "spread": r.spread, "samples": len(r.times_ns), "error": r.error,
            "ratio_to_baseline": dict(ratios(r, results)),
        })
    merged = {
        "format": FORMAT,
        "machine": machine,
        "run": run,
        "load": load,
        "binaries": [{**b, "context": contexts.get(b["binary"])} for b in binaries],
        # Google Benchmark's own shape, each row naming its binary, so tools
        # that read a "benchmarks" array can read this file too.
        "context": next(iter(contexts.values()), {}),
        "benchmarks": rows,
        "summary": summary,
    }
    opts.out_json.parent.mkdir(parents=True, exist_ok=True)
    opts.out_json.write_text(dump_json(merged))
    report = markdown(machine, run, load, binaries, results) + "\n"
    opts.out_md.write_text(report)
    if opts.readme:
        update_readme(opts.readme, report)
    print(f"bench_report: {len(results)} benchmarks from {len(contexts)} binaries -> {opts.out_json}, {opts.out_md}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
