#!/usr/bin/env bash
# ferry-load's client CPU cost next to wrk's: GET of the same 1 MiB object from one storage
# node, one client thread each, same connections and duration, one after the other.
#
#   benches/loadtest/wrk_compare.sh [SECONDS] [CONNECTIONS]
#
# Prints CPU-seconds per GB moved (user + system of the client process, bodies only) for
# ferry-load with verification on, ferry-load with --no-verify, and wrk fetching the object
# through a presigned URL (wrk checks nothing). Needs wrk (`apt-get install -y wrk`) and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_RUN="${1:-10}"
CONNECTIONS="${2:-16}"
SIZE=1MiB
SIZE_BYTES=1048576
BUCKET=bench
PREFIX=wrk/
export FERRY_ACCESS_KEY=bench-access-key FERRY_SECRET_KEY=bench-secret-key

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
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

# One node on one thread (the client gets the other core), no fsync: reads are measured.
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
print(f'{cpu:.2f} {b / 1e9:.3f} {cpu / (b / 1e9):.3f} {b / 1e6 / r["elapsed_s"]:.1f} {errors}')
EOF
}

load() { # NAME [extra options]
    local name=$1; shift
    "$LOAD" get --endpoint "$ENDPOINT" --bucket "$BUCKET" --prefix "$PREFIX" --size "$SIZE" \
        --objects 1 --keep-data --concurrency "$CONNECTIONS" --duration "${SECONDS_PER_RUN}s" \
        --threads 1 --quiet --json "$WORK/$name.json" "$@" >"$WORK/$name.txt"
    cpu_per_gb "$WORK/$name.json"
}

VERIFY="$(load verify)"
NOVERIFY="$(load noverify --no-verify)"

# The object both runs read (object 0: `<prefix><id as 16 hex digits>-<size>`).
KEY="${PREFIX}0000000000000000-${SIZE_BYTES}"
URL="$("$LOAD" presign --endpoint "$ENDPOINT" --bucket "$BUCKET" --key "$KEY" --expires 3600)"
TIMEFORMAT='%U %S'
{ time wrk -t1 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" "$URL" >"$WORK/wrk.txt"; } 2>"$WORK/wrk.time"
WRK="$(python3 - "$WORK/wrk.txt" "$WORK/wrk.time" "$SIZE_BYTES" <<'EOF'
import re, sys
out = open(sys.argv[1]).read()
user, system = map(float, open(sys.argv[2]).read().split()[-2:])
m = re.search(r"(\d+) requests in ([\d.]+)(m?s)", out)
requests, secs = int(m.group(1)), float(m.group(2)) * (60 if m.group(3) == "m" else 1)
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
errors = int(non2xx.group(1)) if non2xx else 0
b = (requests - errors) * int(sys.argv[3])
cpu = user + system
print(f"{cpu:.2f} {b / 1e9:.3f} {cpu / (b / 1e9):.3f} {b / 1e6 / secs:.1f} {errors}")
EOF
)"

echo "GET ${SIZE} objects, ${CONNECTIONS} connections, ${SECONDS_PER_RUN}s each, one client thread, node on one thread"
printf '%-28s %8s %8s %12s %9s %7s\n' client "cpu s" GB "cpu s/GB" "MB/s" errors
printf '%-28s %8s %8s %12s %9s %7s\n' "ferry-load (verify)" $VERIFY
printf '%-28s %8s %8s %12s %9s %7s\n' "ferry-load (--no-verify)" $NOVERIFY
printf '%-28s %8s %8s %12s %9s %7s\n' "wrk (presigned URL)" $WRK
grep -E "^verified" "$WORK/verify.txt" || true
