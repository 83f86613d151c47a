#!/usr/bin/env bash
# Builds and runs resil's demo program, examples/primitives_demo.cpp: the
# library's primitives, each with readable output.
#
# Usage: scripts/demo.sh
#
# On a fresh Debian 12 machine it first installs what it needs (cmake, g++,
# make; as root, otherwise it names them and stops). It builds only the demo,
# into build/demo, reused by later runs. Parallelism: RESIL_JOBS (default nproc).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

resil_ensure_packages "${RESIL_CORE_PACKAGES[@]}"

dir="$RESIL_ROOT/build/demo"
log="$dir/demo-build.log"
mkdir -p "$dir"
echo "building example_primitives_demo into build/demo (log: build/demo/demo-build.log)..."
if ! {
    cmake -S "$RESIL_ROOT" -B "$dir" -DCMAKE_CXX_COMPILER=g++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DRESIL_BUILD_TESTS=OFF -DRESIL_BUILD_EXAMPLES=ON -DRESIL_BUILD_BENCH=OFF -DRESIL_INSTALL=OFF &&
        cmake --build "$dir" --target example_primitives_demo -j "$RESIL_JOBS"
} >"$log" 2>&1; then
    cat "$log"
    echo "error: the demo did not build (output above)" >&2
    exit 1
fi
echo
exec "$dir/examples/example_primitives_demo"
