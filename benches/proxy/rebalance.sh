#!/usr/bin/env bash
# How fast `ferry rebalance` moves objects and what it costs: objects/s, MB/s and its
# CPU-seconds per GB (its rusage), beside a baseline taken in the same run on the same nodes:
# the same number of bytes PUT through `ferry proxy` by ferry-load (MB/s, and the proxy's
# CPU-seconds per GB from /proc) — a move streams each byte through one process once, as a
# proxied PUT does, plus the GET that reads it.
#   benches/proxy/rebalance.sh [OBJECTS] [SIZE_BYTES] [CONCURRENCY]   (default 300 × 1 MiB, 8)
# Grows a cluster from two nodes to three, so about a third of the objects move; the baseline
# writes that many bytes. Environment: FERRY, FERRY_LOAD (binaries; default this tree's
# release builds), DATA (where the nodes keep their data, default /var/tmp), MAX_BANDWIDTH
# (`--max-bandwidth` of the rebalance, e.g. 20MiB: the rate it came to is then printed against
# the bound; the tests check only that every byte passes the bound).
set -euo pipefail
cd "$(dirname "$0")/../.."
objects=${1:-300}
size=${2:-1048576}
conc=${3:-8}
if [ -z "${FERRY:-}" ] || [ -z "${FERRY_LOAD:-}" ]; then
  cargo build --release -q -p ferry-server -p ferry-loadtest
fi
ferry=${FERRY:-target/release/ferry}
load=${FERRY_LOAD:-target/release/ferry-load}
export FERRY_ACCESS_KEY=benchkey FERRY_SECRET_KEY=benchsecret1234567890
# The nodes and the proxy share a cluster key (the proxy seals what only the cluster may ask).
export FERRY_CLUSTER_KEY="${FERRY_CLUSTER_KEY:-$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')}"
tick=$(getconf CLK_TCK)
work=$(mktemp -d "${DATA:-/var/tmp}/ferry-rebalance.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null || true; done
  wait 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ready() { for _ in $(seq 100); do grep -q listening "$1" 2> /dev/null && return; sleep 0.1; done; }
cpu_s() { awk -v t="$tick" '{print ($14 + $15) / t}' "/proc/$1/stat"; }
now() { date +%s.%N; }

declare -A addr
for n in 1 2 3; do
  $ferry node --data "$work/n$n" --listen 127.0.0.1:0 --no-fsync --threads 1 \
    > "$work/n$n.out" 2> "$work/n$n.err" &
  pids+=($!)
done
for n in 1 2 3; do
  ready "$work/n$n.out"
  addr[$n]=$(sed -n 's|^ferry node listening on http://||p' "$work/n$n.out")
done
backends() {
  for n in "$@"; do printf '[[backend]]\nid = "n%s"\nurl = "http://%s"\n' "$n" "${addr[$n]}"; done
}
{ echo 'admin_listen = ""'; backends 1 2; } > "$work/before.toml"
{
  backends 1 2 3
  printf '[[layout]]\nversion = 2\nbackends = { n1 = 1, n2 = 1, n3 = 1 }\n'
  printf '[[layout]]\nversion = 1\nbackends = { n1 = 1, n2 = 1 }\n'
} > "$work/after.toml"
$ferry proxy --config "$work/before.toml" --listen 127.0.0.1:0 > "$work/proxy.out" \
  2> "$work/proxy.err" &
proxy=$!
pids+=("$proxy")
ready "$work/proxy.out"
ep=$(sed -n 's/^ferry proxy listening on //p' "$work/proxy.out")

# The data to move.
$load put --endpoint "$ep" --bucket moving --objects "$objects" --ops "$objects" --size "$size" \
  --concurrency "$conc" --keep-data > /dev/null

# The rebalance.
t0=$(now)
python3 - "$ferry" "$work/after.toml" "$conc" "${MAX_BANDWIDTH:-}" > "$work/rebalance.out" << 'PY'
import resource, subprocess, sys
ferry, config, conc, bw = sys.argv[1:5]
bound = ["--max-bandwidth", bw] if bw else []
out = subprocess.run([ferry, "rebalance", "--config", config, "--concurrency", conc, "--quiet"]
                     + bound, capture_output=True, text=True)
if out.returncode != 0:
    sys.exit(f"ferry rebalance failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(out.stdout.strip())
print(f"cpu {ru.ru_utime + ru.ru_stime}")
PY
t1=$(now)
moved=$(sed -n 's/^moved \([0-9]*\) objects.*/\1/p' "$work/rebalance.out")
rebalance_cpu=$(sed -n 's/^cpu //p' "$work/rebalance.out")
sed '/^cpu /d' "$work/rebalance.out"

# The baseline: as many bytes PUT through the proxy, its CPU read around it.
before=$(cpu_s "$proxy")
t2=$(now)
$load put --endpoint "$ep" --bucket base --objects "$moved" --ops "$moved" --size "$size" \
  --concurrency "$conc" --keep-data > /dev/null
t3=$(now)
after=$(cpu_s "$proxy")

python3 - "$moved" "$size" "$t0" "$t1" "$rebalance_cpu" "$t2" "$t3" "$before" "$after" \
  "${MAX_BANDWIDTH:-}" << 'PY'
import re, sys
moved, size = int(sys.argv[1]), int(sys.argv[2])
t0, t1, cpu, t2, t3, b, a = map(float, sys.argv[3:10])
bw = sys.argv[10]
gb = moved * size / 1e9
if gb == 0:
    sys.exit("nothing moved")
rb, base = t1 - t0, t3 - t2
print(f"rebalance: {moved} objects of {size} B in {rb:.2f} s: {moved / rb:.1f} objects/s, "
      f"{gb * 1e3 / rb:.1f} MB/s, {cpu / gb:.3f} CPU-s per GB (the rebalancer)")
print(f"baseline, the same bytes PUT through ferry proxy: {gb * 1e3 / base:.1f} MB/s, "
      f"{(a - b) / gb:.3f} CPU-s per GB (the proxy)")
print(f"ratio rebalance / baseline: {(gb / rb) / (gb / base):.2f}x the MB/s, "
      f"{(cpu / gb) / max((a - b) / gb, 1e-9):.2f}x the CPU per GB")
if bw:
    m = re.fullmatch(r"(\d+)\s*(|B|KiB|MiB|GiB)", bw)
    if not m:
        sys.exit(f"MAX_BANDWIDTH {bw!r}: a number of bytes, KiB, MiB or GiB")
    rate = int(m.group(1)) * {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]
    # The bound lets a burst of a quarter second's worth through at once, then the rate: by
    # time t at most burst + rate x t bytes, so B bytes take (B - burst) / rate at least. (The
    # time here is the whole process's, its start and the count before the moves included.)
    total, burst = moved * size, rate / 4
    got = total / rb
    print(f"--max-bandwidth {bw} ({rate / 1e6:.2f} MB/s): moved at {got / 1e6:.2f} MB/s, "
          f"{got / rate:.3f}x the bound (at most {total / max(total - burst, 1):.3f}x allowed)")
PY
