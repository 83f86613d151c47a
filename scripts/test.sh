#!/usr/bin/env bash
# resil's whole test suite. Exits non-zero when any step fails.
#
# Usage: scripts/test.sh [--quick]
#
#   (no option)  On a fresh Debian 12 machine, installs the missing packages
#                (as root; otherwise names them and stops), then runs:
#                  a. g++ Release (-O3, what users build, where the
#                     optimizer's warnings show up): builds tests (with
#                     separate compilation: the library compiled once,
#                     RESIL_TEST_ALL_SEPARATE), examples and benchmarks
#                     (header-only); ctest; a benchmark smoke pass (every
#                     bench_* binary, tiny min time, figures ignored)
#                  b. clang++ ASan+UBSan Debug, tests and examples,
#                     header-only (clang's warnings over everything; every
#                     header together, each alone is a.'s); ctest under a
#                     non-UTC TZ (America/Santiago)
#                  c. clang++ TSan, the tests that run more than one
#                     thread (RESIL_TEST_THREADED_ONLY), with separate
#                     compilation (not the compile-only checks a. and b.
#                     build); ctest
#                  d. consumers: find_package on an installed copy (all
#                     components; the core alone without any integration's
#                     dependency; COMPONENTS curl; a missing component
#                     failing with its reason), add_subdirectory of this
#                     tree, FetchContent of a tarball made from this tree,
#                     resil::compiled (RESIL_BUILD_COMPILED) installed and
#                     as a subproject
#                  e. fuzz harnesses (scripts/fuzz.sh --ci: clang++
#                     libFuzzer, 15 s each)
#                  f. clang++ 19 with libc++ 19 (-stdlib=libc++), Release,
#                     the core only (no curl, json, fmt: Debian builds fmt
#                     against libstdc++); ctest
#                  g. Windows: the core cross-built with MinGW-w64 (every
#                     core header alone, and a program drawing a key, linked
#                     through resil::resil); compiled and linked, not run
#                Each ctest run (a. b. c. f.) goes on in the background
#                while the next step builds: it mostly waits on servers and
#                timeouts. Its output is shown whole when it ends.
#                Every build of resil's own code here is warnings-as-errors
#                (RESIL_WARNINGS_AS_ERRORS=ON; users' builds default to OFF).
#   --quick      step a without the benchmark smoke, for local iteration.
#
# Build directories live under build/, or RESIL_BUILD_DIR if set (ci-gcc,
# ci-asan, ci-tsan, ci-consumer, fuzz, ci-libcxx, ci-windows), and are reused, so a second run only rebuilds what
# changed. Parallelism is RESIL_JOBS (default: nproc). A run ends with step timings and the line
# "N passed, N failed", counting the steps.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

quick=0
case "${1:-}" in
    "") ;;
    --quick) quick=1 ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "usage: scripts/test.sh [--quick]" >&2
        exit 2
        ;;
esac

cd "$RESIL_ROOT"
BUILD="${RESIL_BUILD_DIR:-$RESIL_ROOT/build}"
CI_TZ="America/Santiago"
SANITIZE_ADDRESS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
SANITIZE_THREAD="-fsanitize=thread -O1 -fno-omit-frame-pointer"

run_started=$(resil_now)
resil_ensure_packages "${RESIL_TEST_PACKAGES[@]}"

# --- step bookkeeping --------------------------------------------------------

step_names=()
step_results=()
step_seconds=()

# run_step NAME COMMAND...: announces, times and records one step; a failing
# step is recorded and the run goes on, so one failure does not hide others.
run_step() {
    local name="$1"
    shift
    resil_banner "$name"
    local started rc=0
    started=$(resil_now)
    "$@" || rc=$?
    step_names+=("$name")
    step_seconds+=($(($(resil_now) - started)))
    if ((rc == 0)); then
        step_results+=(ok)
    else
        step_results+=(FAILED)
        echo "---- step failed: $name"
    fi
}

