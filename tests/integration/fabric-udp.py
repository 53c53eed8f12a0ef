#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""UDP source and sink for tests/integration/fabric-veth.sh.

  fabric-udp.py recv PORT READY_FILE DONE_FILE IDLE_S
      creates READY_FILE once listening; once DONE_FILE exists (the sender
      has finished) and nothing has come for IDLE_S seconds, prints
      "received N unique U bytes B seconds S" (bytes as Ethernet frames,
      seconds from the first arrival to the last)
  fabric-udp.py send ADDR PORT COUNT SIZE GAP_S

Each datagram starts with its 4-byte sequence number.
"""
import os
import socket
import sys
import time


def recv(port, ready_file, done_file, idle):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("0.0.0.0", port))
    open(ready_file, "w").close()
    s.settimeout(idle)
    seen = set()
    n = nbytes = 0
    first = last = None
    deadline = time.monotonic() + 20  # never hang the test
    while time.monotonic() < deadline:
        try:
            d = s.recv(65536)
        except socket.timeout:
            if os.path.exists(done_file):
                break
            continue
        now = time.monotonic()
        first = now if first is None else first
        last = now
        n += 1
        nbytes += len(d) + 42  # as a frame: Ethernet, IPv4, UDP headers
        seen.add(int.from_bytes(d[:4], "big"))
    secs = (last - first) if first is not None else 0.0
    print(f"received {n} unique {len(seen)} bytes {nbytes} seconds {secs:.6f}")


def send(addr, port, count, size, gap):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    pad = bytes(size - 4)
    t = time.monotonic()
    for i in range(count):
        s.sendto(i.to_bytes(4, "big") + pad, (addr, port))
        if gap:
            t += gap
            d = t - time.monotonic()
            if d > 0:
                time.sleep(d)


if __name__ == "__main__":
    if sys.argv[1] == "recv":
        recv(int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5]))
    else:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
             int(sys.argv[5]), float(sys.argv[6]))
