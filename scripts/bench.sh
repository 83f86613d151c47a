#!/usr/bin/env bash
# resil's benchmark suite: builds every bench/<name>.cpp (Release, g++, into
# build/bench), runs each binary and writes a report of the results.
#
# Usage: scripts/bench.sh [--quick] [--repetitions N] [--min-time SECONDS]
#                         [--only NAME[,NAME...]] [--filter REGEX]
#                         [--out DIR] [--no-build] [--update-readme]
#
#   (no option)        5 repetitions of at least 0.1 s per benchmark, the
#                      median reported: a few minutes for the whole suite
#   --quick            1 repetition of at least 0.01 s: a short pass to see
#                      that everything runs (figures are rough)
#   --repetitions N    repetitions per benchmark (noisy machines need more)
#   --min-time S       minimum seconds per repetition
#   --only NAMES       only these binaries, e.g. --only circuit_breaker,token_bucket
#   --filter REGEX     only the benchmarks whose name matches (--benchmark_filter)
#   --out DIR          where the report goes (default: bench/results)
#   --no-build         run what is already built in build/bench
#   --update-readme    also put the tables into bench/README.md
#
# Writes DIR/latest.json (every binary's Google Benchmark JSON merged, plus the
# machine and a summary with the ratios) and DIR/latest.md (a Markdown table
# per binary: ns/op, allocs/op, ratio to the baseline, and the machine it ran
# on, with a warning when other processes were busy). Each binary's own JSON
# and console log stay in build/bench/results/. Compare two runs with
# scripts/bench_compare.py OLD.json NEW.json.
#
# On a fresh Debian 12 machine it installs the missing packages first (as
# root; otherwise it names them and stops). Exits non-zero when a benchmark
# failed to build or run; the report is written anyway.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Google Benchmark and the baselines' libraries (libcurl, libuuid, Boost),
# nginx for the libcurl adapter's benchmark, python3 for the report.
RESIL_BENCH_PACKAGES=(
    cmake g++ make
    libbenchmark-dev libcurl4-openssl-dev uuid-dev libboost-dev
    nginx python3
)

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

repetitions=5
min_time=0.1
quick=0
only=""
filter=""
out_dir="$RESIL_ROOT/bench/results"
build=1
update_readme=0
while (($#)); do
    case "$1" in
        --quick)
            quick=1
            repetitions=1
            min_time=0.01
            ;;
        --repetitions)
            repetitions="${2:?--repetitions needs a number}"
            shift
            ;;
        --min-time)
            min_time="${2:?--min-time needs seconds}"
            shift
            ;;
        --only)
            only="${2:?--only needs binary names}"
            shift
            ;;
        --filter)
            filter="${2:?--filter needs a regular expression}"
            shift
            ;;
        --out)
            out_dir="${2:?--out needs a directory}"
            shift
            ;;
        --no-build) build=0 ;;
        --update-readme) update_readme=1 ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            echo "scripts/bench.sh: unknown option $1 (see --help)" >&2
            exit 2
            ;;
    esac
    shift
done
if ! [[ "$repetitions" =~ ^[1-9][0-9]*$ ]]; then
    echo "scripts/bench.sh: --repetitions must be a positive whole number, not '$repetitions'" >&2
    exit 2
fi
if ! [[ "$min_time" =~ ^[0-9]*\.?[0-9]+$ ]]; then
    echo "scripts/bench.sh: --min-time must be a number of seconds, not '$min_time'" >&2
    exit 2
fi

resil_ensure_packages "${RESIL_BENCH_PACKAGES[@]}"

BUILD="$RESIL_ROOT/build/bench"
RAW="$BUILD/results"
PYTHON=python3
if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; fi

# --- build -------------------------------------------------------------------

build_failed=0
if ((build)); then
    resil_banner "build: g++ Release, benchmarks only, in $BUILD"
    cmake -S "$RESIL_ROOT" -B "$BUILD" -DCMAKE_CXX_COMPILER=g++ -DCMAKE_BUILD_TYPE=Release \
        -DRESIL_BUILD_TESTS=OFF -DRESIL_BUILD_EXAMPLES=OFF -DRESIL_BUILD_BENCH=ON
    # Keeps going past a benchmark that fails to build; it is reported below.
    resil_build "$BUILD" || build_failed=1
fi

# --- run ---------------------------------------------------------------------

