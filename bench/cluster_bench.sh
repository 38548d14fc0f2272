#!/usr/bin/env bash
# hit_many batches against one Redis node and against a 3-master Redis Cluster, in one run. Both are started by
# tests/servers/launch.py (bench/servers.py) and go when the benchmark does. Needs a build with
# -DRATEWARDEN_BUILD_BENCH=ON (pass its directory; default build-rel).
set -euo pipefail
build=${1:-build-rel}
exec python3 "$(dirname "$0")/servers.py" "$build/bench/hit_many_bench" {redis} {cluster}