# Background steps. A ctest run mostly waits (servers starting, timeouts
# running out: about a third of its wall time is CPU), so it runs while the
# next build uses the cores. One at a time: two ctest runs at once would
# only compete for the same ports and servers. Its output goes to a log,
# printed whole when the step is joined; its time is its own, from start
# to end. The builds, the benchmark smoke and the fuzzing run niced
# (RESIL_BUILD_NICENESS, nice -n 10), so that the tests beside them get a
# core when their timers fire, as on an idle machine.
export RESIL_BUILD_NICENESS="${RESIL_BUILD_NICENESS:-10}"
bg_name=""
bg_pid=""
bg_log=""
bg_count=0

# start_background_step NAME COMMAND...: joins the step running in the
# background, if any, then starts this one.
start_background_step() {
    join_background_step
    bg_name="$1"
    shift
    bg_count=$((bg_count + 1))
    bg_log="$BUILD/background-step-$bg_count.log"
    mkdir -p "$BUILD"
    (
        started=$(resil_now)
        rc=0
        "$@" || rc=$?
        echo "$(($(resil_now) - started))" >"$bg_log.seconds"
        exit "$rc"
    ) >"$bg_log" 2>&1 &
    bg_pid=$!
    echo "---- started in the background: $bg_name (output: $bg_log, shown when it ends)"
}

# join_background_step: waits for the background step, prints its output and
# records it as run_step does.
join_background_step() {
    [[ -n "$bg_pid" ]] || return 0
    local rc=0
    wait "$bg_pid" || rc=$?
    resil_banner "$bg_name (ran in the background)"
    cat "$bg_log"
    step_names+=("$bg_name")
    step_seconds+=("$(cat "$bg_log.seconds" 2>/dev/null || echo 0)")
    if ((rc == 0)); then
        step_results+=(ok)
    else
        step_results+=(FAILED)
        echo "---- step failed: $bg_name"
    fi
    bg_pid=""
}

summary() {
    join_background_step
    local passed=0 failed=0 i
    resil_banner "summary"
    for i in "${!step_names[@]}"; do
        printf '  %-7s %5ss  %s\n' "${step_results[$i]}" "${step_seconds[$i]}" "${step_names[$i]}"
        if [[ "${step_results[$i]}" == ok ]]; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
        fi
    done
    printf '  total   %5ss\n' "$(($(resil_now) - run_started))"
    echo "$passed passed, $failed failed"
    ((failed == 0))
}

# --- a. g++ ------------------------------------------------------------------

# The compiler launcher that records each file's compile time, for the
# summary timed_build prints (scripts/compile_timer.sh, compile_times.sh).
COMPILE_TIMER=(-DCMAKE_CXX_COMPILER_LAUNCHER="$RESIL_ROOT/scripts/compile_timer.sh")

# timed_build DIR: resil_build, then where the compiler's time went.
timed_build() {
    local dir="$1" rc=0
    : >"$dir/compile_times.txt"
    RESIL_COMPILE_TIMES="$dir/compile_times.txt" resil_build "$dir" || rc=$?
    bash "$RESIL_ROOT/scripts/compile_times.sh" "$dir/compile_times.txt"
    return "$rc"
}

gcc_build() {
    cmake -S "$RESIL_ROOT" -B "$BUILD/ci-gcc" \
        -DCMAKE_CXX_COMPILER=g++ -DCMAKE_BUILD_TYPE=Release -DRESIL_WARNINGS_AS_ERRORS=ON \
        -DRESIL_BUILD_TESTS=ON -DRESIL_BUILD_EXAMPLES=ON -DRESIL_BUILD_BENCH=ON -DRESIL_TEST_ALL_SEPARATE=ON \
        "${COMPILE_TIMER[@]}" &&
        timed_build "$BUILD/ci-gcc"
}

# run_ctest DIR [PREFIX...]: every test in DIR, PREFIX (e.g. setarch) in front.
run_ctest() {
    local dir="$1"
    shift
    "$@" ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$RESIL_JOBS"
}

