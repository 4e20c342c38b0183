#!/usr/bin/env bash
# Proxy overhead: GET and PUT of 1 MiB objects at 16 connections
#   (a) straight to a storage node, (b) through `ferry proxy`, (c) through nginx
# (Debian nginx-light, proxy_buffering off, proxy_request_buffering off, 256 KiB buffers),
# all in front of the same node; prints throughput and the proxy's CPU-seconds per GB.
# Then 16 concurrent 256 MiB PUTs through a fresh `ferry proxy` and its peak RSS (VmHWM).
#
# Needs: wrk, nginx (nginx-light), curl, python3 with botocore. Requests are authenticated by
# SigV4 presigned URLs (made per endpoint, so the signed Host matches), which wrk can replay.
# Environment: DURATION (default 10s), CONNECTIONS (16), BIG_MB (256), BIG_CLIENTS (16),
# ROUNDS (1: how many times the direct/ferry/nginx comparison repeats, to show the spread),
# FERRY (a ferry binary to measure instead of building this tree's), NGINX_BIN (default: nginx on
# the PATH, else /usr/sbin/nginx, where Debian puts it).
set -euo pipefail

cd "$(dirname "$0")/../.."
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-16}
BIG_MB=${BIG_MB:-256}
BIG_CLIENTS=${BIG_CLIENTS:-16}
ROUNDS=${ROUNDS:-1}
HERE=benches/proxy
NGINX=${NGINX_BIN:-$(command -v nginx || echo /usr/sbin/nginx)}
for tool in wrk "$NGINX" curl python3; do
  command -v "$tool" >/dev/null || { echo "compare.sh: $tool is required" >&2; exit 1; }
done

