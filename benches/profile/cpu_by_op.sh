#!/usr/bin/env bash
# Does the per-operation CPU on /metrics add up? Loads a `ferry node` process (and then a
# `ferry proxy` process in front of two nodes) with `ferry-load mixed` (1 MiB objects, 16
# connections), scrapes the server's admin listener before and after, and prints per
# operation: CPU seconds, body bytes, CPU-seconds per GB (ferry_<server>_request_cpu_seconds
# over request_bytes_{in,out}), then the sum over operations against the process's CPU from
# /proc/PID/stat and process_cpu_seconds_total: the share the requests account for.
#   benches/profile/cpu_by_op.sh [SECONDS]     (default 10 s per server)
# Environment: FERRY, FERRY_LOAD (binaries; default: build this tree's, release), SIZE (1MiB),
# CONNECTIONS (16), RUNTIME (tokio).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
if [ -z "${FERRY:-}" ]; then cargo build --release -q -p ferry-server -p ferry-loadtest; fi
ferry=${FERRY:-target/release/ferry}
load=${FERRY_LOAD:-target/release/ferry-load}
size=${SIZE:-1MiB}
conns=${CONNECTIONS:-16}
runtime=${RUNTIME:-tokio}
export FERRY_ACCESS_KEY=benchkey FERRY_SECRET_KEY=benchsecret1234567890
# The nodes and the proxy share a cluster key (the proxy seals what only the cluster may ask).
export FERRY_CLUSTER_KEY="${FERRY_CLUSTER_KEY:-$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')}"
tick=$(getconf CLK_TCK)
cpu_s() { awk -v t="$tick" '{print ($14 + $15) / t}' "/proc/$1/stat"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null || true; done; wait 2> /dev/null; rm -rf "$work"' EXIT

# start NAME ARGS...: run `ferry ARGS` in the background, wait for its ready line; sets $pid, $ep.
start() {
  local name=$1; shift
  "$ferry" "$@" > "$work/$name.out" 2> "$work/$name.err" &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do grep -q listening "$work/$name.out" 2> /dev/null && break; sleep 0.05; done
  ep=$(sed -n 's/^ferry [a-z]* listening on \([^ ]*\).*/\1/p' "$work/$name.out")
  [ -n "$ep" ] || { cat "$work/$name.err" >&2; exit 1; }
}

# measure SERVER PID ADMIN ENDPOINT: load ENDPOINT, print the figures of SERVER's admin.
measure() {
  local server=$1 pid=$2 admin=$3 endpoint=$4
  curl -s "http://$admin/metrics" > "$work/before"
  local before; before=$(cpu_s "$pid")
  "$load" mixed --endpoint "$endpoint" --bucket cpubench --size "$size" --concurrency "$conns" \
    --duration "${secs}s" --objects 64 --quiet --json "$work/$server.json" > /dev/null
  local after; after=$(cpu_s "$pid")
  curl -s "http://$admin/metrics" > "$work/after"
  python3 - "$server" "$work/before" "$work/after" "$before" "$after" <<'PY'
import re, sys
server, fb, fa, cpu0, cpu1 = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
def parse(path):
    out = {}
    for line in open(path):
        m = re.match(r'^(ferry_\w+)(\{[^}]*\})? (\S+)$', line.strip())
        if m:
            out[(m.group(1), m.group(2) or '')] = float(m.group(3))
    return out
b, a = parse(fb), parse(fa)
p = f'ferry_{server}_'
delta = lambda k: a.get(k, 0.0) - b.get(k, 0.0)
ops = sorted({l for (n, l) in a if n == p + 'request_cpu_seconds_total'})
print(f'{server}: {"operation":<34} {"CPU s":>8} {"GB":>8} {"CPU s/GB":>9}')
total = 0.0
for l in ops:
    cpu = delta((p + 'request_cpu_seconds_total', l))
    gb = (delta((p + 'request_bytes_in_total', l)) + delta((p + 'request_bytes_out_total', l))) / 1e9
    total += cpu
    if cpu > 0:
        per = f'{cpu / gb:9.3f}' if gb > 0 else f'{"-":>9}'
        print(f'{server}: {l:<34} {cpu:8.3f} {gb:8.3f} {per}')
proc_stat = cpu1 - cpu0
proc_metric = delta((p + 'process_cpu_seconds_total', ''))
blocking = delta((p + 'blocking_cpu_seconds_total', ''))
print(f'{server}: sum over operations {total:.3f} s; process CPU {proc_stat:.3f} s (/proc), '
      f'{proc_metric:.3f} s (metric): the requests account for {total / proc_metric * 100:.1f}% '
      f'(blocking pool jobs in them: {blocking:.3f} s)')
PY
}

echo "== one ferry node ($runtime), ferry-load mixed $size at $conns connections for ${secs}s"
admin=127.0.0.1:$(free_port)
start node node --data "$work/n0" --listen 127.0.0.1:0 --admin-listen "$admin" --runtime "$runtime"
measure node "$pid" "$admin" "$ep"

echo "== ferry proxy ($runtime) in front of two nodes"
start n1 node --data "$work/n1" --listen 127.0.0.1:0 --admin-listen none --runtime "$runtime"
ep1=$ep
start n2 node --data "$work/n2" --listen 127.0.0.1:0 --admin-listen none --runtime "$runtime"
ep2=$ep
admin=127.0.0.1:$(free_port)
start proxy proxy --listen 127.0.0.1:0 --admin-listen "$admin" --runtime "$runtime" \
  --backend "n1=$ep1" --backend "n2=$ep2"
measure proxy "$pid" "$admin" "$ep"
