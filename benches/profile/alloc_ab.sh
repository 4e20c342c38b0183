#!/usr/bin/env bash
# jemalloc (the default `jemalloc` feature, heap profiling on) against the system allocator
# (`--no-default-features`), in the same run: builds both `ferry` binaries, then runs
# benches/node/node_bench.sh (PUT and GET through one node) and, where wrk and nginx exist,
# benches/proxy/compare.sh (GET and PUT through the proxy, and its peak RSS under 16 large
# PUTs: where the allocators differ most) with each, alternating ROUNDS
# times so that drift on a shared machine hits both alike. Compare the rows of each pair
# (MB/s, CPU s per GB) over the rounds: see benches/README.md for how many make an answer.
#   benches/profile/alloc_ab.sh [SECONDS]      (default 10 s per phase; ROUNDS=3)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
rounds=${ROUNDS:-3}
# Both builds share the target directory (only ferry-server and its allocator crates differ);
# each binary is copied aside, and the default build is left in place at the end.
mkdir -p target/alloc-ab
cargo build --release -q -p ferry-server --no-default-features
cp target/release/ferry target/alloc-ab/ferry-system
cargo build --release -q -p ferry-server -p ferry-loadtest
cp target/release/ferry target/alloc-ab/ferry-jemalloc
jemalloc=$PWD/target/alloc-ab/ferry-jemalloc
system=$PWD/target/alloc-ab/ferry-system
for r in $(seq "$rounds"); do
  for alloc in jemalloc system; do
    bin=$jemalloc; [ "$alloc" = system ] && bin=$system
    echo "== round $r: $alloc: node"
    FERRY=$bin FERRY_LOAD=$PWD/target/release/ferry-load benches/node/node_bench.sh "$secs" \
      | sed "s/^/$alloc /"
    if command -v wrk > /dev/null && command -v nginx > /dev/null; then
      echo "== round $r: $alloc: proxy"
      FERRY=$bin DURATION="${secs}s" benches/proxy/compare.sh | sed "s/^/$alloc /"
    fi
  done
done
