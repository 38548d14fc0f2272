#!/usr/bin/env bash
# hit_many batches against one Redis node and against a 3-master Redis Cluster, in one run. Starts both on free
# loopback ports in a temporary directory and stops them afterwards. Needs a build with -DRATEWARDEN_BUILD_BENCH=ON
# (pass its directory; default build-rel).
set -euo pipefail
build=${1:-build-rel}
dir=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT

start() {  # port, extra args...
  local port=$1
  shift
  mkdir -p "$dir/$port"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir/$port" "$@" >/dev/null &
  pids+=($!)
  until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
}

base=$((20000 + RANDOM % 20000))
start "$base"
for i in 1 2 3; do
  start $((base + i)) --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000
done
redis-cli --cluster create 127.0.0.1:$((base + 1)) 127.0.0.1:$((base + 2)) 127.0.0.1:$((base + 3)) \
  --cluster-replicas 0 --cluster-yes >/dev/null
until redis-cli -p $((base + 1)) cluster info | grep -q cluster_state:ok; do sleep 0.1; done

"$build/bench/hit_many_bench" "redis://127.0.0.1:$base" \
  "redis+cluster://127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"
