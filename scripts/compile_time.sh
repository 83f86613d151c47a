#!/usr/bin/env bash
# What resil costs to compile: times small translation units (compile only,
# -std=c++20 -O2, objects to a temporary directory) side by side with a
# hand-written libcurl retry loop, and prints a Markdown table.
#
# Usage: scripts/compile_time.sh [--runs N] [--compiler CXX[,CXX...]]
#                                [--headers] [--service | --service-only]
#                                [--out FILE]
#
#   (no option)        3 runs of each translation unit with g++, the median
#                      reported: about a minute on an idle 2-core machine
#   --service          also the complete example service (-O3, a second
#                      table): about 3 minutes a run on an idle 2-core machine
#   --service-only     the service's table alone
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
#   service_floor.cpp             (--service) the dependency floor of
#                                 examples/service_checkout.cpp: the Asio,
#                                 nlohmann, libcurl, hiredis and prometheus-cpp
#                                 headers it uses, with trivial work each
# With --service, examples/service_checkout.cpp (resil::http::dependency
# blocking and on Asio, the JSON service file, prometheus-cpp's exposer, a
# quota shared through Redis) is compiled with -O3 header-only and with
# RESIL_SEPARATE_COMPILATION, beside its floor, and so is the program's one
# source file in separate mode (resil::compiled's, src/resil_compiled.cpp,
# with the components the service uses). That table gives
# CPU seconds and the compiler's peak memory (max RSS), each as a multiple of
# the floor's, and the two programs linked: the size of the executable
# header-only and separate (floor, header-only object; separate, the service's
# object and the one source's).
# Runs are interleaved (every unit once, then every unit again, ...) so that
# other processes slow every row alike. The table gives CPU seconds (user +
# sys of the compiler), which other processes on the machine disturb far
# less than wall time, and each row's ratio to the baseline's. The small
# units are compiled with -O2, the service with -O3 (as the goals for it are
# stated).
#
# On a fresh Debian 12 machine it installs the missing packages first (as
# root; otherwise it names them and stops). Exits non-zero when a unit fails
# to compile.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The compiler, libcurl for the adapter and the baseline, nlohmann_json for
# the JSON service, GNU time for the compiler's peak memory; for the example
# service also Asio, hiredis and prometheus-cpp.
RESIL_COMPILE_TIME_PACKAGES=(g++ libcurl4-openssl-dev nlohmann-json3-dev time)
RESIL_COMPILE_TIME_SERVICE_PACKAGES=(libasio-dev libhiredis-dev prometheus-cpp-dev)

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

runs=3
compilers="g++"
headers=0
small=1
service=0
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
        --service)
            service=1
            shift
            ;;
        --service-only)
            service=1
            small=0
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

if ((service)); then
    resil_ensure_packages "${RESIL_COMPILE_TIME_PACKAGES[@]}" "${RESIL_COMPILE_TIME_SERVICE_PACKAGES[@]}"
else
    resil_ensure_packages "${RESIL_COMPILE_TIME_PACKAGES[@]}"
fi
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

# One compile, timed: prints "wall cpu maxrss_kb" (seconds, seconds, KB);
# fails as the compiler does. $5 is the optimization level, $6 zero or more
# further flags.
time_compile() {
    local cxx="$1" src="$2" obj="$3" log="$4" opt="$5" extra="$6"
    # shellcheck disable=SC2086  # $extra is zero or more flags
    if ! /usr/bin/time -f '%e %U %S %M' -o "$obj.time" \
        "$cxx" -std=c++20 "$opt" $extra -I"$RESIL_ROOT/include" -c "$src" -o "$obj" >"$log" 2>&1; then
        return 1
    fi
    awk 'END { printf "%.3f %.3f %d\n", $1, $2 + $3, $4 }' "$obj.time"
}

# The median of the numbers on stdin, one a line.
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# a / b to two decimals ("?" when b is 0).
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }'
}

