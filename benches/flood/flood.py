#!/usr/bin/env python3
"""Flood a server with idle connections and report its resident memory from /proc.

    flood.py --pid PID --addr HOST:PORT [--conns 10000] [--rounds 4] [--hold 3] [--settle 12]

Each round opens CONNS TCP connections that send nothing, holds them HOLD seconds, closes
them and waits SETTLE seconds (the server trims its buffer pool every 10 s). Prints the
server's VmRSS before the first round (the idle baseline), its peak while the connections are
open (VmRSS sampled every 100 ms, and VmHWM) and VmRSS after each round, in MiB; then checks
that the server still answers GET /healthz. Connections the server refuses or closes are
counted, not retried. Raises its own open-file limit to the hard limit.
"""
import argparse
import resource
import socket
import struct
import time


def status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) / 1024
    return out


def still_open(socks):
    """Connections the server has not closed (no EOF or reset seen)."""
    n = 0
    for s in socks:
        try:
            s.setblocking(False)
            if s.recv(1) != b"":
                n += 1
        except BlockingIOError:
            n += 1
        except OSError:
            pass
    return n


def healthz(host, port):
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return s.recv(64).split(b"\r\n", 1)[0].decode()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--addr", required=True)
    p.add_argument("--conns", type=int, default=10000)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--hold", type=float, default=3.0)
    p.add_argument("--settle", type=float, default=12.0)
    a = p.parse_args()
    host, port = a.addr.rsplit(":", 1)
    port = int(port)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    base = status(a.pid)["VmRSS"]
    print(f"idle baseline: VmRSS {base:.1f} MiB")
    peak_all, after = base, base
    for r in range(1, a.rounds + 1):
        socks, failed, peak = [], 0, 0.0
        started = time.time()
        for i in range(a.conns):
            try:
                socks.append(socket.create_connection((host, port), timeout=5))
            except OSError:
                failed += 1
            if i % 500 == 499:
                peak = max(peak, status(a.pid)["VmRSS"])
        opened = time.time() - started
        deadline = time.time() + a.hold
        while time.time() < deadline:
            peak = max(peak, status(a.pid)["VmRSS"])
            time.sleep(0.1)
        held = still_open(socks)
        for s in socks:
            # Reset rather than close: no TIME_WAIT left on this side, whose thousands would
            # slow the next round's connects (the server sees the connection end either way).
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        time.sleep(a.settle)
        st = status(a.pid)
        after = st["VmRSS"]
        peak_all = max(peak_all, peak)
        print(
            f"round {r}: {len(socks)} connected in {opened:.1f} s ({failed} failed), "
            f"{held} open after {a.hold:g} s held; peak VmRSS {peak:.1f} MiB "
            f"(VmHWM {st['VmHWM']:.1f}); {a.settle:g} s after closing: VmRSS {after:.1f} MiB"
        )
    print(
        f"summary: baseline {base:.1f} MiB, peak {peak_all:.1f} MiB, after {after:.1f} MiB "
        f"({after / base:.2f}x the baseline); GET /healthz: {healthz(host, port)}"
    )


if __name__ == "__main__":
    main()
