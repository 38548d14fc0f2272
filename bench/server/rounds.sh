#!/usr/bin/env bash
# The rounds of bench/server/run.sh, which builds the programs and runs this under bench/servers.py (its Redis):
#   rounds.sh REDIS_PORT RATEWARDEN_SERVER PEER_SERVICE_CMD GHZ
# 1. "1,000 keys never denied": ours on Redis, the peer, ours on memory://, in turn, BENCH_ROUNDS times at c=50,
#    then at c=200. 2. For information, a descriptor no rule matches (answered OK with no store call): what gRPC,
#    parsing and matching cost each server. 3. "one key flooded": ours on Redis with ?mode=local_first, the peer.
# Every server is started here (bound to this shell: they get SIGKILL when it dies) and stopped on any exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
redis_port=$1 ours_bin=$2 peer_bin=$3 ghz=$4
rounds=${BENCH_ROUNDS:-3}
seconds=${BENCH_SECONDS:-5}
config=bench/server/config  # one directory, loaded unchanged by both
redis_pid=$(redis-cli -p "$redis_port" info server | tr -d '\r' | sed -n 's/^process_id://p')

work=$(mktemp -d)
declare -A pid=() grpc=() http=()
stop() {  # side
  [ -n "${pid[$1]:-}" ] || return 0
  kill "${pid[$1]}" 2>/dev/null || true
  wait "${pid[$1]}" 2>/dev/null || true
  unset "pid[$1]"
}
cleanup() {
  for side in "${!pid[@]}"; do stop "$side"; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {  # message [log]
  echo "rounds.sh: $1" >&2
  [ -z "${2:-}" ] || tail -n 20 "$2" >&2
  exit 1
}

start_ours() {  # side store-url
  local log=$work/$1.log
  setpriv --pdeathsig KILL "$ours_bin" --config "$config" --store "$2" --grpc-listen 127.0.0.1:0 \
    --http-listen 127.0.0.1:0 >"$log" 2>&1 &
  pid[$1]=$!
  for _ in $(seq 100); do
    if grep -q '^ratewarden-server: gRPC on' "$log"; then
      grpc[$1]=$(sed -n 's/^ratewarden-server: gRPC on 127.0.0.1:\([0-9]*\),.*/\1/p' "$log")
      http[$1]=$(sed -n 's/^ratewarden-server: .*, HTTP on 127.0.0.1:\([0-9]*\),.*/\1/p' "$log")
      echo "   $1: ratewarden-server --store $2, pid ${pid[$1]}, gRPC port ${grpc[$1]}"
      return
    fi
    kill -0 "${pid[$1]}" 2>/dev/null || fail "ratewarden-server ($1) exited" "$log"
    sleep 0.1
  done
  fail "ratewarden-server ($1) did not start within 10 s" "$log"
}

start_peer() {
  local log=$work/peer.log ports
  read -r -a ports < <(python3 -c 'import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
  grpc[peer]=${ports[0]} http[peer]=${ports[1]}
  # Research notes (docs: envoyproxy/ratelimit's src/settings/settings.go): loopback only, no statsd, TCP to our
  # Redis, its recommended pipeline window, the RateLimit-* headers on as ours are, its local cache off (default).
  env USE_STATSD=false LOG_LEVEL=error RUNTIME_ROOT="$PWD/bench" RUNTIME_SUBDIRECTORY=server \
    RUNTIME_APPDIRECTORY=config RUNTIME_WATCH_ROOT=false RUNTIME_IGNOREDOTFILES=true BACKEND_TYPE=redis \
    REDIS_SOCKET_TYPE=tcp REDIS_TYPE=single REDIS_URL="127.0.0.1:$redis_port" REDIS_POOL_SIZE=10 \
    REDIS_PIPELINE_WINDOW=150us LOCAL_CACHE_SIZE_IN_BYTES=0 LIMIT_RESPONSE_HEADERS_ENABLED=true \
    HOST=127.0.0.1 PORT="${ports[1]}" GRPC_HOST=127.0.0.1 GRPC_PORT="${ports[0]}" DEBUG_HOST=127.0.0.1 \
    DEBUG_PORT="${ports[2]}" GOMAXPROCS=2 setpriv --pdeathsig KILL "$peer_bin" >"$log" 2>&1 &
  pid[peer]=$!
  python3 bench/server/probe.py ready "${http[peer]}" "${pid[peer]}" || fail "envoyproxy/ratelimit did not start" "$log"
  echo "   peer: envoyproxy/ratelimit on redis://127.0.0.1:$redis_port, pid ${pid[peer]}, gRPC port ${grpc[peer]}"
}

# One call through the server's HTTP /json: its overall code must be the one expected (a check that the rounds
# measure what they say: the 1,000 keys allowed, the flooded key denied).
expect() {  # side key value OK|OVER_LIMIT
  python3 bench/server/probe.py expect "${http[$1]}" "$2" "$3" "$4" || fail "$1: the probe failed"
}

ghz_command() {  # side concurrency data-file seconds: sets ghz_cmd
  ghz_cmd=("$ghz" --insecure --proto server/proto/envoy/service/ratelimit/v3/rls.proto -i server/proto
    --call envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit --data-file "$3" -c "$2" --connections 4
    -z "$4s" --duration-stop wait --format json "127.0.0.1:${grpc[$1]}")
}

warm_up() {  # side data-file: one second of load, not measured (connections, Redis scripts, allocator)
  ghz_command "$1" 50 "$2" 1
  "${ghz_cmd[@]}" >/dev/null
}

measure() {  # case concurrency side round data-file
  ghz_command "$3" "$2" "$5" "$seconds"
  python3 bench/server/round.py "${pid[$3]}" "$redis_pid" case="$1" c="$2" side="$3" round="$4" -- \
    "${ghz_cmd[@]}" >>"$work/results.jsonl"
  tail -n 1 "$work/results.jsonl" | python3 bench/server/table.py --line
}

# ghz sends message i % 1000 of the array to call i (v0.93.0's unary calls take a JSON array's messages in turn).
{
  printf '['
  for ((i = 0; i < 1000; i++)); do
    ((i == 0)) || printf ','
    printf '{"domain":"bench","descriptors":[{"entries":[{"key":"user","value":"u%d"}]}]}' "$i"
  done
  printf ']'
} >"$work/keys.json"
echo '{"domain":"bench","descriptors":[{"entries":[{"key":"flood","value":"attacker"}]}]}' >"$work/flood.json"
echo '{"domain":"bench","descriptors":[{"entries":[{"key":"none","value":"x"}]}]}' >"$work/no_rule.json"

echo "== $rounds rounds of ${seconds}s per side and case, redis-server pid $redis_pid"
echo "== 1,000 keys never denied"
start_ours ours_redis "redis://127.0.0.1:$redis_port"
start_ours ours_memory memory://
start_peer
for side in ours_redis peer ours_memory; do
  warm_up "$side" "$work/keys.json"
  expect "$side" user probe OK
done
for c in 50 200; do
  for ((r = 1; r <= rounds; r++)); do
    for side in ours_redis peer ours_memory; do measure keys "$c" "$side" "$r" "$work/keys.json"; done
  done
done
for side in ours_redis peer ours_memory; do expect "$side" user probe OK; done
echo "   Redis holds $(redis-cli -p "$redis_port" dbsize) keys (1,000 from each server on Redis, and the probes)"
stop ours_redis

echo "== no rule matched (each server's floor: gRPC, parsing and matching, no store call)"
for side in ours_memory peer; do expect "$side" none x OK; done
for c in 50 200; do
  for ((r = 1; r <= rounds; r++)); do
    for side in ours_memory peer; do measure no_rule "$c" "$side" "$r" "$work/no_rule.json"; done
  done
done
stop ours_memory

echo "== one key flooded, all denied"
start_ours ours_local_first "redis://127.0.0.1:$redis_port?mode=local_first"
for side in ours_local_first peer; do
  warm_up "$side" "$work/flood.json"  # the day's one allowed call goes here
  expect "$side" flood attacker OVER_LIMIT
done
for c in 50 200; do
  for ((r = 1; r <= rounds; r++)); do
    for side in ours_local_first peer; do measure flood "$c" "$side" "$r" "$work/flood.json"; done
  done
done
for side in ours_local_first peer; do expect "$side" flood attacker OVER_LIMIT; done

echo
python3 bench/server/table.py <"$work/results.jsonl"
