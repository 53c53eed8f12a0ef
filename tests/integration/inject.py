#!/usr/bin/env python3
# Sends malformed and foreign frames out of an interface (AF_PACKET), for
# svc-hostile.sh. Seeded: the same frames every run.
#   inject.py IFACE COUNT
# Kinds, in turn: random bytes; truncated valid frames; valid overlay
# headers with a bad outer checksum; a VNI nobody has; a spoofed outer
# source; valid overlay headers in the right tenant carrying garbage
# PDUs (bad version, bad CRC, random QPNs). Prints how many of each.
import random
import socket
import struct
import sys


def csum(b):
    s = 0
    for i in range(0, len(b), 2):
        s += (b[i] << 8) + (b[i + 1] if i + 1 < len(b) else 0)
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def ip4(src, dst, payload, bad_csum=False):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0, 0x4000,
                    64, 17, 0, socket.inet_aton(src), socket.inet_aton(dst))
    c = csum(h) ^ (0x1234 if bad_csum else 0)
    return h[:10] + struct.pack("!H", c) + h[12:] + payload


def udp(sport, dport, payload):
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def frame(pdu, vni=100, osrc="10.0.0.1", odst="10.0.0.2",
          isrc="192.168.1.1", idst="192.168.1.2", bad_outer=False):
    inner = ip4(isrc, idst, udp(50000, 4793, pdu))
    gpe = struct.pack("!BBBB", 0x0c, 0, 0, 0x01) + struct.pack("!I", vni << 8)
    outer = ip4(osrc, odst, udp(50000, 4790, gpe + inner), bad_outer)
    eth = bytes.fromhex("020000000002") + bytes.fromhex("020000000001") + \
        b"\x08\x00"
    return eth + outer


def main():
    iface, count = sys.argv[1], int(sys.argv[2])
    rng = random.Random(7)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    kinds = {}
    for i in range(count):
        k = i % 6
        pdu = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 600)))
        if k == 0:
            f, name = bytes(rng.getrandbits(8)
                            for _ in range(rng.randrange(1, 1400))), "random"
        elif k == 1:
            full = frame(pdu)
            f, name = full[:rng.randrange(1, len(full))], "truncated"
        elif k == 2:
            f, name = frame(pdu, bad_outer=True), "bad_checksum"
        elif k == 3:
            f, name = frame(pdu, vni=999), "unknown_vni"
        elif k == 4:
            f, name = frame(pdu, osrc="10.0.0.9"), "spoofed_source"
        else:
            # a plausible ovrdma prefix (version 1) with random QPNs
            pdu = bytes([1, rng.randrange(0, 32)]) + pdu[2:] + bytes(40)
            f, name = frame(pdu), "garbage_pdu"
        if len(f) < 14:
            f = f + bytes(14 - len(f))
        s.send(f)
        kinds[name] = kinds.get(name, 0) + 1
    print(" ".join(f"{k}={v}" for k, v in sorted(kinds.items())))


main()
