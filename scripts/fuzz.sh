#!/usr/bin/env bash
# Builds every libFuzzer harness in tests/fuzz/ with clang++ and runs each,
# --jobs of them at a time (default 1). See docs/fuzzing.md.
#
#   scripts/fuzz.sh                     # every harness, 60 s each
#   scripts/fuzz.sh --ci                # every harness, 15 s each, as many at once as cores (CI)
#   scripts/fuzz.sh --seconds 300 json_config retry_after
#   scripts/fuzz.sh --jobs 2            # builds and runs two harnesses at a time
#   scripts/fuzz.sh --build-only
#
# A harness may come with a libFuzzer dictionary, tests/fuzz/<name>.dict.
# Each harness starts from a scratch corpus, build/fuzz/corpus/<name>/, seeded
# from tests/fuzz/corpus/<name>/ and tests/fuzz/regressions/<name>/ (nothing
# is ever written under tests/). A crash, a failed property, a leak or a
# timeout is saved under build/fuzz/findings/<name>/ and makes the script exit
# non-zero, after every harness has run. To keep a finding: fix the parser,
# copy the input to tests/fuzz/regressions/<name>/ (ctest replays it), and add
# a named unit test where it makes sense.
#
# Environment: CXX_FUZZ (default clang++-14, else clang++), FUZZ_BUILD_DIR
# (default build/fuzz).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds=60
jobs=1
build_only=0
only=()

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

while (($#)); do
    case "$1" in
        --seconds) seconds="${2:?--seconds needs a number}"; shift 2 ;;
        --seconds=*) seconds="${1#--seconds=}"; shift ;;
        --ci) seconds=15; jobs="$(nproc 2>/dev/null || echo 1)"; shift ;;
        --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
        --jobs=*) jobs="${1#--jobs=}"; shift ;;
        --build-only) build_only=1; shift ;;
        -h | --help) usage; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
        *) only+=("$1"); shift ;;
    esac
done
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
    echo "fuzz.sh: --seconds wants a positive whole number, got '$seconds'" >&2
    exit 2
fi
if ! [[ "$jobs" =~ ^[0-9]+$ ]] || ((jobs < 1 || jobs > 64)); then
    echo "fuzz.sh: --jobs wants a whole number from 1 to 64, got '$jobs'" >&2
    exit 2
fi

cxx="${CXX_FUZZ:-}"
if [[ -z "$cxx" ]]; then
    if command -v clang++-14 >/dev/null 2>&1; then cxx=clang++-14; else cxx=clang++; fi
fi
if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "fuzz.sh: $cxx not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
    exit 2
fi

out="${FUZZ_BUILD_DIR:-$root/build/fuzz}"
mkdir -p "$out"

# The longest input worth trying, per harness: a few header values, or a
# configuration file.
max_len_of() {
    case "$1" in
        retry_after) echo 128 ;;        # 8 bytes of clock + a header value
        rate_limit) echo 1024 ;;        # 8 bytes of clock + a few header lines of several families
        timeout_header) echo 32 ;;      # at most 9 meaningful bytes
        idempotency_key) echo 64 ;;     # 36 meaningful bytes
        json_duration) echo 64 ;;
        json_config) echo 4096 ;;
        curl_fields) echo 2048 ;;
        curl_response) echo 4096 ;;   # a head, a few body chunks and trailers
        sse) echo 4096 ;;             # an event stream: a few dozen lines, fed in three splits
        discovery_dns_reply) echo 1024 ;;  # a reply of a few dozen records, compressed names
        *) echo 1024 ;;
    esac
}

