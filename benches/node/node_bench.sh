#!/usr/bin/env bash
# PUT and GET of 1 MiB objects at 16 connections against one `ferry node` process, on each
# runtime: throughput from ferry-load, node CPU-seconds per GB from /proc/PID/stat. Then GET of
# one 1 MiB object with wrk (one thread, 16 connections, a presigned URL) from a node on one
# worker thread, with sendfile(2) and with --no-sendfile, next to nginx (`sendfile on`, one
# process) serving the same bytes as a file: server CPU-seconds per GB, and their ratio.
#   benches/node/node_bench.sh [SECONDS]        (default 10 s per phase)
#   NGINX_BIN=/path/to/nginx (default /usr/sbin/nginx); wrk and nginx missing: that part is skipped
# Environment: FERRY=path (a node binary to measure instead of building this tree's),
# OPS="put" (the phases, default "put get"), NODE_ARGS="--no-fsync" (extra node options),
# OUT=dir (keep each phase's ferry-load report there as RUNTIME-OP.json, e.g. tokio-put.json,
# for `ferry-load compare A... -- B...` of several runs; without it they are deleted).
set -euo pipefail
out=${OUT:+$(realpath -m "$OUT")}
cd "$(dirname "$0")/../.."
secs=${1:-10}
if [ -z "${FERRY:-}" ]; then cargo build --release -q -p ferry-server -p ferry-loadtest; fi
ferry=${FERRY:-target/release/ferry}
load=${FERRY_LOAD:-target/release/ferry-load}
ops=${OPS:-put get}
node_args=${NODE_ARGS:-}
[ -n "$out" ] && mkdir -p "$out"
export FERRY_ACCESS_KEY=benchkey FERRY_SECRET_KEY=benchsecret1234567890
tick=$(getconf CLK_TCK)
cpu_s() { awk -v t="$tick" '{print ($14 + $15) / t}' "/proc/$1/stat"; }

printf '%-6s %-4s %10s %10s %12s %14s\n' runtime op "MB/s" "GB" "node CPU s" "CPU s per GB"
# A run cut short (Ctrl-C, a closed pipe) must not leave gigabytes of objects behind: a nearly
# full disk makes every later PUT figure on it worse.
dir= pid=
trap '[ -n "$pid" ] && kill -TERM "$pid" 2> /dev/null; [ -n "$dir" ] && rm -rf "$dir"' EXIT
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
    [ -n "$out" ] && cp "$dir/$op.json" "$out/$rt-$op.json"
  done
  kill -TERM $pid; wait $pid || true
  rm -rf "$dir"
  dir= pid=
done

# GET with wrk: the node (sendfile, then --no-sendfile) next to nginx with `sendfile on`.
nginx=${NGINX_BIN:-/usr/sbin/nginx}
if ! command -v wrk > /dev/null || [ ! -x "$nginx" ]; then
  echo "wrk or $nginx missing: GET next to nginx skipped" >&2
  exit 0
fi
work=$(mktemp -d)
node_pid= nginx_pid=
cleanup() {
  [ -n "$node_pid" ] && kill -TERM "$node_pid" 2> /dev/null && wait "$node_pid" 2> /dev/null
  [ -n "$nginx_pid" ] && kill -TERM "$nginx_pid" 2> /dev/null && wait "$nginx_pid" 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT
# wrk against URL while PID serves it: prints a row, leaves CPU s per GB in $work/LABEL.cpugb.
wrk_row() { # LABEL PID URL
  local label=$1 pid=$2 url=$3 before after
  before=$(cpu_s "$pid")
  wrk -t1 -c16 -d"${secs}s" "$url" > "$work/$label.wrk"
  after=$(cpu_s "$pid")
  python3 - "$work/$label.wrk" "$label" "$before" "$after" 1048576 > "$work/$label.row" <<'PY'
import re, sys
path, label, before, after, size = sys.argv[1:]
out = open(path).read()
m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
requests, secs = int(m.group(1)), float(m.group(2)) * (60 if m.group(3) == "m" else 1)
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
errors = int(non2xx.group(1)) if non2xx else 0
gb = (requests - errors) * int(size) / 1e9
cpu = float(after) - float(before)
per_gb = cpu / gb if gb else float("nan")
open(path.replace(".wrk", ".cpugb"), "w").write(f"{per_gb}\n")
print(f"{label:<22} {gb * 1e3 / secs:10.1f} {gb:10.2f} {cpu:12.2f} {per_gb:14.3f}   ({requests} requests, {errors} errors)")
PY
  cat "$work/$label.row"
}
start_node() { # RUNTIME [OPTIONS]: node_pid, ep
  local rt=$1; shift
  $ferry node --data "$work/data" --listen 127.0.0.1:0 --runtime "$rt" --threads 1 --no-fsync "$@" \
    > "$work/node.out" 2> "$work/node.err" &
  node_pid=$!
  for _ in $(seq 100); do grep -q listening "$work/node.out" 2> /dev/null && break; sleep 0.1; done
  ep=$(sed -n 's/^ferry node listening on //p' "$work/node.out")
}
stop_node() { kill -TERM "$node_pid"; wait "$node_pid" || true; node_pid=; }

echo
echo "GET 1 MiB, wrk -t1 -c16 ${secs}s, server on one thread"
printf '%-22s %10s %10s %12s %14s\n' server "MB/s" "GB" "server CPU s" "CPU s per GB"
mkdir -p "$work/www"
start_node tokio
# One object (`<prefix><id as 16 hex digits>-<size>`), and the same bytes for nginx.
$load get --endpoint "$ep" --bucket bench --prefix wrk/ --size 1MiB --objects 1 --keep-data \
  --concurrency 1 --duration 1s --quiet > /dev/null
url=$($load presign --endpoint "$ep" --bucket bench --key wrk/0000000000000000-1048576 --expires 3600)
python3 -c 'import sys, urllib.request; open(sys.argv[2], "wb").write(urllib.request.urlopen(sys.argv[1]).read())' \
  "$url" "$work/www/obj"
stop_node
for rt in tokio smol; do
  for mode in sendfile copy; do
    opts=()
    [ "$mode" = copy ] && opts=(--no-sendfile)
    start_node "$rt" "${opts[@]}"
    url=$($load presign --endpoint "$ep" --bucket bench --key wrk/0000000000000000-1048576 --expires 3600)
    wrk_row "node-$rt-$mode" "$node_pid" "$url"
    stop_node
  done
done
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$work/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
error_log $work/nginx.err;
pid $work/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  keepalive_requests 1000000;
  client_body_temp_path $work/tmp;
  proxy_temp_path $work/tmp;
  fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp;
  scgi_temp_path $work/tmp;
  server {
    listen 127.0.0.1:$port;
    root $work/www;
  }
}
CONF
env -u NGINX "$nginx" -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 100); do python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' "$port" 2> /dev/null && break; sleep 0.1; done
wrk_row nginx-sendfile "$nginx_pid" "http://127.0.0.1:$port/obj"
for rt in tokio smol; do
  python3 -c 'import sys; print(f"GET node/nginx CPU-s per GB ratio: {float(sys.argv[1]) / float(sys.argv[2]):.2f} ({sys.argv[3]}; with --no-sendfile: {float(sys.argv[4]) / float(sys.argv[2]):.2f})")' \
    "$(cat "$work/node-$rt-sendfile.cpugb")" "$(cat "$work/nginx-sendfile.cpugb")" "$rt" "$(cat "$work/node-$rt-copy.cpugb")"
done
