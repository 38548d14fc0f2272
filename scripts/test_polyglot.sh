#!/usr/bin/env bash
# One limit across runtimes (tests/polyglot): a C program, the Go example, two Python and two Node processes on one
# Redis, on a 3-master cluster and on one PostgreSQL; and pacing across processes (test_pacing_fleet.py: Python
# threads, asyncio tasks and Node calls waiting their turn on one Redis key, seen by a recording HTTP server); one
# route served by Flask, FastAPI, Django, Express, Fastify and Koa on one Redis, one limit (test_one_route.py); the
# soak's 60-second form (bench/soak/run.sh).
# Uses what the other suites built: the C ABI in build-test (scripts/test.sh), the
# Python package in .venv (scripts/test_python.sh) and the Node addon (scripts/test_node.sh); run after them.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-test
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== polyglot fleet =="
cmake --build "$build" --target fleet_worker_c >/dev/null
# The Go example builds the way users build it: against an installed library, through pkg-config.
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libratewarden.so' | head -1)")
export PKG_CONFIG_PATH="$libdir/pkgconfig" LD_LIBRARY_PATH="$libdir"
go=$(command -v go || echo /usr/local/go/bin/go)
(cd examples/go && GOFLAGS=-mod=mod GOCACHE="$tmp/gocache" "$go" build -o "$tmp/go-example" .)

RW_FLEET_C="$build/tests/polyglot/fleet_worker_c" RW_FLEET_GO="$tmp/go-example" \
  .venv/bin/python -P -m pytest -q -p no:cacheprovider tests/polyglot

# The soak's short form (issue 38; the 10-minute one is docs/deployment.md's "A long soak"): Python, Node and C
# processes on every store, each store restarted every 20 s, every process flat after the warm-up. About 70 s.
echo "== soak, 60 s =="
RATEWARDEN_VENV=.venv RATEWARDEN_BUILD="$build" RATEWARDEN_NODE_BUILT=1 bench/soak/run.sh --seconds 60