# Runs every benchmark binary briefly: a benchmark that no longer builds,
# crashes or hangs fails the step. The figures are not looked at.
bench_smoke() {
    local dir="$BUILD/ci-gcc/bench" failed=0 found=0 src name log started
    for src in "$RESIL_ROOT"/bench/*.cpp; do
        [[ -e "$src" ]] || continue
        found=1
        name="bench_$(basename "$src" .cpp)"
        log="$dir/$name.smoke.log"
        if [[ ! -x "$dir/$name" ]]; then
            echo "FAILED  $name: not built"
            failed=1
            continue
        fi
        started=$(date +%s%N)
        if timeout 120 nice -n "$RESIL_BUILD_NICENESS" "$dir/$name" --benchmark_min_time=0.001 >"$log" 2>&1; then
            echo "ok      $name ($((($(date +%s%N) - started) / 1000000)) ms)"
        else
            echo "FAILED  $name (exit $?); last lines of $log:"
            tail -n 40 "$log"
            failed=1
        fi
    done
    ((found)) || echo "no bench/*.cpp: nothing to run"
    ((failed == 0))
}

# --- b, c. clang++ sanitizers ------------------------------------------------

# Set by sanitizer_probe: what sanitized programs must run under here.
sanitizer_prefix=()

# sanitizer_probe DIR FLAGS: builds and runs a tiny threaded program with
# FLAGS. clang 14's sanitizer runtimes (TSan above all) abort with
# "unexpected memory mapping" on kernels whose ASLR uses more mmap entropy
# than they expect; running with address randomization off (setarch -R)
# avoids it. Sets sanitizer_prefix to whichever works, or fails.
sanitizer_probe() {
    local dir="$1" flags="$2"
    mkdir -p "$dir"
    cat >"$dir/sanitizer_probe.cpp" <<'EOF'
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>
int main() {
    std::mutex mutex;
    std::vector<int> seen;
    std::thread worker([&] { std::lock_guard lock(mutex); seen.push_back(1); });
    { std::lock_guard lock(mutex); seen.push_back(2); }
    worker.join();
    std::printf("sanitizer probe: %zu\n", seen.size());
    return seen.size() == 2 ? 0 : 1;
}
EOF
    # shellcheck disable=SC2086 # FLAGS is a list of words
    clang++ -std=c++20 -g $flags -pthread "$dir/sanitizer_probe.cpp" -o "$dir/sanitizer_probe" || return 1
    sanitizer_prefix=()
    if "$dir/sanitizer_probe" >"$dir/sanitizer_probe.log" 2>&1; then
        return 0
    fi
    echo "sanitized programs fail on this kernel as they are:"
    cat "$dir/sanitizer_probe.log"
    sanitizer_prefix=(setarch "$(uname -m)" -R)
    if "${sanitizer_prefix[@]}" "$dir/sanitizer_probe" >"$dir/sanitizer_probe.log" 2>&1; then
        echo "note: running them with address randomization off (${sanitizer_prefix[*]})"
        return 0
    fi
    echo "...and with address randomization off too:"
    cat "$dir/sanitizer_probe.log"
    return 1
}

# sanitizer_build DIR FLAGS [CMAKE ARGS...]: tests, clang++, Debug.
# Line tables are all a sanitizer's report needs (file, line, function of
# each frame), and lld links the sanitized programs about four times faster
# than the default linker: together some minutes of the run.
sanitizer_build() {
    local dir="$1" flags="$2"
    shift 2
    cmake -S "$RESIL_ROOT" -B "$dir" \
        -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="$flags" \
        -DCMAKE_CXX_FLAGS_DEBUG="-gline-tables-only" -DCMAKE_EXE_LINKER_FLAGS="-fuse-ld=lld" \
        -DCMAKE_SHARED_LINKER_FLAGS="-fuse-ld=lld" -DCMAKE_MODULE_LINKER_FLAGS="-fuse-ld=lld" \
        -DRESIL_WARNINGS_AS_ERRORS=ON -DRESIL_BUILD_TESTS=ON -DRESIL_BUILD_EXAMPLES=OFF -DRESIL_BUILD_BENCH=OFF \
        -DRESIL_TEST_SEPARATE_COMPILATION=OFF "${COMPILE_TIMER[@]}" "$@" &&
        timed_build "$dir"
}

asan_ctest() {
    if [[ ! -e "/usr/share/zoneinfo/$CI_TZ" ]]; then
        echo "error: /usr/share/zoneinfo/$CI_TZ is missing (install tzdata): TZ=$CI_TZ would silently mean UTC"
        return 1
    fi
    sanitizer_probe "$BUILD/ci-asan" "$SANITIZE_ADDRESS" || return 1
    TZ="$CI_TZ" \
        ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
        run_ctest "$BUILD/ci-asan" "${sanitizer_prefix[@]}"
}

tsan_ctest() {
    sanitizer_probe "$BUILD/ci-tsan" "$SANITIZE_THREAD" || return 1
    # scripts/tsan.supp: OpenSSL is not instrumented (shared TLS sessions).
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$RESIL_ROOT/scripts/tsan.supp" \
        run_ctest "$BUILD/ci-tsan" "${sanitizer_prefix[@]}"
}

# --- d. consumers ------------------------------------------------------------

CONSUMERS="$BUILD/ci-consumer"
CONSUMER_SOURCES="$RESIL_ROOT/tests/consumer"

# run_consumer NAME[:VARIANT] [CMAKE ARGS...]: configures, builds and runs one
# consumer project of tests/consumer (in build directory NAME-VARIANT), and
# checks that resil's warning flags did not reach its compile commands.
run_consumer() {
    local name="${1%%:*}"
    local dir="$CONSUMERS/${1/:/-}"
    shift
    cmake -S "$CONSUMER_SOURCES/$name" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "$@" || return 1
    resil_build "$dir" || return 1
    local commands
    commands=$(grep '"command":.*consumer\.cpp' "$dir/compile_commands.json") || {
        echo "error: no compile command for consumer.cpp in $dir/compile_commands.json"
        return 1
    }
    if grep -Eq -- ' -W(error|all|extra|pedantic|conversion|shadow)( |$)' <<<"$commands"; then
        echo "error: resil's warning flags leaked into the consumer:"
        echo "$commands"
        return 1
    fi
    local output
    output=$("$dir/consumer") || {
        echo "error: the consumer exited with $?: $output"
        return 1
    }
    echo "consumer says: $output"
    grep -q "via $name" <<<"$output"
}

# Fails when resil, used as a subproject in DIR, built anything of its own.
check_subproject_builds_nothing_extra() {
    local dir="$1" extra
    extra=$(cmake --build "$dir" --target help | grep -E '(test_|example_|bench_|resil_test_main|resil_headers_alone|resil_entry_points|resil_warnings)' || true)
    if [[ -n "$extra" ]]; then
        echo "error: as a subproject resil still builds its own targets:"
        echo "$extra"
        return 1
    fi
}

# install_resil NAME [CMAKE ARGS...]: installs this tree into $CONSUMERS/NAME.
install_resil() {
    local prefix="$CONSUMERS/$1"
    shift
    cmake -S "$RESIL_ROOT" -B "$prefix-build" -DCMAKE_BUILD_TYPE=Release \
        -DRESIL_BUILD_TESTS=OFF -DRESIL_BUILD_EXAMPLES=OFF -DRESIL_BUILD_BENCH=OFF -DRESIL_INSTALL=ON "$@" ||
        return 1
    # Nothing to build header-only; resil::compiled (RESIL_BUILD_COMPILED) is.
    resil_build "$prefix-build" || return 1
    rm -rf "$prefix"
    cmake --install "$prefix-build" --prefix "$prefix"
}

consumer_find_package() {
    local prefix="$CONSUMERS/prefix"
    install_resil prefix || return 1
    # -U: search again every run, so a stale or foreign resil_DIR is never used.
    run_consumer find_package -Uresil_DIR -DCMAKE_PREFIX_PATH="$prefix" || return 1
    local found
    found=$(sed -n 's/^resil_DIR:PATH=//p' "$CONSUMERS/find_package/CMakeCache.txt")
    if [[ "$found" != "$prefix"/* ]]; then
        echo "error: find_package found resil in $found, not in $prefix"
        return 1
    fi
}

# CMake components: the core loads without any integration's dependency, a
# named component loads alone, and one that cannot load fails the configure
# with resil's reason. The dependencies are made "absent" by disabling their
# lookups in the consumer (CMAKE_DISABLE_FIND_PACKAGE_<name>).
consumer_find_package_components() {
    local prefix="$CONSUMERS/prefix" output
    # Asio, hiredis and libresolv are looked up by path (no CMake package): a
    # path where they are not hides them.
    local no_deps=(-DCMAKE_DISABLE_FIND_PACKAGE_CURL=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON
        -DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON -DCMAKE_DISABLE_FIND_PACKAGE_prometheus-cpp=ON
        -DRESIL_ASIO_INCLUDE_DIR=/nonexistent -DRESIL_HIREDIS_INCLUDE_DIR=/nonexistent
        -DRESIL_HIREDIS_LIBRARY=/nonexistent/libhiredis.so -DRESIL_RESOLV_INCLUDE_DIR=/nonexistent
        -DRESIL_RESOLV_LIBRARY=/nonexistent/libresolv.so)
    install_resil prefix || return 1
    # (a) find_package(resil), no integration's dependency here: the core alone.
    run_consumer find_package:core -Uresil_DIR -DCMAKE_PREFIX_PATH="$prefix" "${no_deps[@]}" || return 1
    output=$("$CONSUMERS/find_package-core/consumer")
    if grep -q 'resil::' <<<"$output"; then
        echo "error: an integration came through although its dependency is absent: $output"
        return 1
    fi
    # (b) COMPONENTS curl: resil::curl and nothing else; an optional component
    # whose dependency is absent (fmt) is not found, and that is no error.
    output=$(run_consumer find_package:curl -Uresil_DIR -DCMAKE_PREFIX_PATH="$prefix" \
        -DRESIL_CONSUMER_COMPONENTS=curl -DRESIL_CONSUMER_OPTIONAL_COMPONENTS=fmt \
        -DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON 2>&1) || {
        echo "$output"
        return 1
    }
    echo "$output"
    local expected
    for expected in 'resil_curl_FOUND: TRUE' 'resil_fmt_FOUND: FALSE' 'resil::curl -> libcurl'; do
        grep -qF "$expected" <<<"$output" || {
            echo "error: expected \"$expected\" from the COMPONENTS curl consumer"
            return 1
        }
    done
    # (c) a component that is not there fails the configure, saying why.
    install_resil prefix-without-fmt -DRESIL_WITH_FMT=OFF || return 1
    expect_consumer_failure "$prefix" 'resil has no component "grpc"' -DRESIL_CONSUMER_COMPONENTS=grpc &&
        expect_consumer_failure "$prefix" 'component "fmt" needs fmt 9 or later, which was not found' \
            -DRESIL_CONSUMER_COMPONENTS="curl;fmt" -DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON &&
        expect_consumer_failure "$CONSUMERS/prefix-without-fmt" 'component "fmt" is not installed with this resil' \
            -DRESIL_CONSUMER_COMPONENTS=fmt
}

# expect_consumer_failure PREFIX MESSAGE [CMAKE ARGS...]: configuring the
# find_package consumer against PREFIX must fail, and print MESSAGE.
expect_consumer_failure() {
    local prefix="$1" message="$2" dir="$CONSUMERS/find_package-failing" output
    shift 2
    rm -rf "$dir"
    if output=$(cmake -S "$CONSUMER_SOURCES/find_package" -B "$dir" -DCMAKE_PREFIX_PATH="$prefix" "$@" 2>&1); then
        echo "$output"
        echo "error: the configure succeeded; expected it to fail with: $message"
        return 1
    fi
    # CMake wraps long messages: compare with the whitespace collapsed.
    if ! tr -s '[:space:]' ' ' <<<"$output" | grep -qF "$message"; then
        echo "$output"
        echo "error: the configure failed, but without: $message"
        return 1
    fi
    echo "failed as expected: $message"
}

consumer_add_subdirectory() {
    run_consumer add_subdirectory -DRESIL_SOURCE_DIR="$RESIL_ROOT" &&
        check_subproject_builds_nothing_extra "$CONSUMERS/add_subdirectory"
}

# resil::compiled (RESIL_BUILD_COMPILED=ON): installed and found with
# find_package(resil COMPONENTS compiled), and as a subproject; the consumer
# is compiled with RESIL_SEPARATE_COMPILATION (from the target) and links the
# out-of-line parts from the library.
consumer_compiled() {
    local prefix="$CONSUMERS/prefix-compiled"
    install_resil prefix-compiled -DRESIL_BUILD_COMPILED=ON || return 1
    if ! compgen -G "$prefix/lib*/libresil_compiled.*" >/dev/null; then
        echo "error: no libresil_compiled installed under $prefix"
        return 1
    fi
    run_consumer compiled:find_package -DRESIL_CONSUMER_VIA=find_package -Uresil_DIR \
        -DCMAKE_PREFIX_PATH="$prefix" || return 1
    run_consumer compiled:add_subdirectory -DRESIL_CONSUMER_VIA=add_subdirectory \
        -DRESIL_SOURCE_DIR="$RESIL_ROOT" &&
        check_subproject_builds_nothing_extra "$CONSUMERS/compiled-add_subdirectory"
}

