#!/usr/bin/env bash
# Summarises a RESIL_COMPILE_TIMES file written by scripts/compile_timer.sh:
# the compiler's CPU seconds in all, by kind of target (tests, examples,
# benchmarks, compile-only checks, the rest) and the slowest files.
#
# Usage: scripts/compile_times.sh FILE [TOP]   (TOP: how many files, default 12)
set -euo pipefail
file="${1:?usage: scripts/compile_times.sh FILE [TOP]}"
top="${2:-12}"
[[ -s "$file" ]] || {
    echo "compile times: $file is empty or missing"
    exit 0
}
awk '
    {
        kind = "other"
        if ($2 ~ /\/alone\/|resil_entry_points|compile_fail/) kind = "compile-only checks"
        else if ($2 ~ /\/tests\/fuzz\//) kind = "fuzz replays"
        else if ($2 ~ /test_separate_|resil_separate_source/) kind = "separate-compilation tests"
        else if ($2 ~ /\/tests\//) kind = "tests"
        else if ($2 ~ /\/examples\//) kind = "examples"
        else if ($2 ~ /\/bench\//) kind = "benchmarks"
        sum[kind] += $1; count[kind]++; total += $1; n++
    }
    END {
        printf "compiler CPU: %.0f s over %d files\n", total, n
        for (k in sum) printf "  %-28s %6.0f s  %4d files\n", k, sum[k], count[k]
    }' "$file"
echo "slowest files:"
sort -rn "$file" | head -n "$top" | awk '{ n = split($2, p, "/"); printf "  %7.1f s  %s/%s\n", $1, p[n - 1], p[n] }'
