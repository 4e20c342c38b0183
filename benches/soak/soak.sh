#!/usr/bin/env bash
# Soak: 1,000 keep-alive connections through `ferry proxy` in front of three `ferry node`s for
# a minute with `ferry-load mixed` (4-64 KiB objects, every GET verified), then the errors
# (goal: none) and the proxy's resident memory: at the start, at its peak, and after the run.
#
#   benches/soak/soak.sh [SECONDS] [CONNECTIONS]      (default 60 s, 1000 connections)
# PROXY_ARGS adds options to the proxy; FERRY=path runs another build of `ferry`.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-60}
CONNS=${2:-1000}
# Client, proxy and nodes each hold one descriptor per connection, and more.
ulimit -n "$(ulimit -Hn)"
cargo build --release -q -p ferry-server -p ferry-loadtest
FERRY=${FERRY:-$PWD/target/release/ferry}
LOAD=$PWD/target/release/ferry-load
WORK=$(mktemp -d)
export FERRY_ACCESS_KEY=soakkey FERRY_SECRET_KEY=soaksecret1234567890
# The nodes and the proxy share a cluster key (the proxy seals what only the cluster may ask).
export FERRY_CLUSTER_KEY="${FERRY_CLUSTER_KEY:-$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')}"
cleanup() {
  # `start` runs in a command substitution (a subshell): its pids are in the pid files.
  for f in "$WORK"/*.pid; do [ -e "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

start() { # name args... -> prints the address of its ready line
  local name=$1; shift
  "$FERRY" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  echo $! >"$WORK/$name.pid"
  for _ in $(seq 100); do
    if grep -q "listening on http://" "$WORK/$name.out"; then
      sed -n 's#.*listening on http://##p' "$WORK/$name.out" | head -1
      return
    fi
    sleep 0.1
  done
  echo "$name did not start" >&2; cat "$WORK/$name.err" >&2; exit 1
}
rss() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
hwm() { awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

BACKENDS=()
for i in 1 2 3; do
  addr=$(start "node$i" node --data "$WORK/node$i" --listen 127.0.0.1:0 --no-fsync --admin-listen none)
  BACKENDS+=(--backend "n$i=http://$addr")
done
PROXY=$(start proxy proxy --listen 127.0.0.1:0 --admin-listen none "${BACKENDS[@]}" ${PROXY_ARGS:-})
PROXY_PID=$(cat "$WORK/proxy.pid")
echo "proxy RSS at start: $(rss "$PROXY_PID") MiB"

"$LOAD" mixed --endpoint "http://$PROXY" --bucket soak --size 4KiB..64KiB --concurrency "$CONNS" \
  --duration "${SECS}s" --objects 2000 --quiet --json "$WORK/soak.json" >/dev/null || true
python3 - "$WORK/soak.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ops = sum(s["ops"] for s in r["stats"])
errors = {}
for s in r["stats"]:
    e = s["errors"]
    for k, v in (e.items() if isinstance(e, dict) else [("errors", e)]):
        errors[k] = errors.get(k, 0) + v
print(f"{ops} operations in {r['elapsed_s']:.0f} s, {sum(errors.values())} errors {errors}")
PY
echo "proxy RSS: peak $(hwm "$PROXY_PID") MiB, at the end of the run $(rss "$PROXY_PID") MiB"
# The listeners trim the buffer pool (and glibc's arenas) every 10 s.
sleep 12
echo "proxy RSS 12 s after the run: $(rss "$PROXY_PID") MiB"
