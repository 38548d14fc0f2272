#!/usr/bin/env bash
# In-process speed, one command (issue 21): what one decision costs on the memory store, against what a user could
# use instead, measured in the same run. C++: Limiter::hit against Rust's governor (bench/peers/governor, built with
# cargo from crates.io) for one hot key and for 1,000,000 distinct keys (without eviction and at the default
# bound), two threads against one, two policies against one, and a bare std::unordered_map window for information;
# BENCH_ROUNDS (default 5) interleaved rounds of the two programs, one table of ratios beside the issue's targets;
# and the cost of the decision counters (issue 36: <= 1.02x), against the same bench built without them, in time
# and in instructions per hit (bench/hit_instructions.cpp under callgrind: the same on a busy machine); a hit's
# instructions against the bare window's and governor's, where they go, and the ceilings CI holds them under
# (bench/hit_instructions.sh). The table says which CPU and clock source it was measured on (issue 39).
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
cmake --build "$build" --target memory_store_bench hit_instructions -j 2 >/dev/null
cmake -S . -B "$build_off" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRATEWARDEN_BUILD_BENCH=ON \
  -DRATEWARDEN_BUILD_TESTS=OFF -DRATEWARDEN_BUILD_EXAMPLES=OFF -DRATEWARDEN_BUILD_CAPI=OFF -DRATEWARDEN_WERROR=ON \
  -DRATEWARDEN_METRICS=OFF >/dev/null
cmake --build "$build_off" --target memory_store_bench hit_instructions -j 2 >/dev/null
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
# The CPU and the clock source: the same code costs differently on another CPU (issue 39), so every table says where
# it was measured.
echo
echo "machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores," \
  "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/in_process_table.py <"$dir/results.jsonl"

# The counters' cost again, in instructions (callgrind): the same whatever else the machine runs, where the times
# above move by a few percent from round to round.
instructions() {  # build, N, [distinct]: the instructions callgrind counted for the whole program
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1/bench/hit_instructions" "$2" ${3:-} 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
n=200000
echo
echo "the decision counters in instructions per hit (callgrind; (I(2N) - I(N)) / N, N = $n):"
for keys in hot distinct; do
  mode=$([ "$keys" = distinct ] && echo distinct || true)
  on=$(( ($(instructions "$build" $((2 * n)) $mode) - $(instructions "$build" $n $mode)) ))
  off=$(( ($(instructions "$build_off" $((2 * n)) $mode) - $(instructions "$build_off" $n $mode)) ))
  python3 -c "import sys; on, off, n = map(int, sys.argv[1:4]); r = on / off
print(f'  {sys.argv[4]:<22} counters on {on / n:7.1f}, compiled out {off / n:7.1f}: {r:.3f}x  (target <= 1.02x) '
      + ('met' if r <= 1.02 else 'MISS'))" "$on" "$off" "$n" "$([ "$keys" = hot ] && echo "hot key" || echo "$((2 * n)) distinct keys")"
done
# A hit's instructions against the bare window's and governor's, and the ceilings CI holds them under.
RATEWARDEN_BENCH_BUILD=$build bench/hit_instructions.sh

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
  node bench/node/hit_instructions.js  # hitSync's and allowSync's native part, in instructions
else
  echo "Node: skipped, bench/node/in_process.js does not exist yet"
fi