# Compiles the units of one table $runs times each, interleaved, with
# compiler $1 and optimization $2, in directory $3; the rows are the arrays
# named by $4 (sources) and $5 (flags). Leaves "$3/<row>.times" (one
# "wall cpu maxrss" line a run) and "$3/<row>.o"; sets status=1 when a unit
# fails to compile.
compile_rows() {
    local cxx="$1" opt="$2" dir="$3" run i
    local -n row_sources="$4" row_flags="$5"
    mkdir -p "$dir"
    rm -f "$dir"/*.times "$dir"/*.failed
    for ((run = 1; run <= runs; run++)); do
        for i in "${!row_sources[@]}"; do
            [[ -e "$dir/$i.failed" ]] && continue
            if ! time_compile "$cxx" "${row_sources[$i]}" "$dir/$i.o" "$dir/$i.log" "$opt" "${row_flags[$i]}" >>"$dir/$i.times"; then
                echo "error: ${row_sources[$i]} does not compile with $cxx:" >&2
                head -n 20 "$dir/$i.log" >&2
                touch "$dir/$i.failed"
                status=1
            fi
        done
        echo "  run $run of $runs done" >&2
    done
}

# The median of column $2 (1 wall, 2 cpu, 3 maxrss) of times file $1.
column_median() {
    cut -d' ' -f"$2" "$1" | median
}

# The service's rows (--service): its floor first, the ratios are to it.
service_src="$RESIL_ROOT/examples/service_checkout.cpp"
# The program's one source file: resil::compiled's (src/resil_compiled.cpp),
# with every component the service uses.
service_one_source="$RESIL_ROOT/src/resil_compiled.cpp"
service_components="-DRESIL_COMPILED_WITH_CURL=1 -DRESIL_COMPILED_WITH_JSON=1 -DRESIL_COMPILED_WITH_ASIO=1"
service_components+=" -DRESIL_COMPILED_WITH_REDIS=1 -DRESIL_COMPILED_WITH_PROMETHEUS=1"
# Functions and data in sections of their own, so that a link with
# --gc-sections (as release links often are) can drop what the program never
# calls: the one source file defines every out-of-line function of every
# component, used or not.
asio_flags="-DASIO_STANDALONE -DASIO_NO_DEPRECATED -ffunction-sections -fdata-sections"
service_labels=(
    "dependency floor (bench/compile_time/service_floor.cpp)"
    "service, header-only"
    "service, separate compilation (the service's file)"
    "(separate compilation: the program's one source file, compiled once)"
)
service_sources=("$units_dir/service_floor.cpp" "$service_src" "$service_src" "$service_one_source")
# shellcheck disable=SC2034  # read through compile_rows's nameref
service_flags=("$asio_flags" "$asio_flags" "$asio_flags $separate" "$asio_flags $separate $service_components")
service_goals=("" "≤ 2×" "≤ 1.3×" "")
service_libs=(-lprometheus-cpp-pull -lprometheus-cpp-core -lhiredis -lcurl -pthread)

# Links object files $4... with compiler $1 and link flags $3 (a word list,
# may be empty) into executable $2; prints its size in bytes (text + data +
# bss, as size(1) gives them) or "failed".
linked_size() {
    local cxx="$1" exe="$2" link_flags="$3"
    shift 3
    # shellcheck disable=SC2086 # a list of words
    if "$cxx" "$@" $link_flags -o "$exe" "${service_libs[@]}" >"$exe.log" 2>&1; then
        size "$exe" | awk 'NR == 2 { print $4 }'
    else
        echo "error: linking $exe failed:" >&2
        head -n 20 "$exe.log" >&2
        echo failed
    fi
}

load_before="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
tables=""
status=0
for cxx in "${compiler_list[@]}"; do
    version="$("$cxx" --version | head -n 1)"
    if ((small)); then
        echo "timing ${#sources[@]} translation units with $version, $runs run(s) each" >&2
        compile_rows "$cxx" -O2 "$work/small" sources flags
        table="#### $version, \`-std=c++20 -O2 -c\`, median of $runs"$'\n\n'
        table+="| translation unit | CPU s | wall s | × baseline (CPU) |"$'\n'
        table+="|---|--:|--:|--:|"$'\n'
        base_cpu="$(column_median "$work/small/0.times" 2)"
        for i in "${!sources[@]}"; do
            if [[ ! -s "$work/small/$i.times" ]]; then
                table+="| ${labels[$i]} | failed | | |"$'\n'
                continue
            fi
            cpu="$(column_median "$work/small/$i.times" 2)"
            wall="$(column_median "$work/small/$i.times" 1)"
            table+="| ${labels[$i]} | $(printf '%.2f' "$cpu") | $(printf '%.2f' "$wall") | $(ratio "$cpu" "$base_cpu") |"$'\n'
        done
        tables+="$table"$'\n'
    fi
    if ((service)); then
        echo "timing the example service (${#service_sources[@]} translation units, -O3) with $version, $runs run(s) each" >&2
        d="$work/service"
        compile_rows "$cxx" -O3 "$d" service_sources service_flags
        table="#### $version, \`-std=c++20 -O3 -c\`, examples/service_checkout.cpp against its dependency floor, median of $runs"$'\n\n'
        table+="| translation unit | CPU s | wall s | peak MB | × floor (CPU) | goal | × floor (memory) | goal |"$'\n'
        table+="|---|--:|--:|--:|--:|--:|--:|--:|"$'\n'
        base_cpu=0 base_rss=0
        if [[ -s "$d/0.times" ]]; then
            base_cpu="$(column_median "$d/0.times" 2)"
            base_rss="$(column_median "$d/0.times" 3)"
        fi
        for i in "${!service_sources[@]}"; do
            if [[ ! -s "$d/$i.times" ]]; then
                table+="| ${service_labels[$i]} | failed | | | | | | |"$'\n'
                continue
            fi
            cpu="$(column_median "$d/$i.times" 2)"
            wall="$(column_median "$d/$i.times" 1)"
            rss="$(column_median "$d/$i.times" 3)"
            mem_goal=""
            ((i == 1 || i == 2)) && mem_goal="≤ 1.5×"
            table+="| ${service_labels[$i]} | $(printf '%.2f' "$cpu") | $(printf '%.2f' "$wall") | $(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }') | $(ratio "$cpu" "$base_cpu") | ${service_goals[$i]} | $(ratio "$rss" "$base_rss") | $mem_goal |"$'\n'
        done
        # The example's fake dependencies (examples/support/checkout_fakes.cpp,
        # not timed: they stand for the network) are linked into both.
        if [[ -s "$d/1.times" && -s "$d/2.times" && -s "$d/3.times" ]] &&
            "$cxx" -std=c++20 -O3 -ffunction-sections -fdata-sections -I"$RESIL_ROOT/include" \
                -c "$RESIL_ROOT/examples/support/checkout_fakes.cpp" \
                -o "$d/fakes.o" >"$d/fakes.log" 2>&1; then
            table+=$'\n'"| executable (size: text + data + bss) | bytes | × header-only | goal |"$'\n'
            table+="|---|--:|--:|--:|"$'\n'
            gc_flags=("" "-Wl,--gc-sections")
            for gc in "${gc_flags[@]}"; do
                header_only_size="$(linked_size "$cxx" "$d/header_only" "$gc" "$d/1.o" "$d/fakes.o")"
                separate_size="$(linked_size "$cxx" "$d/separate" "$gc" "$d/2.o" "$d/3.o" "$d/fakes.o")"
                [[ "$header_only_size" == failed || "$separate_size" == failed ]] && status=1
                how="linked as is"
                [[ -n "$gc" ]] && how="linked with --gc-sections"
                table+="| service, header-only, $how | $header_only_size | 1.00 | |"$'\n'
                table+="| service, separate compilation, $how | $separate_size | $(ratio "$separate_size" "$header_only_size") | ≤ 1.00 |"$'\n'
            done
        fi
        tables+="$table"$'\n'
    fi
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