# Makes a tarball of the current sources: `git archive` of HEAD in a clean
# checkout, otherwise the working tree without build output. Its name carries
# its hash, so FetchContent fetches again exactly when the sources changed.
# Prints the tarball's path and SHA-256.
make_source_tarball() {
    local scratch="$CONSUMERS/resil-src.tmp.tar.gz"
    mkdir -p "$CONSUMERS"
    if [[ "$(git -C "$RESIL_ROOT" rev-parse --show-toplevel 2>/dev/null)" == "$RESIL_ROOT" &&
        -z "$(git -C "$RESIL_ROOT" status --porcelain)" ]]; then
        echo "tarball: git archive of HEAD ($(git -C "$RESIL_ROOT" rev-parse --short HEAD))" >&2
        git -C "$RESIL_ROOT" archive --format=tar.gz --prefix=resil/ -o "$scratch" HEAD || return 1
    else
        echo "tarball: working tree (not a clean git checkout), build output excluded" >&2
        tar -C "$RESIL_ROOT" --exclude=./build --exclude='./build-*' --exclude=./.git \
            --transform 's,^\.,resil,' -czf "$scratch" . || return 1
    fi
    local sha
    sha=$(sha256sum "$scratch" | cut -d' ' -f1)
    local tarball="$CONSUMERS/resil-src-${sha:0:16}.tar.gz"
    find "$CONSUMERS" -maxdepth 1 -name 'resil-src-*.tar.gz' ! -path "$tarball" -delete
    mv -f "$scratch" "$tarball"
    echo "$tarball $sha"
}

