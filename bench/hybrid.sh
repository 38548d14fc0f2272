#!/usr/bin/env bash
# The hybrid modes against issue 15's targets from C++ (bench/hybrid_bench.cpp): starts a Redis on a free loopback
# port in a temporary directory, builds the benchmark (Release, in build-rel unless given) and runs it.
# Usage: bench/hybrid.sh [build-dir] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-rel}
rounds=${2:-5}
echo "== building hybrid_bench in $build (Release)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRATEWARDEN_BUILD_BENCH=ON >/dev/null
cmake --build "$build" --target hybrid_bench >/dev/null
dir=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
port=$((20000 + RANDOM % 20000))
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" >/dev/null &
pid=$!
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
echo "== redis-server on 127.0.0.1:$port"
"$build/bench/hybrid_bench" "redis://127.0.0.1:$port" "$rounds"
