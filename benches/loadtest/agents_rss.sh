#!/usr/bin/env bash
# Memory of ferry-load agents and of their coordinator over a long run: one storage node, three
# agents and a coordinator on this machine, a mixed workload with varying sizes on an open-loop
# schedule, the resident set size (VmRSS) of each ferry-load process sampled every 10 s.
#
#   benches/loadtest/agents_rss.sh [DURATION] [RATE] [PROFILE]
#   benches/loadtest/agents_rss.sh --table DIR
#
# DURATION (default 10m) and RATE (operations per second over all agents, default 300) go to
# the coordinator; PROFILE is release (the default) or debug; LOAD=... FERRY=... use binaries
# built elsewhere. OUT=DIR keeps the samples (DIR/rss.csv: t_s,process,rss_kib,hwm_kib,phase),
# the coordinator's report (DIR/run.json, DIR/run.txt) and the logs there; without it they go
# to a temporary directory, removed at the end. Prints, from the samples, the table of
# loadtest/README.md ("Memory"): each process's RSS at 1 min, at half time, at the end of the
# run, after it (agents waiting for the next run), its range from minute 3 to the end, and its
# peak (VmHWM), in MiB. `--table DIR` prints that table again from DIR/rss.csv, running
# nothing. Memory should stop growing after the first minutes: histograms and per-second series
# only, no per-request records.
set -euo pipefail
cd "$(dirname "$0")/../.."

# The README's table from the samples in $1 (rss.csv).
table() {
    python3 - "$1" <<'EOF'
import csv, sys
by = {}
for r in csv.DictReader(open(sys.argv[1])):
    by.setdefault(r["process"], []).append(
        (int(r["t_s"]), int(r["rss_kib"]), int(r["hwm_kib"]), r.get("phase") or "run"))
end = max(t for t, _, _, phase in by["coordinator"] if phase == "run")
mib = lambda kib: f"{kib / 1024:.1f} MiB"
def at(samples, t):
    return mib(min(samples, key=lambda s: abs(s[0] - t))[1])
print(f"RSS sampled every 10 s over a run of {end} s (half time: {end // 2} s)")
print()
print("| process | RSS at 1 min | at half time | at the end | after the run "
      "| from minute 3 to the end | peak (VmHWM) |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for name in ["coordinator", "agent1", "agent2", "agent3"]:
    s = [x for x in by.get(name, []) if x[3] == "run"]
    if not s:
        continue
    after = [x for x in by[name] if x[3] == "after"]
    late = [x[1] for x in s if x[0] >= 180] or [s[-1][1]]
    peak = max(x[2] for x in by[name])
    label = name if name == "coordinator" else f"agent {name[-1]}"
    print(f"| {label} | {at(s, 60)} | {at(s, end / 2)} | {at(s, end)} "
          f"| {mib(after[-1][1]) if after else '-'} "
          f"| {min(late) / 1024:.1f}–{max(late) / 1024:.1f} MiB | {mib(peak)} |")
EOF
}

if [ "${1:-}" = --table ]; then
    [ -f "${2:-}/rss.csv" ] || { echo "--table DIR: no DIR/rss.csv" >&2; exit 2; }
    table "$2/rss.csv"
    exit 0
fi

DURATION="${1:-10m}"
RATE="${2:-300}"
PROFILE="${3:-release}"
source benches/loadtest/agents_lib.sh
KEPT="samples in $WORK/rss.csv (the table again: $0 --table $WORK)"
rm -f "$WORK/rss.csv"
start_node
start_agents 3

"$LOAD" mixed --endpoint "$ENDPOINT" --agents "$LIST" --token-file "$WORK/token" \
    --size 4KiB..64KiB --objects 300 --concurrency 8 --threads 1 --rate "$RATE" \
    --duration "$DURATION" --quiet --json "$WORK/run.json" >"$WORK/run.txt" 2>"$WORK/run.err" &
COORD=$!
PIDS+=($COORD)

rss() { # PID -> "VmRSS VmHWM" in KiB
    awk '/^VmRSS:/ {r=$2} /^VmHWM:/ {h=$2} END {print r+0, h+0}' "/proc/$1/status" 2>/dev/null || echo "0 0"
}
echo "t_s,process,rss_kib,hwm_kib,phase" >"$WORK/rss.csv"
START=$(date +%s)
while kill -0 "$COORD" 2>/dev/null; do
    T=$(( $(date +%s) - START ))
    for n in coordinator agent1 agent2 agent3; do
        case $n in
            coordinator) P=$COORD ;;
            agent1) P=${AGENT_PIDS[0]} ;;
            agent2) P=${AGENT_PIDS[1]} ;;
            agent3) P=${AGENT_PIDS[2]} ;;
        esac
        read -r R H < <(rss "$P")
        [ "$R" -gt 0 ] && echo "$T,$n,$R,$H,run" >>"$WORK/rss.csv"
    done
    sleep 10
done
wait "$COORD" || echo "the coordinator exited with $? (see $WORK/run.txt)" >&2
# The agents' memory once the run is over and they wait for the next.
for i in 1 2 3; do
    read -r R H < <(rss "${AGENT_PIDS[$((i - 1))]}")
    echo "$(( $(date +%s) - START )),agent$i,$R,$H,after" >>"$WORK/rss.csv"
done

grep -E "^(total|per agent|note)" "$WORK/run.txt" || true
table "$WORK/rss.csv"
