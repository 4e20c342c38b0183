#!/usr/bin/env bash
# Nodes against nginx in alternating rounds, with wrk (one thread, 16 connections, one presigned
# URL): server CPU-seconds per GB of each, per round, and the median of the per-round ratios
# node/nginx. Alternating in rounds is what makes a ratio trustworthy on a noisy 2-core VM, where
# one 8 s run of each moved nginx's own figure by 40 %.
#   get: GET of one 1 MiB object from nodes on one worker thread with sendfile(2) (--no-fsync),
#        against nginx (`sendfile on`, one process) serving the same bytes as a file.
#   put: PUT of 1 MiB bodies, every one replacing the same key, to nodes (fsync on unless
#        NODE_ARGS says otherwise), against nginx's WebDAV module (`dav_methods PUT`, one
#        process: the body goes to a temp file, which is renamed over the target; no fsync, no
#        MD5): the floor of receiving a body and writing it as a file on this machine.
#   benches/node/rounds.sh get|put [ROUNDS] [SECONDS]     (default 6 rounds of 4 s per server)
# Environment: FERRY="label=path label2=path2" (node binaries to compare; default this tree's
# release build as "node"), RUNTIME=tokio|smol (default tokio), NODE_ARGS (extra node options).
# Needs wrk, nginx with the dav module (Debian nginx-light), python3 with botocore.
set -euo pipefail
cd "$(dirname "$0")/../.."
op=${1:?usage: benches/node/rounds.sh get|put [ROUNDS] [SECONDS]}
rounds=${2:-6}
secs=${3:-4}
case $op in
  get) node_opts=(--threads 1 --no-fsync) nginx_opts="sendfile on;" wrk_opts=() ;;
  put) node_opts=() nginx_opts="dav_methods PUT; client_max_body_size 2m;" wrk_opts=(-s benches/proxy/put.lua) ;;
  *) echo "usage: benches/node/rounds.sh get|put [ROUNDS] [SECONDS]" >&2; exit 2 ;;
esac
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
head -c 1048576 /dev/urandom > "$work/1mib"

# One node per binary and nginx, all started once; for GET each holds the same 1 MiB object.
labels=()
declare -A url pid
for spec in $FERRY; do
  label=${spec%%=*} bin=${spec#*=}
  labels+=("$label")
  mkdir -p "$work/$label"
  $bin node --data "$work/$label/data" --listen 127.0.0.1:0 --runtime "$rt" "${node_opts[@]}" \
    ${NODE_ARGS:-} > "$work/$label/out" 2> "$work/$label/err" &
  pid[$label]=$!
  pids+=("${pid[$label]}")
  for _ in $(seq 100); do grep -q listening "$work/$label/out" 2> /dev/null && break; sleep 0.1; done
  ep=$(sed -n 's/^ferry node listening on //p' "$work/$label/out")
  python3 "$presign" CREATE "$ep" bench
  if [ "$op" = get ]; then
    curl -sf -T "$work/1mib" "$(python3 "$presign" PUT "$ep" bench obj-1mib)" -o /dev/null
    url[$label]=$(python3 "$presign" GET "$ep" bench obj-1mib)
  else
    url[$label]=$(python3 "$presign" PUT "$ep" bench obj-1mib)
  fi
done
cp "$work/1mib" "$work/www/bench/obj-1mib"
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
  client_body_temp_path $work/tmp;
  proxy_temp_path $work/tmp;
  fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp;
  scgi_temp_path $work/tmp;
  server {
    listen 127.0.0.1:$port;
    root $work/www;
    $nginx_opts
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
  wrk -t1 -c16 -d"${secs}s" "${wrk_opts[@]}" "${url[$label]}" > "$work/wrk.out"
  after=$(cpu_s "${pid[$label]}")
  python3 - "$work/wrk.out" "$before" "$after" << 'PY'
import re, sys
out = open(sys.argv[1]).read()
m = re.search(r"(\d+) requests in", out)
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
ok = int(m.group(1)) - (int(bad.group(1)) if bad else 0)
if ok == 0:
    sys.exit(f"no successful request:\n{out}")
print((float(sys.argv[3]) - float(sys.argv[2])) / (ok * 1048576 / 1e9))
PY
}
OP=${op^^}
echo "$OP 1 MiB, wrk -t1 -c16 ${secs}s per server per round, $rt ${NODE_ARGS:-}, server CPU s per GB"
printf '%-6s' round; for l in "${labels[@]}" nginx; do printf ' %10s' "$l"; done; echo
: > "$work/ratios"
for r in $(seq "$rounds"); do
  declare -A got=()
  for l in "${labels[@]}" nginx; do got[$l]=$(measure "$l"); done
  printf '%-6s' "$r"; for l in "${labels[@]}" nginx; do printf ' %10.3f' "${got[$l]}"; done; echo
  for l in "${labels[@]}"; do echo "$l ${got[$l]} ${got[nginx]}" >> "$work/ratios"; done
done
python3 - "$work/ratios" "$OP" << 'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, node, nginx = line.split()
    rows.setdefault(label, []).append(float(node) / float(nginx))
for label, rs in rows.items():
    print(f"{sys.argv[2]} {label}/nginx CPU-s per GB ratio: median {statistics.median(rs):.2f} "
          f"(rounds: {', '.join(f'{r:.2f}' for r in rs)})")
PY
