#!/usr/bin/env bash
# The physical floor of a node PUT on this machine, without any server: the CPU-seconds per GB
# that writing 1 MiB files costs (4 writes of 256 KiB, with and without O_DIRECT and fsync, each
# file renamed into place and its directory fsynced, as the node's store does), and that
# receiving bytes over loopback TCP into a 256 KiB buffer costs. One thread, no MD5, no HTTP,
# no metadata: what is left of a node's PUT figure above the sum is the node's own cost.
#   benches/node/floor.sh [FILES] [DIR]    (default 1000 files, in a temp dir under ./target)
set -euo pipefail
cd "$(dirname "$0")"
n=${1:-1000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -O2 -o "$out/write_files" floor/write_files.c
cc -O2 -o "$out/recv_tcp" floor/recv_tcp.c
base=${2:-$(mktemp -d -p ../../target 2> /dev/null || mktemp -d)}
for mode in "1 1" "0 1" "1 0" "0 0"; do
  rm -rf "$base/files" && mkdir -p "$base/files"
  "$out/write_files" "$n" $mode "$base/files"
done
rm -rf "$base"
"$out/recv_tcp" 4000
