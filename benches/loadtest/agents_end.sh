#!/usr/bin/env bash
# How long the end of a run across machines takes: one storage node, N ferry-load agents and a
# coordinator on this machine, a short PUT run of small objects, then, from the coordinator's
# JSON, the collection time (from the end of the measured phase until every agent's results
# were merged: `collection_s`) and the cleanup time (from then until every agent had deleted
# what it wrote: `cleanup_s`), and each agent's own.
#
#   benches/loadtest/agents_end.sh [AGENTS] [DURATION]
#
# AGENTS defaults to 8, DURATION to 10s. PROFILE=release (the default) or debug (for a try);
# LOAD=... FERRY=... use binaries built elsewhere; RUNS=N runs N times with the same agents
# (default 1); SIZE (default 4KiB) and CONCURRENCY (per agent, default 4) shape the load.
# OUT=DIR keeps the reports (DIR/runK.json, DIR/runK.txt) and the logs; without it they go to
# a temporary directory, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."

AGENTS_N="${1:-8}"
DURATION="${2:-10s}"
PROFILE="${PROFILE:-release}"
RUNS="${RUNS:-1}"
SIZE="${SIZE:-4KiB}"
CONCURRENCY="${CONCURRENCY:-4}"
source benches/loadtest/agents_lib.sh
start_node
start_agents "$AGENTS_N"

echo "$AGENTS_N agents, put $SIZE for $DURATION, concurrency $CONCURRENCY per agent ($PROFILE)"
for run in $(seq "$RUNS"); do
    status=0
    rm -f "$WORK/run$run.json"
    "$LOAD" put --endpoint "$ENDPOINT" --agents "$LIST" --token-file "$WORK/token" \
        --size "$SIZE" --concurrency "$CONCURRENCY" --threads 1 --duration "$DURATION" \
        --quiet --json "$WORK/run$run.json" >"$WORK/run$run.txt" 2>"$WORK/run$run.err" || status=$?
    if [ ! -f "$WORK/run$run.json" ]; then
        echo "run $run: no report (exit $status):" >&2
        cat "$WORK/run$run.err" >&2
        exit 1
    fi
    [ "$status" = 0 ] || echo "run $run: the coordinator exited with $status (see run$run.txt)" >&2
    python3 - "$run" "$WORK/run$run.json" <<'EOF'
import json, sys
run, r = sys.argv[1], json.load(open(sys.argv[2]))
fmt = lambda v: "-" if v is None else f"{v:.3f}s"
ops = sum(s["ops"] for s in r["stats"])
agents = r.get("agents", [])
own = [a.get("collection_s") for a in agents if a.get("collection_s") is not None]
cleanups = [a.get("cleanup_s") for a in agents if a.get("cleanup_s") is not None]
print(f"run {run}: {ops} operations; collection {fmt(r.get('collection_s'))} "
      f"(per agent {fmt(min(own, default=None))}..{fmt(max(own, default=None))}); "
      f"cleanup {fmt(r.get('cleanup_s'))} "
      f"(per agent {fmt(min(cleanups, default=None))}..{fmt(max(cleanups, default=None))})")
EOF
done
