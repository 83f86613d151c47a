#!/usr/bin/env bash
# What resil costs to compile: times small translation units (compile only,
# -std=c++20 -O2, objects to a temporary directory) side by side with a
# hand-written libcurl retry loop, and prints a Markdown table.
#
# Usage: scripts/compile_time.sh [--runs N] [--compiler CXX[,CXX...]]
#                                [--headers] [--out FILE]
#
#   (no option)        3 runs of each translation unit with g++, the median
#                      reported: about a minute on an idle 2-core machine
#   --runs N           compiles per translation unit (the median is reported)
#   --compiler LIST    compilers to time, e.g. --compiler g++,clang++ (one
#                      table each; default g++)
#   --headers          also one row per public header, included alone
#                      (include/resil/*.hpp and its public subdirectories;
#                      a few more minutes)
#   --out FILE         also write the tables, under a line naming the machine,
#                      to FILE
#
# The translation units live in bench/compile_time/:
#   baseline_curl_retry_loop.cpp  what a user writes without resil: libcurl, a
#                                 timeout, three attempts, jittered backoff
#   readme_example.cpp            the README's ten-line example
#   json_service.cpp              a service whose pipeline comes from a JSON file
#                                 (with RESIL_SEPARATE_COMPILATION it includes
#                                 load_config.hpp alone: no nlohmann parse)
#   readme_example_http.cpp       the README's example through resil::http::client
#                                 (resil/http.hpp: declarations only when
#                                 separately compiled)
#   json_service_http.cpp         json_service.cpp through resil::http::load_client
#                                 (resil/http/config_file.hpp)
#   separate_source.cpp           such a program's one source file (curl, json,
#                                 http)
# Runs are interleaved (every unit once, then every unit again, ...) so that
# other processes slow every row alike. The table gives CPU seconds (user +
# sys of the compiler), which other processes on the machine disturb far
# less than wall time, and each row's ratio to the baseline's.
#
# On a fresh Debian 12 machine it installs the missing packages first (as
# root; otherwise it names them and stops). Exits non-zero when a unit fails
# to compile.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The compiler, libcurl for the adapter and the baseline, nlohmann_json for
# the JSON service.
RESIL_COMPILE_TIME_PACKAGES=(g++ libcurl4-openssl-dev nlohmann-json3-dev)

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

runs=3
compilers="g++"
headers=0
out_file=""
while (($#)); do
    case "$1" in
        --runs)
            runs="${2:?--runs needs a number}"
            shift 2
            ;;
        --compiler)
            compilers="${2:?--compiler needs a name}"
            shift 2
            ;;
        --headers)
            headers=1
            shift
            ;;
        --out)
            out_file="${2:?--out needs a file name}"
            shift 2
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            echo "error: unknown option '$1'" >&2
            usage >&2
            exit 2
            ;;
    esac
done
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
    echo "error: --runs must be a positive whole number, got '$runs'" >&2
    exit 2
fi
IFS=',' read -r -a compiler_list <<<"$compilers"

resil_ensure_packages "${RESIL_COMPILE_TIME_PACKAGES[@]}"
for cxx in "${compiler_list[@]}"; do
    if ! command -v "$cxx" >/dev/null 2>&1; then
        echo "error: no compiler '$cxx' on PATH (clang++ is Debian's 'clang' package)" >&2
        exit 1
    fi
done

units_dir="$RESIL_ROOT/bench/compile_time"
work="$(mktemp -d /tmp/resil-compile-time.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# The rows, in table order: a label, a source file and extra compiler flags
# each. The separate-compilation rows define RESIL_SEPARATE_COMPILATION, as
# every file of such a program does (docs/compile_time.md).
separate="-DRESIL_SEPARATE_COMPILATION"
labels=(
    "baseline: hand-written libcurl retry loop"
    "README example (resil.hpp + curl.hpp)"
    "JSON-configured service (json.hpp + curl.hpp)"
    "README example, separate compilation"
    "JSON-configured service, separate compilation (load_config.hpp + curl.hpp)"
    "README example through resil::http::client (http.hpp), header-only"
    "README example through resil::http::client (http.hpp), separate compilation"
    "JSON-configured service through resil::http::load_client (http/config_file.hpp), separate compilation"
    "(separate compilation: the program's one source file, compiled once)"
)
sources=(
    "$units_dir/baseline_curl_retry_loop.cpp"
    "$units_dir/readme_example.cpp"
    "$units_dir/json_service.cpp"
    "$units_dir/readme_example.cpp"
    "$units_dir/json_service.cpp"
    "$units_dir/readme_example_http.cpp"
    "$units_dir/readme_example_http.cpp"
    "$units_dir/json_service_http.cpp"
    "$units_dir/separate_source.cpp"
)
flags=("" "" "" "$separate" "$separate" "" "$separate" "$separate" "$separate")

