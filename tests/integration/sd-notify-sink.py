#!/usr/bin/env python3
# The receiving end of sd_notify(3) for tests where systemd is not PID 1:
# binds the datagram socket PATH (what $NOTIFY_SOCKET names) and appends
# every message to LOG, one line per assignment, until killed.
# usage: sd-notify-sink.py PATH LOG
import os
import socket
import sys

path, log = sys.argv[1], sys.argv[2]
try:
    os.unlink(path)
except FileNotFoundError:
    pass
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
with open(log, "a", buffering=1) as out:
    while True:
        msg = s.recv(4096).decode(errors="replace")
        for line in msg.splitlines():
            out.write(line + "\n")
