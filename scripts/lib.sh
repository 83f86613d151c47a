# Shared helpers for scripts/test.sh and scripts/demo.sh. Source it; do not run it.
# shellcheck shell=bash disable=SC2034  # the variables are for the scripts that source this

# The Debian 12 packages each script needs, listed once.
# Core: configure and build the library and its examples.
RESIL_CORE_PACKAGES=(cmake g++ make)
# Everything the full test suite uses: both compilers, the sanitizer
# runtimes and lld (which links the sanitized programs), Catch2, Google
# Benchmark and the benchmarks' baselines (libcurl, libuuid, Boost), the
# integrations' dependencies (libcurl, nlohmann_json, fmt, prometheus-cpp),
# the local servers the HTTP tests talk to (nginx with the echo module,
# Redis, HAProxy, tinyproxy, and openssl for their certificates), doxygen for
# the API reference (the test api_reference), git for the
# FetchContent tarball, tzdata so that the sanitizer run's non-UTC TZ really
# names a zone, clang 19 with its libc++ for the libc++ build (libc++ 14 has
# no <stop_token>), and MinGW-w64 with POSIX threads (std::thread,
# std::mutex) for the Windows cross build. The Redis tests start clusters
# (redis-cli from redis-tools creates them) and sentinels (redis-server
# --sentinel; redis-sentinel is Debian's package for that mode, installed so
# the mode is there however Debian splits it).
RESIL_TEST_PACKAGES=(
    cmake g++ clang libclang-rt-14-dev lld make git tzdata
    clang-19 libc++-19-dev libc++abi-19-dev g++-mingw-w64-x86-64-posix
    catch2 libbenchmark-dev
    libcurl4-openssl-dev nlohmann-json3-dev libfmt-dev prometheus-cpp-dev libasio-dev libhiredis-dev
    uuid-dev libboost-dev
    nginx libnginx-mod-http-echo redis-server redis-tools redis-sentinel haproxy tinyproxy openssl prometheus
    dnsmasq-base doxygen
)

RESIL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RESIL_JOBS="${RESIL_JOBS:-$(nproc 2>/dev/null || echo 2)}"

# Prints a step banner.
resil_banner() {
    printf '\n==== %s ====\n' "$*"
}

# Succeeds when the Debian package is installed (not merely known to dpkg:
# a removed package whose configuration files remain is not installed).
resil_package_installed() {
    dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed$'
}

# Installs the missing packages among "$@". As root it runs `apt-get update`
# once and installs them; a machine that already has them never touches apt.
# As another user it names the missing packages and fails.
resil_ensure_packages() {
    if ! command -v dpkg >/dev/null 2>&1; then
        echo "note: no dpkg here (not Debian?); assuming these are installed: $*" >&2
        return 0
    fi
    local missing=() pkg
    for pkg in "$@"; do
        resil_package_installed "$pkg" || missing+=("$pkg")
    done
    if ((${#missing[@]} == 0)); then
        return 0
    fi
    if [[ "$(id -u)" != 0 ]]; then
        {
            echo "error: missing Debian packages: ${missing[*]}"
            echo "Install them as root, then run this script again:"
            echo "    sudo apt-get install ${missing[*]}"
        } >&2
        return 1
    fi
    resil_banner "installing missing packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# Builds the given targets of an already configured build directory (all
# targets when none are given). Keeps going past a failed target, so one
# broken file does not hide the state of every other one; still fails if
# anything failed.
resil_build() {
    local dir="$1"
    shift
    local targets=() target
    for target in "$@"; do
        targets+=(--target "$target")
    done
    local keep_going=()
    case "$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$dir/CMakeCache.txt")" in
        Ninja*) keep_going=(-- -k 0) ;;
        *Makefiles) keep_going=(-- -k) ;;
    esac
    # RESIL_BUILD_NICENESS (e.g. 10): the build yields the cores to whatever
    # runs beside it at normal priority (scripts/test.sh: a ctest run whose
    # timers must fire on time).
    local prefix=()
    [[ -n "${RESIL_BUILD_NICENESS:-}" ]] && prefix=(nice -n "$RESIL_BUILD_NICENESS")
    "${prefix[@]}" cmake --build "$dir" "${targets[@]}" -j "$RESIL_JOBS" "${keep_going[@]}"
}

# Seconds since the epoch, for step timings.
resil_now() {
    date +%s
}
