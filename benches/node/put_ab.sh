#!/usr/bin/env bash
# Node PUT, two configurations in ABBA order (A B B A, ROUNDS times), one fresh node per run:
# `ferry-load put` of 1 MiB objects at 16 connections for SECONDS after a 2 s warm-up; node
# CPU-seconds per GB (from /proc/PID/stat), context switches per object (summed over the node's
# threads in /proc/PID/task/*/status), MD5 lane streams per batch (from /metrics).
#   benches/node/put_ab.sh [ROUNDS] [SECONDS]      (default 2 rounds of 6 s)
# Environment: A="label:node options" B="label:node options" (default "ring:" against
# "pool:--no-io-uring"), FERRY (node binary, default this tree's release build; A_FERRY and
# B_FERRY, if set, run each configuration on its own binary), RUNTIME
# (tokio|smol, default tokio), DATA (parent directory for the runs' data, default /var/tmp).
#
# No run's data is deleted before the last run ends: on ext4 without a journal (this VM's
# disk) a new inode is not taken from those freed in the last 60-360 s, and scanning past
# them (`recently_deleted`, `find_inode_bit` in a profile) cost up to a third of a PUT's CPU
# in the run after a deletion. Start it a few minutes after the last large deletion too.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-2}
secs=${2:-6}
if [ -z "${FERRY:-}" ]; then cargo build --release -q -p ferry-server -p ferry-loadtest; fi
ferry=${FERRY:-target/release/ferry}
load=${FERRY_LOAD:-target/release/ferry-load}
rt=${RUNTIME:-tokio}
A=${A:-ring:}
B=${B:-pool:--no-io-uring}
export FERRY_ACCESS_KEY=benchkey FERRY_SECRET_KEY=benchsecret1234567890
tick=$(getconf CLK_TCK)
parent=$(mktemp -d "${DATA:-/var/tmp}/ferry-put-ab.XXXXXX")
pid=
trap '[ -n "$pid" ] && kill -TERM "$pid" 2> /dev/null; rm -rf "$parent"' EXIT
cpu_s() { awk -v t="$tick" '{print ($14 + $15) / t}' "/proc/$1/stat"; }
switches() { cat /proc/"$1"/task/*/status 2> /dev/null | awk '/ctxt_switches/ {s += $2} END {print s}'; }
lanes() { curl -s "http://$1/metrics" | awk '/^ferry_node_md5_lane_(batches|streams)_total / {printf "%s ", $2}'; }

printf '%-8s %8s %10s %12s %12s %14s\n' config runtime "MB/s" "CPU-s/GB" "ctx/object" "streams/batch"
run=0
for _ in $(seq "$rounds"); do
  for side in A B B A; do
    spec=${!side} bin_var=${side}_FERRY
    bin=${!bin_var:-$ferry}
    label=${spec%%:*} opts=${spec#*:}
    run=$((run + 1))
    dir="$parent/$run"
    mkdir -p "$dir"
    admin=127.0.0.1:$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    # shellcheck disable=SC2086 # options split on purpose
    $bin node --data "$dir/data" --listen 127.0.0.1:0 --admin-listen "$admin" --runtime "$rt" \
      $opts > "$dir/out" 2> "$dir/err" &
    pid=$!
    for _ in $(seq 100); do grep -q listening "$dir/out" 2> /dev/null && break; sleep 0.1; done
    ep=$(sed -n 's/^ferry node listening on //p' "$dir/out")
    "$load" put --endpoint "$ep" --bucket bench --size 1MiB --concurrency 16 --duration 2s \
      --objects 64 --quiet > /dev/null
    m0=$(lanes "$admin") c0=$(switches $pid) u0=$(cpu_s $pid)
    "$load" put --endpoint "$ep" --bucket bench --size 1MiB --concurrency 16 --duration "${secs}s" \
      --objects 256 --keep-data --quiet --json "$dir/r.json" > /dev/null
    u1=$(cpu_s $pid) c1=$(switches $pid) m1=$(lanes "$admin")
    kill -TERM $pid; wait $pid || true
    pid=
    python3 - "$dir/r.json" "$label" "$rt" "$u0" "$u1" "$c0" "$c1" "$m0" "$m1" <<'PY'
import json, sys
path, label, rt, u0, u1, c0, c1, m0, m1 = sys.argv[1:]
r = json.load(open(path))
rows = [s for s in r["stats"] if s["op"] == "put"]
ops = sum(s["ops"] for s in rows)
gb = sum(s["bytes"] for s in rows) / 1e9
b0, s0 = (float(x) for x in m0.split())
b1, s1 = (float(x) for x in m1.split())
cpu = float(u1) - float(u0)
print(f"{label:<8} {rt:>8} {gb * 1e3 / r['elapsed_s']:10.1f} {cpu / gb:12.3f} "
      f"{(int(c1) - int(c0)) / ops:12.1f} {(s1 - s0) / (b1 - b0):14.2f}")
PY
  done
done
