#!/usr/bin/env bash
# Runs the HTTP client demo, examples/http_client.cpp, against the demo fault
# server, examples/fault_server.cpp, started on a loopback ephemeral port and
# stopped afterwards: retries, Retry-After, idempotency keys, the breaker
# opening and plan B, with the server's view of each request interleaved.
#
# Usage: scripts/demo.sh [BUILD_DIR]
#
# BUILD_DIR (default build/demo) is configured if needed and only the two
# demo programs are built into it. On a fresh Debian 12 machine the missing
# packages (cmake, g++, make, libcurl4-openssl-dev) are installed first when
# run as root; otherwise they are named and the script stops.
# Parallelism: RESIL_JOBS (default nproc).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

resil_ensure_packages "${RESIL_CORE_PACKAGES[@]}" libcurl4-openssl-dev

dir="${1:-$RESIL_ROOT/build/demo}"
log="$dir/demo-build.log"
mkdir -p "$dir"
echo "building example_http_client and example_fault_server into $dir (log: $log)..."
if ! {
    # Configured every time (quick when cached) so new examples are picked up.
    cmake -S "$RESIL_ROOT" -B "$dir" -DCMAKE_CXX_COMPILER=g++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DRESIL_BUILD_TESTS=OFF -DRESIL_BUILD_EXAMPLES=ON -DRESIL_BUILD_BENCH=OFF -DRESIL_INSTALL=OFF &&
        cmake --build "$dir" --target example_http_client example_fault_server -j "$RESIL_JOBS"
} >"$log" 2>&1; then
    cat "$log"
    echo "error: the demo did not build (output above)" >&2
    exit 1
fi

port_file="$(mktemp -u "${TMPDIR:-/tmp}/resil-demo-port.XXXXXX")"
"$dir/examples/example_fault_server" --port-file "$port_file" &
server=$!
cleanup() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -f "$port_file" "$port_file.tmp"
}
trap cleanup EXIT

for _ in $(seq 1 500); do
    [[ -s "$port_file" ]] && break
    if ! kill -0 "$server" 2>/dev/null; then
        echo "error: the fault server exited before listening" >&2
        exit 1
    fi
    sleep 0.01
done
if [[ ! -s "$port_file" ]]; then
    echo "error: the fault server did not start listening within 5 s" >&2
    exit 1
fi

"$dir/examples/example_http_client" "http://127.0.0.1:$(cat "$port_file")"
