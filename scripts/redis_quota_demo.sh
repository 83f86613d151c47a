#!/usr/bin/env bash
# Several processes sharing one quota through Redis: starts a redis-server
# (no persistence) on a free loopback port, then four client processes of
# examples/redis_quota.cpp at once, each sending 75 requests spread over one
# second against a shared quota of 50/s with a burst of 100; sums what they
# were granted, next to what four per-process buckets would have granted.
#
# Usage: scripts/redis_quota_demo.sh [BUILD_DIR]
#
# BUILD_DIR (default build/demo) is configured if needed and only the example
# is built into it. Needs libhiredis-dev and redis-server (installed first
# when run as root). Parallelism: RESIL_JOBS (default nproc).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

resil_ensure_packages "${RESIL_CORE_PACKAGES[@]}" libhiredis-dev redis-server

dir="${1:-$RESIL_ROOT/build/demo}"
log="$dir/redis-demo-build.log"
mkdir -p "$dir"
echo "building example_redis_quota into $dir (log: $log)..."
if ! {
    cmake -S "$RESIL_ROOT" -B "$dir" -DCMAKE_CXX_COMPILER=g++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DRESIL_BUILD_TESTS=OFF -DRESIL_BUILD_EXAMPLES=ON -DRESIL_BUILD_BENCH=OFF -DRESIL_INSTALL=OFF &&
        cmake --build "$dir" --target example_redis_quota -j "$RESIL_JOBS"
} >"$log" 2>&1; then
    cat "$log"
    echo "error: the example did not build (output above)" >&2
    exit 1
fi

# A free port: bind to port 0, read what the kernel picked, close.
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
work="$(mktemp -d "${TMPDIR:-/tmp}/resil-redis-demo.XXXXXX")"
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
    --logfile "$work/redis.log" --daemonize no &
redis=$!
cleanup() {
    kill "$redis" 2>/dev/null || true
    wait "$redis" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do
    (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.05
done

echo "redis-server on 127.0.0.1:$port; 4 pods share the key \"demo\": 50/s, burst 100"
pids=()
for pod in 1 2 3 4; do
    "$dir/examples/example_redis_quota" --port "$port" --key demo --requests 75 --pod "$pod" >"$work/pod$pod.txt" &
    pids+=("$!")
done
for p in "${pids[@]}"; do wait "$p"; done

granted=0 requests=0 local_granted=0
for pod in 1 2 3 4; do
    grep -v '^TOTALS' "$work/pod$pod.txt"
    read -r _ g r l < <(grep '^TOTALS' "$work/pod$pod.txt")
    granted=$((granted + g)) requests=$((requests + r)) local_granted=$((local_granted + l))
done
echo "all pods: the shared quota granted $granted of $requests (one bucket of 50/s, burst 100, grants 149 of 300"
echo "          over one second); four local buckets would have granted $local_granted: the N x pitfall"
