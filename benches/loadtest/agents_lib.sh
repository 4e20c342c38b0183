# What the agents benches share (sourced from the repository's root, with PROFILE set): the
# binaries, a work directory, a storage node and agents on this machine, stopped at exit.
#
# LOAD=... FERRY=... use binaries built elsewhere (then nothing is built). OUT=DIR keeps what
# the bench writes there (the node's data is removed); without it everything goes to a
# temporary directory, removed at the end. KEPT says what a kept OUT holds (printed at exit).
export FERRY_ACCESS_KEY=bench-access-key FERRY_SECRET_KEY=bench-secret-key

if [ -z "${LOAD:-}" ] || [ -z "${FERRY:-}" ]; then
    if [ "$PROFILE" = release ]; then
        cargo build --release -q -p ferry-loadtest -p ferry-server
    else
        cargo build -q -p ferry-loadtest -p ferry-server
    fi
    LOAD="target/$PROFILE/ferry-load"
    FERRY="target/$PROFILE/ferry"
fi

if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    WORK="$(cd "$OUT" && pwd)"
    rm -rf "$WORK/data"
else
    WORK="$(mktemp -d)"
fi
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    # The store's objects are not worth keeping; the samples and reports are.
    if [ -n "${OUT:-}" ]; then
        rm -rf "$WORK/data"
        echo "${KEPT:-reports and logs in $WORK}"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

wait_line() { # FILE PREFIX -> the rest of the first line starting with PREFIX
    for _ in $(seq 300); do
        local v
        v="$(sed -n "s/^$2//p" "$1" 2>/dev/null | head -1)"
        [ -n "$v" ] && { echo "$v"; return; }
        sleep 0.1
    done
    echo "no '$2' in $1" >&2
    exit 1
}

# A storage node: ENDPOINT.
start_node() {
    "$FERRY" node --data "$WORK/data" --listen 127.0.0.1:0 --threads 1 --no-fsync >"$WORK/node.out" 2>"$WORK/node.err" &
    PIDS+=($!)
    ENDPOINT="$(wait_line "$WORK/node.out" "ferry node listening on ")"
}

# N agents sharing $WORK/token: AGENTS (addresses), AGENT_PIDS, LIST (for --agents).
start_agents() {
    head -c 32 /dev/urandom | base64 >"$WORK/token"
    AGENTS=()
    AGENT_PIDS=()
    for i in $(seq "$1"); do
        "$LOAD" agent --listen 127.0.0.1:0 --token-file "$WORK/token" >"$WORK/agent$i.out" 2>"$WORK/agent$i.err" &
        PIDS+=($!)
        AGENT_PIDS+=($!)
        AGENTS+=("$(wait_line "$WORK/agent$i.out" "ferry-load agent listening on ")")
    done
    LIST="$(IFS=,; echo "${AGENTS[*]}")"
}
