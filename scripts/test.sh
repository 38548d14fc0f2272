#!/usr/bin/env bash
# Every test suite: the core, Redis and PostgreSQL tests (against real redis-server and PostgreSQL processes the tests
# start through tests/servers/launch.py, which never lets one outlive its test process) and the C ABI
# tests (plain C, Python ctypes, an install used by outside C, CMake and Go builds) in a warnings-as-errors build;
# again under AddressSanitizer + UndefinedBehaviorSanitizer; the concurrency and failure tests under
# ThreadSanitizer; a hit's instructions under their recorded ceiling; ratewarden-server over gRPC; the Python and
# Node packages; the polyglot fleet; the binary packages installed without a compiler; every code block of the docs.
# Installs what it needs first. Each step says its number and the time spent so far.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=11
current=0
step() {
  current=$((current + 1))
  printf '\n=== [%d/%d] %s (%dm%02ds so far) ===\n' "$current" "$steps" "$1" $((SECONDS / 60)) $((SECONDS % 60))
}

step "system packages (scripts/setup.sh)"
scripts/setup.sh
jobs=$(nproc)
# The packages compile the same core files several times (the Python step's wheel, a wheel per CPython, the npm
# prebuilt, the tarball built from source), each from a folder of its own: ccache compiles them once. BASEDIR=/ keys
# the cache on paths relative to each build folder, which are the same in every copy of the sources.
# The Python and Node builds share the core's objects too: the same compiler by the same name (ccache keys on it; CMake
# would pick c++ and scikit-build-core g++), and build folders at the same depth (pyproject.toml).
export CCACHE_DIR=${CCACHE_DIR:-$PWD/build-ccache} CCACHE_BASEDIR=/ CCACHE_NOHASHDIR=1
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CC=${CC:-gcc} CXX=${CXX:-g++}

# -g1: line tables only, enough for the sanitizers' reports to name file and line, and about a fifth less to compile
# than -g (debug the failing test in a build of your own).
debug_info=(-DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")

run_suite() {  # name, build dir, ctest filter, targets to build ("" for all), cmake options...
  local name=$1 dir=$2 filter=$3 targets=$4
  shift 4
  step "$name"
  cmake -S . -B "$dir" -G Ninja -DRATEWARDEN_WERROR=ON -DRATEWARDEN_BUILD_EXAMPLES=ON -DRATEWARDEN_BUILD_CAPI=ON \
    "${debug_info[@]}" "$@" >/dev/null
  # shellcheck disable=SC2086  # the targets are words
  cmake --build "$dir" -j "$jobs" ${targets:+--target $targets}
  # Twice as many tests as cores: most of a test's time is spent waiting for its servers.
  ctest --test-dir "$dir" --output-on-failure -j $((jobs * 2)) ${filter:+-R "$filter"}
}

run_suite "core tests" build-test "" "" -DCMAKE_BUILD_TYPE=Debug -DRATEWARDEN_BUILD_SERVER=ON
run_suite "core tests under ASan + UBSan" build-asan "" "" -DCMAKE_BUILD_TYPE=Debug -DRATEWARDEN_SANITIZE=ON \
  -DRATEWARDEN_BUILD_SERVER=ON
concurrent="MemoryStore|Lock\.|Threads|LimiterStats|StoreStats|Events|AcrossProcesses|ScriptFlush|RedisFailures|HitAsync|capi_c|cluster_tests|connections_tests|postgres_tests|hybrid_tests|reservation_tests|sentinel_tests|hostile_network_tests"
# Only the programs whose tests the filter chooses, read from the first step's build of everything (the same
# sources): a TSan build of every program compiles much that it never runs. (A GoogleTest-discovered program left out
# of the build would have no tests for the filter to choose: a list kept by hand could fall silently behind it.)
concurrent_programs=$(ctest --test-dir build-test -N -R "$concurrent" --show-only=json-v1 | python3 -c '
import json, os, re, sys
build = os.path.realpath(sys.argv[1]) + "/"
print(" ".join(sorted({os.path.basename(path) for test in json.load(sys.stdin)["tests"]
                       for word in test.get("command", []) for path in re.findall(r"[^\s;&|>]+", word)
                       if path.startswith(build)})))' build-test)
# The server is left out under TSan: Debian's gRPC is not built with it (every one of its threads would be a report).
run_suite "concurrency tests under TSan" build-tsan "$concurrent" "$concurrent_programs" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRATEWARDEN_TSAN=ON -DRATEWARDEN_BUILD_SERVER=OFF
step "hot path instructions (bench/hit_instructions.sh --check)"
bench/hit_instructions.sh --check  # a hit's instructions under callgrind, held under bench/hit_instructions.ceiling
step "Python package"
scripts/test_python.sh  # the Python package: pip install ., pytest with Flask 3.x and with Flask 2.2
step "ratewarden-server over the wire"
scripts/test_server.sh  # gRPC from Python (grpcio, in the Python step's venv), real Redis, build-test's binary
step "Node package"
scripts/test_node.sh    # the Node package: npm ci (builds the addon), tsc type test, node --test
step "polyglot fleet"
scripts/test_polyglot.sh  # one limit across runtimes: C, Go, Python and Node processes on one Redis and a cluster
step "binary packages installed without a compiler"
scripts/test_install.sh   # wheels of the oldest and newest CPython (pip chooses); the npm prebuilt per Node major
step "the docs' code blocks"
scripts/test_docs.sh      # every fenced block of README.md and docs/*.md runs, or is a fragment of a file shown
printf '\nall %d steps passed in %dm%02ds\n' "$steps" $((SECONDS / 60)) $((SECONDS % 60))