consumer_fetch_content() {
    local made tarball sha
    made=$(make_source_tarball) || return 1
    read -r tarball sha <<<"$made"
    run_consumer fetch_content -DRESIL_TARBALL="$tarball" -DRESIL_TARBALL_SHA256="$sha" &&
        check_subproject_builds_nothing_extra "$CONSUMERS/fetch_content"
}

# --- e. fuzz harnesses -------------------------------------------------------

fuzz_ci() {
    if [[ ! -f "$RESIL_ROOT/scripts/fuzz.sh" ]]; then
        echo "error: scripts/fuzz.sh missing"
        return 1
    fi
    FUZZ_BUILD_DIR="$BUILD/fuzz" nice -n "$RESIL_BUILD_NICENESS" bash "$RESIL_ROOT/scripts/fuzz.sh" --ci
}

# --- f. Release builds ---------------------------------------------------

# release_build DIR COMPILER [CMAKE ARGS...]: Release (-O3 -DNDEBUG), the
# configuration users build, where the optimizer's warnings (-Wrestrict,
# -Warray-bounds, -Wstringop-overflow, ...) show up. No benchmarks.
release_build() {
    local dir="$1" compiler="$2"
    shift 2
    cmake -S "$RESIL_ROOT" -B "$dir" \
        -DCMAKE_CXX_COMPILER="$compiler" -DCMAKE_BUILD_TYPE=Release -DRESIL_WARNINGS_AS_ERRORS=ON \
        -DRESIL_BUILD_TESTS=ON -DRESIL_BUILD_BENCH=OFF "${COMPILE_TIMER[@]}" "$@" &&
        timed_build "$dir"
}

