#!/usr/bin/env bash
# The Node package: install (builds the addon from source with the local Node headers), the TypeScript type test,
# the hot path's instructions per call under their ceilings (bench/node/hit_instructions.js),
# node --test against real redis-server processes and HTTP on 127.0.0.1 (5 times back to back when CI=true, to catch
# what fails once in a while; NODE_TEST_RUNS=N chooses), one more test file at a time than there are cores (Node's
# default is one fewer; the files mostly wait for servers and HTTP round trips). The `npm pack` tarball installed
# elsewhere, with its prebuilt addon and from source, is scripts/test_install.sh. Arguments go to node --test in place
# of tests/node/ (test files, and options such as --test-name-pattern): scripts/test_node.sh tests/node/express.test.js
set -euo pipefail
cd "$(dirname "$0")/.."

export npm_config_nodedir=/usr   # Node headers are local: never downloaded
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

echo "== Node: npm ci (builds the addon) =="
npm ci --foreground-scripts --no-progress
[ -f build-node/Release/ratewarden.node ] || { echo "test_node: the addon was not built" >&2; exit 1; }

echo "== Node: type test (tsc --noEmit) =="
npx --no-install tsc -p tests/node/types

# Instructions per hitSync / allowSync (callgrind: the same whatever the machine's load) under the ceilings of
# bench/node/hit_instructions_ceiling.txt: a change that adds work to the hot path fails here. About 20 s.
echo "== Node: instructions per hit (callgrind) =="
node bench/node/hit_instructions.js --check

runs=${NODE_TEST_RUNS:-$([ "${CI:-}" = true ] && echo 5 || echo 1)}
for run in $(seq 1 "$runs"); do
  echo "== Node: node --test (run $run of $runs) =="
  node --test --test-concurrency=$(($(nproc) + 1)) --test-reporter=spec "${@:-tests/node/}" ||
    { echo "test_node: run $run of $runs failed" >&2; exit 1; }
done
