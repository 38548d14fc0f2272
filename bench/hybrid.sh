#!/usr/bin/env bash
# The hybrid modes against issue 15's targets from C++ (bench/hybrid_bench.cpp): builds the benchmark (Release, in
# build-rel unless given) and runs it against a Redis started by tests/servers/launch.py (bench/servers.py).
# Usage: bench/hybrid.sh [build-dir] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-rel}
rounds=${2:-5}
echo "== building hybrid_bench in $build (Release)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRATEWARDEN_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target hybrid_bench >/dev/null
exec python3 bench/servers.py "$build/bench/hybrid_bench" {redis} "$rounds"
