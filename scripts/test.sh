#!/usr/bin/env bash
# Every test suite: the core, Redis and PostgreSQL tests (against real redis-server and PostgreSQL processes the tests
# start through tests/servers/launch.py, which never lets one outlive its test process) and the C ABI
# tests (plain C, Python ctypes, an install used by outside C, CMake and Go builds) in a warnings-as-errors build;
# again under AddressSanitizer + UndefinedBehaviorSanitizer; the concurrency and failure tests under
# ThreadSanitizer. Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
jobs=$(nproc)

run_suite() {  # name, build dir, ctest filter, cmake options...
  local name=$1 dir=$2 filter=$3
  shift 3
  echo "== $name =="
  cmake -S . -B "$dir" -G Ninja -DRATEWARDEN_WERROR=ON -DRATEWARDEN_BUILD_EXAMPLES=ON -DRATEWARDEN_BUILD_CAPI=ON "$@" \
    >/dev/null
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" ${filter:+-R "$filter"}
}

run_suite "core tests" build-test "" -DCMAKE_BUILD_TYPE=Debug
run_suite "core tests under ASan + UBSan" build-asan "" -DCMAKE_BUILD_TYPE=Debug -DRATEWARDEN_SANITIZE=ON
concurrent="MemoryStore|Threads|AcrossProcesses|ScriptFlush|RedisFailures|HitAsync|capi_c|cluster_tests|connections_tests|postgres_tests|hybrid_tests"
run_suite "concurrency tests under TSan" build-tsan "$concurrent" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRATEWARDEN_TSAN=ON
scripts/test_python.sh  # the Python package: pip install ., pytest with Flask 3.x and with Flask 2.2
scripts/test_node.sh    # the Node package: npm ci (builds the addon), tsc type test, node --test, npm pack installed elsewhere
scripts/test_polyglot.sh  # one limit across runtimes: C, Go, Python and Node processes on one Redis and a cluster
