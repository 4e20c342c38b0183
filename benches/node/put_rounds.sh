#!/usr/bin/env bash
# PUT of 1 MiB bodies with wrk (one thread, 16 connections, one presigned URL, so every PUT
# replaces the same key) to nodes, alternating with nginx's WebDAV module (`dav_methods PUT`,
# one process: the body goes to a temp file, which is renamed over the target; no fsync, no
# MD5) ROUNDS times: server CPU-seconds per GB of each, per round, and the median of the
# per-round ratios node/nginx. nginx is the floor of receiving a body and writing it as a file
# on this machine; what the node adds is its MD5, its fsyncs and its metadata commit.
#   benches/node/put_rounds.sh [ROUNDS] [SECONDS]     (default 4 rounds of 5 s per server)
# Environment: FERRY="label=path label2=path2" (node binaries; default this tree's release
# build as "node"), RUNTIME=tokio|smol (default tokio), NODE_ARGS (extra node options, e.g.
# --no-fsync). Needs wrk, nginx with the dav module (Debian nginx-light), python3 with botocore.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-4}
secs=${2:-5}
if [ -z "${FERRY:-}" ]; then
  cargo build --release -q -p ferry-server
  FERRY="node=target/release/ferry"
fi
rt=${RUNTIME:-tokio}
nginx=${NGINX:-/usr/sbin/nginx}
command -v wrk > /dev/null || { echo "wrk missing" >&2; exit 1; }
[ -x "$nginx" ] || { echo "$nginx missing" >&2; exit 1; }
export FERRY_ACCESS_KEY=benchkey FERRY_SECRET_KEY=benchsecret1234567890
presign=benches/proxy/presign.py
put_lua=benches/proxy/put.lua
tick=$(getconf CLK_TCK)
cpu_s() { awk -v t="$tick" '{print ($14 + $15) / t}' "/proc/$1/stat"; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null && wait "$p" 2> /dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/www/bench" "$work/tmp"

labels=()
declare -A url pid
for spec in $FERRY; do
  label=${spec%%=*} bin=${spec#*=}
  labels+=("$label")
  mkdir -p "$work/$label"
  $bin node --data "$work/$label/data" --listen 127.0.0.1:0 --runtime "$rt" ${NODE_ARGS:-} \
    > "$work/$label/out" 2> "$work/$label/err" &
  pid[$label]=$!
  pids+=("${pid[$label]}")
  for _ in $(seq 100); do grep -q listening "$work/$label/out" 2> /dev/null && break; sleep 0.1; done
  ep=$(sed -n 's/^ferry node listening on //p' "$work/$label/out")
  python3 "$presign" CREATE "$ep" bench
  url[$label]=$(python3 "$presign" PUT "$ep" bench obj-1mib)
done
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$work/nginx.conf" << CONF
daemon off;
master_process off;
worker_processes 1;
error_log $work/nginx.err;
pid $work/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_max_body_size 2m;
  client_body_temp_path $work/tmp;
  proxy_temp_path $work/tmp;
  fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp;
  scgi_temp_path $work/tmp;
  server {
    listen 127.0.0.1:$port;
    root $work/www;
    dav_methods PUT;
  }
}
CONF
"$nginx" -p "$work" -c "$work/nginx.conf" &
pid[nginx]=$!
pids+=("${pid[nginx]}")
url[nginx]="http://127.0.0.1:$port/bench/obj-1mib"
for _ in $(seq 100); do python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' "$port" 2> /dev/null && break; sleep 0.1; done

# CPU s per GB of LABEL for one wrk run (2xx responses only).
measure() {
  local label=$1 before after
  before=$(cpu_s "${pid[$label]}")
  wrk -t1 -c16 -d"${secs}s" -s "$put_lua" "${url[$label]}" > "$work/wrk.out"
  after=$(cpu_s "${pid[$label]}")
  python3 - "$work/wrk.out" "$before" "$after" << 'PY'
import re, sys
out = open(sys.argv[1]).read()
m = re.search(r"(\d+) requests in", out)
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
ok = int(m.group(1)) - (int(bad.group(1)) if bad else 0)
if ok == 0:
    sys.exit(f"no successful PUT:\n{out}")
print((float(sys.argv[3]) - float(sys.argv[2])) / (ok * 1048576 / 1e9))
PY
}
echo "PUT 1 MiB, wrk -t1 -c16 ${secs}s per server per round, $rt ${NODE_ARGS:-}, server CPU s per GB"
printf '%-6s' round; for l in "${labels[@]}" nginx; do printf ' %10s' "$l"; done; echo
: > "$work/ratios"
for r in $(seq "$rounds"); do
  declare -A got=()
  for l in "${labels[@]}" nginx; do got[$l]=$(measure "$l"); done
  printf '%-6s' "$r"; for l in "${labels[@]}" nginx; do printf ' %10.3f' "${got[$l]}"; done; echo
  for l in "${labels[@]}"; do echo "$l ${got[$l]} ${got[nginx]}" >> "$work/ratios"; done
done
python3 - "$work/ratios" << 'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, node, nginx = line.split()
    rows.setdefault(label, []).append(float(node) / float(nginx))
for label, rs in rows.items():
    print(f"PUT {label}/nginx CPU-s per GB ratio: median {statistics.median(rs):.2f} "
          f"(rounds: {', '.join(f'{r:.2f}' for r in rs)})")
PY
