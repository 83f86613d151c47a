#!/usr/bin/env bash
# A compiler launcher (CMAKE_CXX_COMPILER_LAUNCHER) that runs the compile
# command it is given and, when RESIL_COMPILE_TIMES names a file, appends
# one line to it: the CPU seconds the compiler used (user + system) and the
# object file. scripts/test.sh sets it for its builds and prints where the
# time went (scripts/compile_times.sh).
rc=0
"$@" || rc=$?
if [[ -n "${RESIL_COMPILE_TIMES:-}" && -r /proc/$$/stat ]]; then
    out=""
    prev=""
    for arg in "$@"; do
        [[ "$prev" == "-o" ]] && out="$arg"
        prev="$arg"
    done
    [[ "$out" == /* ]] || out="$PWD/$out"
    # The compiler's CPU time: this shell's reaped children's user and system
    # times (fields 16 and 17 of /proc/PID/stat, in clock ticks).
    read -r -a stat </proc/$$/stat
    ticks=$(getconf CLK_TCK)
    echo "$(awk -v u="${stat[15]}" -v s="${stat[16]}" -v t="$ticks" 'BEGIN { printf "%.2f", (u + s) / t }') $out" \
        >>"$RESIL_COMPILE_TIMES"
fi
exit "$rc"
