#!/usr/bin/env bash
# In-process speed, one command (issue 21): what one decision costs on the memory store, against what a user could
# use instead, measured in the same run. C++: Limiter::hit against Rust's governor (bench/peers/governor, built with
# cargo from crates.io) for one hot key and for 1,000,000 distinct keys (without eviction and at the default
# bound), two threads against one, two policies against one, and a bare std::unordered_map window for information;
# BENCH_ROUNDS (default 5) interleaved rounds of the two programs, one table of ratios beside the issue's targets;
# and the cost of the decision counters (issue 36: <= 1.02x), against the same bench built without them.
# Then the Python and Node in-process benches (bench/python/in_process.py, bench/node/in_process.js), which print
# their own tables. About 5 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${BENCH_ROUNDS:-5}
build=build-bench-in-process
build_off=build-bench-no-metrics  # the same, the decision counters compiled out: what they cost
scripts/setup.sh
command -v cargo >/dev/null || { echo "in_process.sh: cargo (Rust) is needed to build the governor peer" >&2; exit 1; }

echo "building memory_store_bench (Release, $build) and the governor peer (cargo)..." >&2
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRATEWARDEN_BUILD_BENCH=ON -DRATEWARDEN_BUILD_TESTS=OFF \
  -DRATEWARDEN_BUILD_EXAMPLES=OFF -DRATEWARDEN_BUILD_CAPI=OFF -DRATEWARDEN_WERROR=ON >/dev/null
cmake --build "$build" --target memory_store_bench -j 2 >/dev/null
cmake -S . -B "$build_off" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRATEWARDEN_BUILD_BENCH=ON \
  -DRATEWARDEN_BUILD_TESTS=OFF -DRATEWARDEN_BUILD_EXAMPLES=OFF -DRATEWARDEN_BUILD_CAPI=OFF -DRATEWARDEN_WERROR=ON \
  -DRATEWARDEN_METRICS=OFF >/dev/null
cmake --build "$build_off" --target memory_store_bench -j 2 >/dev/null
cargo build --release --locked -j 2 -q --manifest-path bench/peers/governor/Cargo.toml

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds" >&2
  "$build/bench/memory_store_bench" --rounds=1 >>"$dir/results.jsonl" 2>>"$dir/cpp.log" ||
    { cat "$dir/cpp.log" >&2; exit 1; }
  bench/peers/governor/target/release/governor-peer --rounds 1 >>"$dir/results.jsonl"
  "$build_off/bench/memory_store_bench" --rounds=1 --benchmark_filter='^(hot_key|distinct_keys_no_eviction)/' \
    >>"$dir/results.jsonl" 2>>"$dir/cpp.log" || { cat "$dir/cpp.log" >&2; exit 1; }
done
python3 bench/in_process_table.py <"$dir/results.jsonl"

echo
if [ -f bench/python/in_process.py ]; then
  source bench/python/venv.sh
  "$venv/bin/python" -P bench/python/in_process.py
else
  echo "Python: skipped, bench/python/in_process.py does not exist yet"
fi

echo
if [ -f bench/node/in_process.js ]; then
  source bench/node/setup.sh
  node bench/node/in_process.js
else
  echo "Node: skipped, bench/node/in_process.js does not exist yet"
fi