names=()
for src in "$RESIL_ROOT"/bench/*.cpp; do
    [[ -e "$src" ]] || continue
    name="$(basename "$src" .cpp)"
    if [[ -n "$only" && ",$only," != *",$name,"* && ",$only," != *",bench_$name,"* ]]; then
        continue
    fi
    names+=("$name")
done
if ((${#names[@]} == 0)); then
    echo "scripts/bench.sh: no benchmark matches --only $only" >&2
    exit 2
fi

rm -rf "$RAW"
mkdir -p "$RAW"
runs="$RAW/runs.tsv"
printf 'binary\tstatus\twall_s\town_cpu_s\tbusy_jiffies\tsteal_jiffies\ttotal_jiffies\tload_before\tload_after\n' >"$runs"

# Sets children_cpu_s to the CPU seconds (user + system) used so far by this
# shell's finished children. Call it directly, never in $(...): `times` must
# run in this shell to see them.
children_cpu() {
    times >"$RAW/times.txt"
    children_cpu_s=$(awk 'NR == 2 {
        total = 0
        for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); total += t[1] * 60 + t[2] }
        printf "%.3f\n", total
    }' "$RAW/times.txt")
}

# busy, steal and total jiffies of all CPUs since boot, from /proc/stat.
cpu_jiffies() {
    awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat
}

load_average() {
    cut -d' ' -f1-3 /proc/loadavg
}

bench_args=(
    "--benchmark_repetitions=$repetitions"
    "--benchmark_min_time=$min_time"
    --benchmark_display_aggregates_only=true
    # Repetitions of a binary's benchmarks run shuffled among each other, so
    # load that comes and goes during a run hits baselines and resil alike.
    --benchmark_enable_random_interleaving=true
    --benchmark_out_format=json
)
if [[ -n "$filter" ]]; then bench_args+=("--benchmark_filter=$filter"); fi

run_failed=0
resil_banner "run: ${#names[@]} binaries, $repetitions repetition(s) x >= ${min_time} s, load average $(load_average)"
for name in "${names[@]}"; do
    binary="bench_$name"
    exe="$BUILD/bench/$binary"
    log="$RAW/$binary.log"
    if [[ ! -x "$exe" ]]; then
        echo "FAILED  $binary: not built"
        printf '%s\tnot built\t\t\t\t\t\t%s\t%s\n' "$binary" "$(load_average)" "$(load_average)" >>"$runs"
        run_failed=1
        continue
    fi
    load_before=$(load_average)
    read -r busy0 steal0 total0 < <(cpu_jiffies)
    children_cpu
    cpu0=$children_cpu_s
    started=$(date +%s%N)
    rc=0
    # The JSON goes to a file, not stdout: a binary may print a summary of
    # its own after the benchmarks, which would spoil JSON on stdout.
    timeout 1800 "$exe" "${bench_args[@]}" "--benchmark_out=$RAW/$binary.json" >"$log" 2>&1 || rc=$?
    wall_ns=$(($(date +%s%N) - started))
    children_cpu
    cpu1=$children_cpu_s
    read -r busy1 steal1 total1 < <(cpu_jiffies)
    status=ok
    if ((rc != 0)); then
        status="exit $rc"
        ((rc == 124)) && status="timed out"
        echo "FAILED  $binary ($status); last lines of $log:"
        tail -n 20 "$log"
        run_failed=1
        rm -f "$RAW/$binary.json"
    else
        printf 'ok      %-28s %6.1f s\n' "$binary" "$(awk -v n="$wall_ns" 'BEGIN { print n / 1e9 }')"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$binary" "$status" \
        "$(awk -v n="$wall_ns" 'BEGIN { printf "%.3f", n / 1e9 }')" \
        "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.3f", b - a }')" \
        "$((busy1 - busy0))" "$((steal1 - steal0))" "$((total1 - total0))" \
        "$load_before" "$(load_average)" >>"$runs"
done

# --- report ------------------------------------------------------------------

resil_banner "report"
mkdir -p "$out_dir"
report_args=(--results "$RAW" --runs "$runs" --build-dir "$BUILD" --source-dir "$RESIL_ROOT"
    --repetitions "$repetitions" --min-time "$min_time"
    --out-json "$out_dir/latest.json" --out-md "$out_dir/latest.md")
((quick)) && report_args+=(--quick)
((update_readme)) && report_args+=(--readme "$RESIL_ROOT/bench/README.md")
"$PYTHON" "$RESIL_ROOT/scripts/bench_report.py" "${report_args[@]}"
grep -m1 -A0 '^> \*\*Warning' "$out_dir/latest.md" || true

if ((build_failed || run_failed)); then
    echo "scripts/bench.sh: some benchmarks failed to build or run (see above); the report lists them" >&2
    exit 1
fi
