#!/usr/bin/env bash
# ratewarden-server against envoyproxy/ratelimit (issue 37), one command. Both answer Envoy's RLS v3 over gRPC from
# one config dir (bench/server/config/), on one Redis; ghz loads them in interleaved rounds (ours, peer, ours, ...):
# 1,000 keys never denied and one key flooded (all denied), at concurrency 50 and 200. Beside ghz's throughput and
# latency, each server's own CPU per decision (utime + stime from /proc/PID/stat around a round, over the round's
# OK responses) and its RSS under load (VmRSS sampled during the round): ghz costs about as much CPU per call as the
# servers on these 2 cores, so throughput says more about ghz than about either server. The table prints each
# ratio (median of the per-round ratios) beside the issue's target. bench/server/rounds.sh does the rounds,
# bench/server/table.py the table.
#
# Builds ratewarden-server (Release, build-rel), and ghz and envoyproxy/ratelimit from the Go module proxy into
# ${XDG_CACHE_HOME:-~/.cache}/ratewarden/bench-server/ when absent (minutes on 2 cores, once).
# Environment: BENCH_ROUNDS (default 3 per side and case), BENCH_SECONDS (default 5 per round), BUILD (build-rel).
# About 5 minutes with the defaults, once built.
set -euo pipefail
cd "$(dirname "$0")/../.."

ghz_version=v0.93.0  # the only version the module proxy lists
peer_version=v1.4.1-0.20260122083618-3fb702589d36  # envoyproxy/ratelimit main of 2026-01-22 (@latest; @main is refused)
build=${BUILD:-build-rel}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/ratewarden/bench-server
go=$(command -v go || echo /usr/local/go/bin/go)

scripts/setup.sh
[ -x "$go" ] || { echo "run.sh: Go is needed to build ghz and envoyproxy/ratelimit (/usr/local/go/bin/go)" >&2; exit 1; }

echo "== building ratewarden-server (Release, $build)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRATEWARDEN_BUILD_SERVER=ON >/dev/null
cmake --build "$build" -j 2 --target ratewarden-server >/dev/null

# go install into a directory of its own per version: a second run, or another worktree, reuses the binary.
go_install() {  # name module version
  local bin="$cache/$1-$3"
  if [ ! -x "$bin/$1" ]; then
    echo "== building $2@$3 with $("$go" version | cut -d' ' -f3) into $bin (once)"
    mkdir -p "$bin"
    GOBIN=$bin GOFLAGS=-mod=mod GOTOOLCHAIN=local "$go" install "$2@$3"
  fi
}
go_install ghz github.com/bojand/ghz/cmd/ghz "$ghz_version"
go_install service_cmd github.com/envoyproxy/ratelimit/src/service_cmd "$peer_version"

echo "== starting redis-server (bench/servers.py, nice -10 when allowed) and the rounds"
exec python3 bench/servers.py --nice -- bench/server/rounds.sh {redis_port} "$build/server/ratewarden-server" \
  "$cache/service_cmd-$peer_version/service_cmd" "$cache/ghz-$ghz_version/ghz"