# Succeeds when the compiler finds <header> (the integrations' dependencies).
have_header() {
    printf '#include <%s>\n' "$2" | "$1" -std=c++20 -x c++ -E - >/dev/null 2>&1
}

if ((headers)); then
    mkdir -p "$work/headers"
    while IFS= read -r header; do
        needs=""
        case "$header" in
            resil/fmt.hpp) needs="fmt/format.h" ;;
            resil/prometheus.hpp) needs="prometheus/collectable.h" ;;
        esac
        if [[ -n "$needs" ]] && ! have_header "${compiler_list[0]}" "$needs"; then
            echo "note: <$header> left out: <$needs> is not installed" >&2
            continue
        fi
        tu="$work/headers/$(echo "$header" | tr '/.' '__').cpp"
        printf '#include <%s>\n' "$header" >"$tu"
        labels+=("\`<$header>\` alone")
        sources+=("$tu")
        flags+=("")
    done < <(cd "$RESIL_ROOT/include" && find resil -name '*.hpp' -not -path '*/detail/*' -not -name separate_compilation.hpp | sort)
fi

# One compile, timed: prints "wall cpu" in seconds; fails as the compiler does.
time_compile() {
    local cxx="$1" src="$2" obj="$3" log="$4" extra="$5" t
    local TIMEFORMAT='%R %U %S'
    # shellcheck disable=SC2086  # $extra is zero or more flags
    if ! t="$({ time "$cxx" -std=c++20 -O2 $extra -I"$RESIL_ROOT/include" -c "$src" -o "$obj" >"$log" 2>&1; } 2>&1)"; then
        return 1
    fi
    awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' <<<"$t"
}

# The median of the numbers on stdin, one a line.
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

load_before="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
tables=""
status=0
for cxx in "${compiler_list[@]}"; do
    version="$("$cxx" --version | head -n 1)"
    echo "timing ${#sources[@]} translation units with $version, $runs run(s) each" >&2
    rm -f "$work"/*.times
    for ((run = 1; run <= runs; run++)); do
        for i in "${!sources[@]}"; do
            [[ -e "$work/$i.failed" ]] && continue
            if ! time_compile "$cxx" "${sources[$i]}" "$work/$i.o" "$work/$i.log" "${flags[$i]}" >>"$work/$i.times"; then
                echo "error: ${sources[$i]} does not compile with $cxx:" >&2
                head -n 20 "$work/$i.log" >&2
                touch "$work/$i.failed"
                status=1
            fi
        done
        echo "  run $run of $runs done" >&2
    done
    rm -f "$work"/*.failed

    base_cpu="$(cut -d' ' -f2 "$work/0.times" | median)"
    table="#### $version, \`-std=c++20 -O2 -c\`, median of $runs"$'\n\n'
    table+="| translation unit | CPU s | wall s | × baseline (CPU) |"$'\n'
    table+="|---|--:|--:|--:|"$'\n'
    for i in "${!sources[@]}"; do
        if [[ ! -s "$work/$i.times" ]]; then
            table+="| ${labels[$i]} | failed | | |"$'\n'
            continue
        fi
        cpu="$(cut -d' ' -f2 "$work/$i.times" | median)"
        wall="$(cut -d' ' -f1 "$work/$i.times" | median)"
        ratio="$(awk -v a="$cpu" -v b="$base_cpu" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }')"
        table+="| ${labels[$i]} | $(printf '%.2f' "$cpu") | $(printf '%.2f' "$wall") | $ratio |"$'\n'
    done
    tables+="$table"$'\n'
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"

cpu_name="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
commit="$(git -C "$RESIL_ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git -C "$RESIL_ROOT" status --porcelain -- include bench/compile_time 2>/dev/null)" ]]; then
    commit+=" (with uncommitted changes)"
fi
header="Machine: ${cpu_name:-unknown CPU}, $(nproc) cores; resil $commit; $(date -u '+%Y-%m-%d %H:%M UTC'); load average $load_before before, $load_after after."
report="$header"$'\n\n'"$tables"
printf '\n%s' "$report"
if [[ -n "$out_file" ]]; then
    printf '%s' "$report" >"$out_file"
    echo "wrote $out_file" >&2
fi
exit "$status"
