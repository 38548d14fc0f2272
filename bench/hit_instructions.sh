#!/usr/bin/env bash
# Instructions per Limiter::hit on the memory store, counted by callgrind: the same on a busy machine or a quiet one,
# and on any x86-64 CPU, for one compiler. A hot key, 400,000 distinct keys and a hot key under two policies (the
# several-policy path: "10/second; 1000/hour" is a common policy); beside them, for information, the
# bare unordered_map window (bench/hit_instructions.cpp) and governor's check_key on a hot key (when
# bench/in_process.sh has built its peer). Time hides added work on a fast CPU; the count does not.
#   bench/hit_instructions.sh [--check]    --check (CI): fail when a count is above bench/hit_instructions.ceiling
# Builds hit_instructions (Release) in build-bench-in-process, or in $RATEWARDEN_BENCH_BUILD.
set -euo pipefail
cd "$(dirname "$0")/.."

check=false
[ "${1:-}" = --check ] && check=true
build=${RATEWARDEN_BENCH_BUILD:-build-bench-in-process}
command -v valgrind >/dev/null || { echo "hit_instructions.sh: valgrind is needed (scripts/setup.sh)" >&2; exit 1; }
echo "building hit_instructions (Release, $build)..." >&2
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRATEWARDEN_BUILD_BENCH=ON -DRATEWARDEN_BUILD_TESTS=OFF \
  -DRATEWARDEN_BUILD_EXAMPLES=OFF -DRATEWARDEN_BUILD_CAPI=OFF -DRATEWARDEN_WERROR=ON >/dev/null
cmake --build "$build" --target hit_instructions -j "$(nproc)" >/dev/null

n=100000
collected() {  # command...: the instructions callgrind counted for the whole program
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
per_call() {  # how, args before N, args after N: (I(2N) - I(N)) / N, so that start-up and teardown cancel out
  local program=$1 flag=$2 mode=$3 one two
  one=$(collected $program $flag $n $mode)
  two=$(collected $program $flag $((2 * n)) $mode)
  echo $(((two - one) / n))
}

hot=$(per_call "$build/bench/hit_instructions" "" "")
distinct=$(per_call "$build/bench/hit_instructions" "" distinct)
two=$(per_call "$build/bench/hit_instructions" "" two)
bare=$(per_call "$build/bench/hit_instructions" "" bare)
governor=bench/peers/governor/target/release/governor-peer
governor_hot=$([ -x $governor ] && per_call $governor --calls "" || echo 0)

python3 - "$hot" "$distinct" "$two" "$bare" "$governor_hot" "$check" <<'PY'
import sys
hot, distinct, two, bare, governor = map(int, sys.argv[1:6])
check = sys.argv[6] == "true"
ceilings = {}
for line in open("bench/hit_instructions.ceiling"):
    line = line.split("#")[0].split()
    if line:
        ceilings[line[0]] = int(line[1])
print("\nC++ instructions per call (callgrind; (I(2N) - I(N)) / N):")
failed = []
for name, what, count in (("hot_key", "Limiter::hit, hot key", hot),
                          ("distinct_keys", "Limiter::hit, N new keys each time", distinct),
                          ("two_policies", "Limiter::hit, hot key, two policies", two)):
    ceiling = ceilings[name]
    verdict = "under its ceiling" if count <= ceiling else "ABOVE ITS CEILING"
    print(f"  {what:<38} {count:6d}   ceiling {ceiling:6d}: {verdict}")
    if count > ceiling:
        failed.append(name)
print(f"  {'bare unordered_map window (info)':<38} {bare:6d}   hot key / bare: {hot / bare:.2f}x")
if governor:
    print(f"  {'governor check_key, hot key (info)':<38} {governor:6d}   hot key / governor: {hot / governor:.2f}x")
if failed and check:
    sys.exit(f"hit_instructions.sh: {', '.join(failed)} above bench/hit_instructions.ceiling: the hot path does more "
             "work than it did. Find what was added (callgrind_annotate), or raise the ceiling with a reason.")
PY

$check && exit 0
# Where a hot-key hit's instructions go (self cost per function), so that the inherent parts -- the keyed hash
# (SipHash-1-3: clients cannot aim keys at one shard; governor hashes with it too), the exact key compare, the
# expiry heap and recency that bound memory (governor keeps every key forever) -- are seen beside the rest.
out=$(mktemp)
calls=1000000  # start-up's instructions, spread over this many hits, fall under the threshold below
valgrind --tool=callgrind --callgrind-out-file="$out" "$build/bench/hit_instructions" $calls >/dev/null 2>&1
echo "  where a hot-key hit's instructions go (self cost of each function, per hit):"
callgrind_annotate --auto=no --threshold=99 "$out" 2>/dev/null | python3 -c "
import collections, re, sys
per_function = collections.Counter()
for line in sys.stdin:
    m = re.match(r'\s*([0-9,]+) \([^)]*\)\s+[^:]*:(.*?)( \[.*)?$', line)
    if m:
        per_function[re.sub(r'\(.*', '', m.group(2)).replace('ratewarden::', '')] += int(m.group(1).replace(',', ''))
for name, count in per_function.most_common():
    if count >= 2 * $calls:
        print(f'    {count / $calls:6.0f}  {name}')
"
rm -f "$out"