# FERRY=path measures another build (benches/profile/alloc_ab.sh: the system allocator's).
if [ -z "${FERRY:-}" ]; then cargo build --release -q -p ferry-server; fi
FERRY=${FERRY:-$PWD/target/release/ferry}
WORK=$(mktemp -d)
export FERRY_ACCESS_KEY=benchkey FERRY_SECRET_KEY=benchsecret
# The nodes and the proxy share a cluster key (the proxy seals what only the cluster may ask).
export FERRY_CLUSTER_KEY="${FERRY_CLUSTER_KEY:-$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')}"
cleanup() {
  for f in "$WORK"/*.pid "$WORK"/nginx/nginx.pid; do
    [ -f "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null || true
  done
  sleep 1
  rm -rf "$WORK"
}
trap cleanup EXIT

# Start a ferry process; wait for its ready line; print the address.
start_ferry() { # name args...
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

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# CPU ticks (user + system) of some processes.
ticks() { local t=0; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }
HZ=$(getconf CLK_TCK)

NODE=$(start_ferry node node --data "$WORK/node" --listen 127.0.0.1:0 --no-fsync)
PROXY=$(start_ferry proxy proxy --listen 127.0.0.1:0 --admin-listen none --backend "n1=http://$NODE")
PROXY_PID=$(cat "$WORK/proxy.pid")

NGINX_PORT=$(free_port)
mkdir -p "$WORK/nginx/logs"
cat >"$WORK/nginx/nginx.conf" <<CONF
worker_processes auto;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx/body;
  proxy_temp_path $WORK/nginx/proxy;
  upstream node { server $NODE; keepalive 64; }
  server {
    listen 127.0.0.1:$NGINX_PORT;
    client_max_body_size 0;
    client_body_buffer_size 256k;
    location / {
      proxy_pass http://node;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_buffer_size 256k;
      proxy_buffers 4 256k;
    }
  }
}
CONF
# nginx takes an NGINX variable in its environment for inherited sockets: never pass one.
env -u NGINX "$NGINX" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf"
sleep 0.5
NGINX_PIDS=$(pgrep -P "$(cat "$WORK/nginx/nginx.pid")" | tr '\n' ' ')
NGINX_ALL="$(cat "$WORK/nginx/nginx.pid") $NGINX_PIDS"

python3 $HERE/presign.py CREATE "http://$NODE" bench
head -c 1048576 /dev/urandom >"$WORK/1mib"
curl -sf -T "$WORK/1mib" "$(python3 $HERE/presign.py PUT "http://$NODE" bench obj-1mib)" -o /dev/null

echo "ferry proxy vs nginx vs direct: 1 MiB objects, $CONNECTIONS connections, $DURATION each"
printf '%-8s %-5s %10s %16s\n' target op "MiB/s" "proxy CPU-s/GB"
run() { # label endpoint op pids...
  local label=$1 endpoint=$2 op=$3; shift 3
  local url
  url=$(python3 $HERE/presign.py "$op" "http://$endpoint" bench obj-1mib)
  local extra=()
  [ "$op" = PUT ] && extra=(-s "$HERE/put.lua")
  local t0; t0=$(ticks "$@")
  local out; out=$(wrk -t2 -c"$CONNECTIONS" -d"$DURATION" "${extra[@]}" "$url")
  local t1; t1=$(ticks "$@")
  local reqs; reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  local secs; secs=$(echo "$out" | awk '/requests in/ {gsub("s,","",$4); print $4}')
  local non2xx; non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  local mibs cpu
  # One request moves 1 MiB: MiB/s is requests per second.
  mibs=$(awk -v r="$reqs" -v s="$secs" 'BEGIN {printf "%.0f", r / s}')
  if [ "$label" = direct ]; then
    cpu="-"
  else
    cpu=$(awk -v t=$((t1 - t0)) -v hz="$HZ" -v r="$reqs" 'BEGIN {printf "%.2f", (t / hz) / (r * 1048576 / 1e9)}')
  fi
  printf '%-8s %-5s %10s %16s%s\n' "$label" "$op" "$mibs" "$cpu" "${non2xx:+  ($non2xx non-2xx!)}"
}
NODE_PID=$(cat "$WORK/node.pid")
for _ in $(seq "$ROUNDS"); do
  for op in GET PUT; do
    run direct "$NODE" $op "$NODE_PID"
    run ferry "$PROXY" $op "$PROXY_PID"
    # shellcheck disable=SC2086
    run nginx "127.0.0.1:$NGINX_PORT" $op $NGINX_ALL
  done
done

# Memory: a fresh proxy, BIG_CLIENTS concurrent BIG_MB MiB PUTs, its peak RSS.
kill -TERM "$PROXY_PID"
PROXY2=$(start_ferry proxy2 proxy --listen 127.0.0.1:0 --admin-listen none --backend "n1=http://$NODE")
PROXY2_PID=$(cat "$WORK/proxy2.pid")
head -c $((BIG_MB << 20)) /dev/zero >"$WORK/big"
URLS=()
for i in $(seq "$BIG_CLIENTS"); do
  URLS+=("$(python3 $HERE/presign.py PUT "http://$PROXY2" bench "big-$i")")
done
start=$(date +%s.%N)
CURLS=()
for url in "${URLS[@]}"; do
  curl -sf -T "$WORK/big" "$url" -o /dev/null &
  CURLS+=($!)
done
wait_ok=0
for p in "${CURLS[@]}"; do wait "$p" || wait_ok=1; done
end=$(date +%s.%N)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$PROXY2_PID/status")
rss=$(awk '/VmRSS/ {print $2}' "/proc/$PROXY2_PID/status")
awk -v n="$BIG_CLIENTS" -v mb="$BIG_MB" -v s="$start" -v e="$end" -v h="$hwm" -v r="$rss" -v ok="$wait_ok" 'BEGIN {
  printf "%d concurrent %d MiB PUTs through ferry proxy: %.1f s (%.0f MiB/s), proxy peak RSS %.1f MiB (now %.1f MiB)%s\n",
    n, mb, e - s, n * mb / (e - s), h / 1024, r / 1024, ok ? "  (some uploads failed!)" : ""
}'