# libc++: the core only. Debian's libfmt and Google Benchmark are compiled
# against libstdc++, whose std::string a libc++ program cannot hand them, so
# the integrations stay out and the step checks the core alone. Debian's
# Catch2 (2.13) is header-only: it builds with whichever library we use.
# clang 19 and libc++ 19, not 14: resil's clocks and contexts take a
# std::stop_token, which libc++ 14 lacks and libc++ 19 still files under
# -fexperimental-library (header-only there; the flag only unlocks it).
LIBCXX_CXX=clang++-19
libcxx_build() {
    release_build "$BUILD/ci-libcxx" "$LIBCXX_CXX" -DCMAKE_CXX_FLAGS="-stdlib=libc++ -fexperimental-library" \
        -DRESIL_BUILD_EXAMPLES=OFF -DRESIL_WITH_CURL=OFF -DRESIL_WITH_JSON=OFF -DRESIL_WITH_FMT=OFF \
        -DRESIL_WITH_PROMETHEUS=OFF -DRESIL_WITH_ASIO=OFF -DRESIL_WITH_REDIS=OFF -DRESIL_TEST_SEPARATE_COMPILATION=OFF
}

# --- g. Windows ----------------------------------------------------------------

# The core cross-built with MinGW-w64 (POSIX threads): tests/consumer/windows
# compiles every core header alone and links a program that draws keys, so
# a POSIX-only call, a missing include or a library resil::resil fails to
# bring (bcrypt) breaks the step. Nothing runs: there is no Windows here.
windows_build() {
    local dir="$BUILD/ci-windows"
    cmake -S "$RESIL_ROOT/tests/consumer/windows" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_TOOLCHAIN_FILE="$RESIL_ROOT/tests/consumer/windows/toolchain-mingw-w64.cmake" \
        -DRESIL_SOURCE_DIR="$RESIL_ROOT" &&
        resil_build "$dir" || return 1
    local exe="$dir/resil_windows.exe"
    [[ -s "$exe" ]] || {
        echo "error: $exe was not built"
        return 1
    }
    # The import table must name bcrypt.dll: the entropy source, linked in
    # through resil::resil and nothing else.
    # (objdump's output is read whole first: grep -q stopping early would
    # make objdump die of SIGPIPE, and pipefail would call that a failure.)
    local imports
    imports=$(x86_64-w64-mingw32-objdump -p "$exe") || return 1
    if ! grep -qi 'DLL Name: bcrypt.dll' <<<"$imports"; then
        echo "error: $exe does not import bcrypt.dll"
        return 1
    fi
    echo "built $exe ($(stat -c %s "$exe") bytes), importing bcrypt.dll"
}

