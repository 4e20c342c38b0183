#!/usr/bin/env bash
# Idle-connection floods against one `ferry node` and one `ferry proxy` (in front of a node),
# each in its own process: the server's resident memory before, at the peak and after, from
# /proc (flood.py).
#   benches/flood/flood.sh [CONNS] [ROUNDS] [RUNTIME]     (default 10000 connections, 4 rounds, tokio)
#
# The servers get a connection cap above CONNS and a 120 s head timeout, so that every
# connection of a round stays open while it is measured (with the defaults the cap, derived
# from the open-file limit, and the 10 s head timeout would close some: less memory, not the
# case measured). FERRY=path runs another build of `ferry`.
set -euo pipefail
cd "$(dirname "$0")/../.."
conns=${1:-10000}
rounds=${2:-4}
rt=${3:-tokio}
ulimit -n "$(ulimit -Hn)"
if [ -z "${FERRY:-}" ]; then
  cargo build --release -q -p ferry-server
  FERRY=target/release/ferry
fi
export FERRY_ACCESS_KEY=floodkey FERRY_SECRET_KEY=floodsecret1234567890
# The nodes and the proxy share a cluster key (the proxy seals what only the cluster may ask).
export FERRY_CLUSTER_KEY="${FERRY_CLUSTER_KEY:-$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')}"
limits=(--max-connections $((conns + 1000)) --header-timeout-ms 120000)
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT

# start NAME ARGS...: run `ferry ARGS` in the background; sets $pid and $addr.
start() {
  local name=$1
  shift
  "$FERRY" "$@" > "$dir/$name.out" 2> "$dir/$name.err" &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do grep -q listening "$dir/$name.out" 2>/dev/null && break; sleep 0.1; done
  addr=$(sed -n 's/^ferry [a-z]* listening on http:\/\///p' "$dir/$name.out")
  [ -n "$addr" ] || { cat "$dir/$name.err"; exit 1; }
}

echo "== ferry node ($rt), $conns idle connections x $rounds rounds"
start node node --data "$dir/node" --listen 127.0.0.1:0 --admin-listen none --no-fsync \
  --runtime "$rt" "${limits[@]}"
node_addr=$addr
python3 benches/flood/flood.py --pid "$pid" --addr "$addr" --conns "$conns" --rounds "$rounds"

echo "== ferry proxy ($rt) in front of that node, $conns idle connections x $rounds rounds"
start proxy proxy --listen 127.0.0.1:0 --admin-listen none --backend "n1=http://$node_addr" \
  --runtime "$rt" "${limits[@]}"
python3 benches/flood/flood.py --pid "$pid" --addr "$addr" --conns "$conns" --rounds "$rounds"
