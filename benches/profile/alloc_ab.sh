#!/usr/bin/env bash
# jemalloc (the default `jemalloc` feature, heap profiling on) against the system allocator
# (`--no-default-features`), in the same run: builds both `ferry` binaries, then runs
# benches/node/node_bench.sh (PUT and GET through one node) and, where wrk and nginx exist,
# benches/proxy/compare.sh (GET and PUT through the proxy, and its peak RSS under 16 large
# PUTs: where the allocators differ most) with each, alternating ROUNDS
# times so that drift on a shared machine hits both alike. Compare the rows of each pair
# (MB/s, CPU s per GB) over the rounds: see benches/README.md for how many make an answer.
# The node phases' ferry-load reports are kept in OUT (default target/alloc-ab/runs-<time>) as
# <allocator>-r<round>/<runtime>-<op>.json, and the end prints `ferry-load compare` of the
# jemalloc runs against the system allocator's for each runtime and operation (median ±
# spread, p-value; the node's CPU s per GB is in the rows above, not in the reports).
#   benches/profile/alloc_ab.sh [SECONDS]      (default 10 s per phase; ROUNDS=5; OUT=dir)
set -euo pipefail
out=${OUT:+$(realpath -m "$OUT")}
cd "$(dirname "$0")/../.."
secs=${1:-10}
rounds=${ROUNDS:-5}
# Both builds share the target directory (only ferry-server and its allocator crates differ);
# each binary is copied aside, and the default build is left in place at the end.
mkdir -p target/alloc-ab
cargo build --release -q -p ferry-server --no-default-features
cp target/release/ferry target/alloc-ab/ferry-system
cargo build --release -q -p ferry-server -p ferry-loadtest
cp target/release/ferry target/alloc-ab/ferry-jemalloc
jemalloc=$PWD/target/alloc-ab/ferry-jemalloc
system=$PWD/target/alloc-ab/ferry-system
load=$PWD/target/release/ferry-load
nginx=${NGINX_BIN:-$(command -v nginx || echo /usr/sbin/nginx)}
out=${out:-$PWD/target/alloc-ab/runs-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
for r in $(seq "$rounds"); do
  for alloc in jemalloc system; do
    bin=$jemalloc; [ "$alloc" = system ] && bin=$system
    echo "== round $r: $alloc: node"
    OUT="$out/$alloc-r$r" FERRY=$bin FERRY_LOAD=$load benches/node/node_bench.sh "$secs" \
      | sed "s/^/$alloc /"
    if command -v wrk > /dev/null && [ -x "$nginx" ]; then
      echo "== round $r: $alloc: proxy"
      NGINX_BIN=$nginx FERRY=$bin DURATION="${secs}s" benches/proxy/compare.sh | sed "s/^/$alloc /"
    else
      echo "wrk or $nginx missing: the proxy part is skipped" >&2
    fi
  done
done

# The node runs side by side: A = jemalloc, B = the system allocator.
for rt in tokio smol; do
  for op in put get; do
    a=("$out"/jemalloc-r*/"$rt-$op.json")
    b=("$out"/system-r*/"$rt-$op.json")
    [ -f "${a[0]}" ] && [ -f "${b[0]}" ] || continue
    echo "== node $rt $op: jemalloc (A) against the system allocator (B), $rounds rounds"
    "$load" compare "${a[@]}" -- "${b[@]}"
  done
done
echo "reports kept in $out"
