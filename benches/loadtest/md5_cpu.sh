#!/usr/bin/env bash
# ferry-load's client CPU per GB for `put`, with and without --md5 (Content-MD5 on every PUT).
#
#   benches/loadtest/md5_cpu.sh [SECONDS] [CONNECTIONS] [ROUNDS]
#   OP=get benches/loadtest/md5_cpu.sh ...   (GETs of 64 objects instead: --md5 checks ETags)
#
# One storage node (`ferry node --no-fsync`, one thread) on 127.0.0.1; ferry-load on one thread
# PUTs 1 MiB objects over CONNECTIONS connections for SECONDS, without and with --md5, ROUNDS
# times. With BASELINE_LOAD=/path/to/an/older/ferry-load, that binary runs the same two cases in
# each round, alternating with this tree's, so both see the same machine.
#
# Prints CPU-seconds per GB PUT: user + system of the ferry-load process over its measured
# phase (getrusage(RUSAGE_SELF), the counters /proc/PID/stat shows; bucket creation and cleanup
# excluded), bodies only. Needs python3.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_RUN="${1:-8}"
CONNECTIONS="${2:-16}"
ROUNDS="${3:-1}"
SIZE=1MiB
BUCKET=bench
OP="${OP:-put}"
OP_ARGS=()
[ "$OP" = put ] || OP_ARGS=(--objects 64)
export FERRY_ACCESS_KEY=bench-access-key FERRY_SECRET_KEY=bench-secret-key

cargo build --release -q -p ferry-loadtest -p ferry-server
LOAD=target/release/ferry-load
FERRY=target/release/ferry

WORK="$(mktemp -d)"
NODE_PID=
cleanup() {
    [ -n "$NODE_PID" ] && kill "$NODE_PID" 2>/dev/null && wait "$NODE_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

"$FERRY" node --data "$WORK/data" --listen 127.0.0.1:0 --threads 1 --no-fsync >"$WORK/node.out" &
NODE_PID=$!
for _ in $(seq 100); do
    grep -q "listening on" "$WORK/node.out" 2>/dev/null && break
    sleep 0.1
done
ENDPOINT="$(sed -n 's/^ferry node listening on //p' "$WORK/node.out")"
[ -n "$ENDPOINT" ] || { echo "the node did not start" >&2; exit 1; }

cpu_per_gb() { # REPORT.json -> "cpu_s gb cpu_s_per_gb MB/s errors"
    python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
ops = [s for s in r["stats"] if s["op"] != "part"]
b = sum(s["bytes"] for s in ops)
errors = sum(sum(s["errors"].values()) for s in ops)
cpu = r["cpu"]["user_s"] + r["cpu"]["system_s"]
print(f'{cpu:.2f} {b / 1e9:.3f} {cpu / max(b / 1e9, 1e-9):.3f} {b / 1e6 / r["elapsed_s"]:.1f} {errors}')
EOF
}

put() { # BINARY NAME [extra options]
    local bin=$1 name=$2; shift 2
    "$bin" "$OP" "${OP_ARGS[@]}" --endpoint "$ENDPOINT" --bucket "$BUCKET" --prefix "$name/" --size "$SIZE" \
        --concurrency "$CONNECTIONS" --duration "${SECONDS_PER_RUN}s" --threads 1 --quiet \
        --json "$WORK/$name.json" "$@" >"$WORK/$name.txt"
    cpu_per_gb "$WORK/$name.json"
}

row() { printf '%-34s %8s %8s %12s %9s %7s\n' "$@"; }

echo "$OP ${SIZE} objects, ${CONNECTIONS} connections, ${SECONDS_PER_RUN}s each, one client thread, node on one thread (--no-fsync)"
row client "cpu s" GB "cpu s/GB" "MB/s" errors
for round in $(seq "$ROUNDS"); do
    if [ -n "${BASELINE_LOAD:-}" ]; then
        row "baseline $OP" $(put "$BASELINE_LOAD" "base-plain-$round")
        row "baseline $OP --md5" $(put "$BASELINE_LOAD" "base-md5-$round" --md5)
    fi
    row "ferry-load $OP" $(put "$LOAD" "plain-$round")
    row "ferry-load $OP --md5" $(put "$LOAD" "md5-$round" --md5)
done