# --- the run -----------------------------------------------------------------

run_step "a. g++ Release: build tests, examples, benchmarks" gcc_build
if ((quick)); then
    run_step "a. g++: ctest" run_ctest "$BUILD/ci-gcc"
else
    # Each ctest runs in the background while the next step builds.
    start_background_step "a. g++: ctest" run_ctest "$BUILD/ci-gcc"
    run_step "a. g++: benchmark smoke" bench_smoke
    run_step "b. clang++ ASan+UBSan: build tests, examples" sanitizer_build "$BUILD/ci-asan" "$SANITIZE_ADDRESS" \
        -DRESIL_BUILD_EXAMPLES=ON -DRESIL_TEST_EACH_HEADER_ALONE=OFF
    start_background_step "b. clang++ ASan+UBSan: ctest (TZ=$CI_TZ)" asan_ctest
    run_step "c. clang++ TSan: build the tests that run several threads" sanitizer_build "$BUILD/ci-tsan" "$SANITIZE_THREAD" \
        -DRESIL_TEST_COMPILE_CHECKS=OFF -DRESIL_TEST_THREADED_ONLY=ON -DRESIL_TEST_ALL_SEPARATE=ON
    start_background_step "c. clang++ TSan: ctest" tsan_ctest
    run_step "d. consumer: cmake --install + find_package" consumer_find_package
    run_step "d. consumer: find_package components (core alone, COMPONENTS curl, a missing one fails)" \
        consumer_find_package_components
    run_step "d. consumer: add_subdirectory" consumer_add_subdirectory
    run_step "d. consumer: resil::compiled (find_package, add_subdirectory)" consumer_compiled
    run_step "d. consumer: FetchContent (URL tarball)" consumer_fetch_content
    run_step "e. fuzz harnesses (clang libFuzzer, 15 s each)" fuzz_ci
    run_step "f. clang++ 19 + libc++ Release: build core tests" libcxx_build
    start_background_step "f. clang++ 19 + libc++: ctest" run_ctest "$BUILD/ci-libcxx"
    run_step "g. Windows (MinGW-w64): build every core header, link a key draw" windows_build
fi
summary
