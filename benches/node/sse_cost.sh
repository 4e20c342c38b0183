#!/usr/bin/env bash
# What server-side encryption costs the node: CPU-seconds per GB of PUT and GET of 1 MiB, plain
# against SSE-S3, in alternating rounds on one node (wrk, one thread, 16 connections, one
# presigned URL per case; every PUT replaces the same key).
#   benches/node/sse_cost.sh [ROUNDS] [SECONDS]     (default 4 rounds of 4 s per case)
# Environment: FERRY (node binary, default this tree's release build), RUNTIME (tokio|smol),
# NODE_ARGS (extra node options, e.g. --no-sendfile to compare GETs that both copy).
# Needs wrk and python3 with botocore.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-4}
secs=${2:-4}
if [ -z "${FERRY:-}" ]; then cargo build --release -q -p ferry-server; fi
ferry=${FERRY:-target/release/ferry}
rt=${RUNTIME:-tokio}
export FERRY_ACCESS_KEY=benchkey FERRY_SECRET_KEY=benchsecret1234567890
tick=$(getconf CLK_TCK)
presign=benches/proxy/presign.py
work=$(mktemp -d "${DATA:-/var/tmp}/ferry-sse.XXXXXX")
pid=
trap '[ -n "$pid" ] && kill -TERM "$pid" 2> /dev/null; rm -rf "$work"' EXIT
# shellcheck disable=SC2086 # options split on purpose
$ferry node --data "$work/data" --listen 127.0.0.1:0 --runtime "$rt" --threads 1 ${NODE_ARGS:-} \
  > "$work/out" 2> "$work/err" &
pid=$!
for _ in $(seq 100); do grep -q listening "$work/out" 2> /dev/null && break; sleep 0.1; done
ep=$(sed -n 's/^ferry node listening on //p' "$work/out")
python3 "$presign" CREATE "$ep" bench
declare -A url lua
url[put-plain]=$(python3 "$presign" PUT "$ep" bench plain)
url[put-sse]=$(PRESIGN_SSE=AES256 python3 "$presign" PUT "$ep" bench sse)
lua[put-plain]=benches/proxy/put.lua
lua[put-sse]=benches/proxy/put_sse.lua
head -c 1048576 /dev/urandom > "$work/1mib"
curl -sf -T "$work/1mib" "${url[put-plain]}" -o /dev/null
curl -sf -T "$work/1mib" -H "x-amz-server-side-encryption: AES256" "${url[put-sse]}" -o /dev/null
url[get-plain]=$(python3 "$presign" GET "$ep" bench plain)
url[get-sse]=$(python3 "$presign" GET "$ep" bench sse)
cpu_s() { awk -v t="$tick" '{print ($14 + $15) / t}' "/proc/$pid/stat"; }
measure() {
  local c=$1 before after opts=()
  [ -n "${lua[$c]:-}" ] && opts=(-s "${lua[$c]}")
  before=$(cpu_s)
  wrk -t1 -c16 -d"${secs}s" "${opts[@]}" "${url[$c]}" > "$work/wrk.out"
  after=$(cpu_s)
  python3 - "$work/wrk.out" "$before" "$after" << 'PY'
import re, sys
out = open(sys.argv[1]).read()
n = int(re.search(r"(\d+) requests in", out).group(1))
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
ok = n - (int(bad.group(1)) if bad else 0)
if ok == 0:
    sys.exit(f"no successful request:\n{out}")
print((float(sys.argv[3]) - float(sys.argv[2])) / (ok * 1048576 / 1e9))
PY
}
cases=(put-plain put-sse get-plain get-sse)
echo "1 MiB, wrk -t1 -c16 ${secs}s per case per round, $rt ${NODE_ARGS:-}, node CPU s per GB"
printf '%-6s' round; for c in "${cases[@]}"; do printf ' %10s' "$c"; done; echo
: > "$work/rows"
for r in $(seq "$rounds"); do
  printf '%-6s' "$r"
  row=""
  for c in "${cases[@]}"; do v=$(measure "$c"); printf ' %10.3f' "$v"; row="$row $v"; done
  echo
  echo "$row" >> "$work/rows"
done
python3 - "$work/rows" << 'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
for name, (a, b) in {"PUT": (0, 1), "GET": (2, 3)}.items():
    d = [r[b] - r[a] for r in rows]
    print(f"{name} SSE-S3 minus plain, CPU-s per GB: median {statistics.median(d):+.3f} "
          f"(rounds: {', '.join(f'{x:+.3f}' for x in d)})")
PY
