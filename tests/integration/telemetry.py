#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One DPDK telemetry command against a DPDK process's socket (what
dpdk-telemetry.py does): telemetry.py FILE_PREFIX COMMAND prints the
JSON answer."""
import glob
import json
import socket
import sys

prefix, cmd = sys.argv[1], sys.argv[2]
paths = glob.glob("/var/run/dpdk/%s/dpdk_telemetry.v2" % prefix)
if not paths:
    sys.exit("telemetry.py: no telemetry socket for file prefix %s" % prefix)
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(paths[0])
info = json.loads(s.recv(16384).decode())
s.send(cmd.encode())
print(json.dumps(json.loads(s.recv(info.get("max_output_len", 16384)).decode())))
