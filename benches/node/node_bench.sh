#!/usr/bin/env bash
# PUT and GET of 1 MiB objects at 16 connections against one `ferry node` process, on each
# runtime: throughput from ferry-load, node CPU-seconds per GB from /proc/PID/stat.
#   benches/node/node_bench.sh [SECONDS]        (default 10 s per phase)
# Environment: FERRY=path (a node binary to measure instead of building this tree's),
# OPS="put" (the phases, default "put get"), NODE_ARGS="--no-fsync" (extra node options).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
if [ -z "${FERRY:-}" ]; then cargo build --release -q -p ferry-server -p ferry-loadtest; fi
ferry=${FERRY:-target/release/ferry}
load=${FERRY_LOAD:-target/release/ferry-load}
ops=${OPS:-put get}
node_args=${NODE_ARGS:-}
export FERRY_ACCESS_KEY=benchkey FERRY_SECRET_KEY=benchsecret1234567890
tick=$(getconf CLK_TCK)
cpu_s() { awk -v t="$tick" '{print ($14 + $15) / t}' "/proc/$1/stat"; }

printf '%-6s %-4s %10s %10s %12s %14s\n' runtime op "MB/s" "GB" "node CPU s" "CPU s per GB"
for rt in tokio smol; do
  dir=$(mktemp -d)
  $ferry node --data "$dir" --listen 127.0.0.1:0 --runtime "$rt" $node_args > "$dir/out" 2> "$dir/err" &
  pid=$!
  for _ in $(seq 100); do grep -q listening "$dir/out" 2>/dev/null && break; sleep 0.1; done
  ep=$(sed -n 's/^ferry node listening on //p' "$dir/out")
  for op in $ops; do
    before=$(cpu_s $pid)
    $load "$op" --endpoint "$ep" --bucket bench --size 1MiB --concurrency 16 --duration "${secs}s" \
      --objects 256 --keep-data --quiet --json "$dir/$op.json" > /dev/null || true
    after=$(cpu_s $pid)
    python3 - "$dir/$op.json" "$rt" "$op" "$before" "$after" <<'PY'
import json, sys
path, rt, op, before, after = sys.argv[1:]
r = json.load(open(path))
# Rows of the measured operation (one per endpoint; one endpoint here).
rows = [s for s in r["stats"] if s["op"] == op]
ops = sum(s["ops"] for s in rows)
gb = sum(s["bytes"] for s in rows) / 1e9
errors = sum(sum(s["errors"].values()) if isinstance(s["errors"], dict) else s["errors"] for s in rows)
secs = r["elapsed_s"]
cpu = float(after) - float(before)
print(f"{rt:<6} {op:<4} {gb * 1e3 / secs:10.1f} {gb:10.2f} {cpu:12.2f} {cpu / gb if gb else float('nan'):14.3f}   ({ops} ops, {errors} errors)")
PY
  done
  kill -TERM $pid; wait $pid || true
  rm -rf "$dir"
done