harnesses=()
if ((${#only[@]})); then
    harnesses=("${only[@]}")
else
    for src in "$root"/tests/fuzz/*.cpp; do
        name="$(basename "$src" .cpp)"
        [[ "$name" == replay_main ]] && continue
        harnesses+=("$name")
    done
fi

build() {
    local name="$1" libs=()
    [[ "$name" == curl_* ]] && libs=(-lcurl)
    [[ "$name" == discovery_* ]] && libs=(-lresolv)
    echo "building $name"
    "$cxx" -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -Wall -Wextra -Wpedantic -Wconversion -Wshadow -Werror \
        -I "$root/include" "$root/tests/fuzz/$name.cpp" -o "$out/$name" "${libs[@]}"
}

# run_all FUNCTION: FUNCTION NAME for every harness, $jobs at a time, each
# one's output kept in $out/NAME.FUNCTION.out and printed whole when it ends
# (in the harnesses' order), so parallel runs do not interleave their lines.
# Fails when any of them failed, after all have run.
run_all() {
    local fn="$1" name i=0 failures=0
    for name in "${harnesses[@]}"; do
        "$fn" "$name" >"$out/$name.$fn.out" 2>&1 &
        i=$((i + 1))
        if ((i >= jobs)); then
            wait -n || failures=$((failures + 1))
            i=$((i - 1))
        fi
    done
    while ((i > 0)); do
        wait -n || failures=$((failures + 1))
        i=$((i - 1))
    done
    for name in "${harnesses[@]}"; do
        cat "$out/$name.$fn.out"
    done
    ((failures == 0))
}

for name in "${harnesses[@]}"; do
    if [[ ! -f "$root/tests/fuzz/$name.cpp" ]]; then
        echo "fuzz.sh: no harness tests/fuzz/$name.cpp" >&2
        exit 2
    fi
done
run_all build || exit 1
((build_only)) && exit 0

# fuzz NAME: one harness for $seconds s; its summary line goes to
# $out/NAME.summary. Fails on a finding.
fuzz() {
    local name="$1" corpus findings log max_len dict rc done_line runs rate cov crashes line seeds
    rm -f "$out/$name.summary"
    corpus="$out/corpus/$name"
    findings="$out/findings/$name"
    mkdir -p "$corpus" "$findings"
    for seeds in "$root/tests/fuzz/corpus/$name" "$root/tests/fuzz/regressions/$name"; do
        [[ -d "$seeds" ]] && cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
    done
    log="$out/$name.log"
    max_len="$(max_len_of "$name")"
    dict=()
    [[ -f "$root/tests/fuzz/$name.dict" ]] && dict=(-dict="$root/tests/fuzz/$name.dict")
    echo
    echo "==== $name: ${seconds}s, -max_len=$max_len ===="
    rc=0
    # Each harness one process in the foreground: no -jobs or -workers, which
    # would fork a child logging to ./fuzz-N.log and hide its status.
    UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
        "$out/$name" "$corpus" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$findings/" "${dict[@]}" >"$log" 2>&1 || rc=$?
    # "#1234567 DONE cov: 812 ft: 3341 corp: 410/9211b lim: 128 exec/s: 20577 rss: 431Mb"
    done_line="$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)"
    runs="$(grep -E '^stat::number_of_executed_units:' "$log" | awk '{print $2}' | tail -n 1 || true)"
    [[ -z "$runs" && -n "$done_line" ]] && runs="$(sed -E 's/^#([0-9]+).*/\1/' <<<"$done_line")"
    rate="$(sed -nE 's/.*exec\/s: ([0-9]+).*/\1/p' <<<"$done_line")"
    cov="$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$done_line")"
    crashes="$(find "$findings" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)"
    if ((rc != 0)) && ((crashes == 0)); then crashes=1; fi  # died without an artifact
    line="$(printf '%-16s executions %-12s exec/s %-8s coverage %-6s findings %s' \
        "$name" "${runs:-?}" "${rate:-?}" "${cov:-?}" "$crashes")"
    echo "$line"
    echo "$line" >"$out/$name.summary"
    if ((rc != 0 || crashes > 0)); then
        echo "  exit status $rc; log: $log; inputs: $findings/"
        grep -E 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|runtime error|property failed|threw something' "$log" | head -n 5 | sed 's/^/  /' || true
    fi
    ((rc == 0 && crashes == 0))
}

failed=0
run_all fuzz || failed=1
summary=()
for name in "${harnesses[@]}"; do
    summary+=("$(cat "$out/$name.summary" 2>/dev/null || echo "$name: no summary")")
done

echo
echo "==== summary (${seconds}s each) ===="
printf '%s\n' "${summary[@]}"
if ((failed)); then
    echo "fuzz.sh: findings under $out/findings/" >&2
    exit 1
fi
