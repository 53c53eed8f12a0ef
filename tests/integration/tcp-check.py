#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Kernel TCP between two testbed nodes' vIPs (the out-of-band network
RDMA applications use): `serve IP PORT` accepts one connection and prints
the SHA-256 and length of what it received; `send IP PORT MB` connects
(retrying for 10 s) and sends MB megabytes of seeded data, printing the
same digest, length and the rate."""
import hashlib
import random
import socket
import sys
import time


def serve(ip, port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((ip, port))
    ls.listen(1)
    ls.settimeout(60)
    c, _ = ls.accept()
    c.settimeout(60)
    h, n = hashlib.sha256(), 0
    while True:
        b = c.recv(1 << 20)
        if not b:
            break
        h.update(b)
        n += len(b)
    print(h.hexdigest(), n, flush=True)


def send(ip, port, mb):
    t_end = time.time() + 10
    while True:
        try:
            s = socket.create_connection((ip, port), timeout=5)
            break
        except OSError:
            if time.time() > t_end:
                raise
            time.sleep(0.1)
    s.settimeout(60)
    rnd = random.Random(7)
    block = rnd.randbytes(1 << 20)
    h, t0 = hashlib.sha256(), time.time()
    for i in range(mb):
        b = bytes([i & 255]) + block[1:]
        h.update(b)
        s.sendall(b)
    s.shutdown(socket.SHUT_WR)
    s.recv(1)
    dt = time.time() - t0
    print(h.hexdigest(), mb << 20, "%.1f Mbit/s" % (mb * 8.388608 / dt),
          flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    else:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
