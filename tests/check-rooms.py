#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The house's rules, checked (docs/DEVELOPMENT.md, "Layout").

Each room (top-level directory with a library) may include only the
shared headers of include/ovrdma/ its table row names, plus its own
private headers beside its code; a shared header may include only the
shared headers below it. Together these keep every import pointing one
way: nothing reaches into another room's internals, and the
application's side (client/, provider/) never sees the engine, the
service, the overlay or congestion control.

Usage: check-rooms.py SOURCE_ROOT prints every offending include and
exits 1, or prints one line and exits 0; check-rooms.py --selftest
SOURCE_ROOT checks that a forbidden include of each kind is caught.
"""
import os
import re
import sys

LEAF = {"compiler.h", "util.h"}  # usable everywhere
# Shared headers: what each may include (besides LEAF).
HEADERS = {
    "verbs.h": set(),
    "wire.h": set(),
    "wire_codec.h": {"wire.h"},
    "cc.h": set(),
    "engine.h": {"cc.h", "verbs.h"},
    "ctl.h": {"verbs.h"},
    "ring.h": set(),
    "client.h": {"ctl.h", "verbs.h"},
    "gdr.h": set(),
    "vpc.h": {"wire.h"},
    "linkemu.h": set(),
}
# Rooms: the shared headers each may include (besides LEAF and the
# headers those include); its private headers are the .h files beside
# its code, and no other room's.
ROOMS = {
    "congestion": {"cc.h"},
    "vpc": {"vpc.h"},
    "gdr": {"gdr.h"},
    "engine": {"engine.h", "wire_codec.h", "verbs.h"},
    "service": {"engine.h", "ctl.h", "ring.h", "vpc.h", "gdr.h", "cc.h",
                "wire.h", "verbs.h"},
    "client": {"client.h", "ctl.h", "ring.h", "gdr.h", "verbs.h"},
    "provider": {"client.h", "ctl.h", "ring.h", "gdr.h", "verbs.h"},
}
INC = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)


def closure(names):
    out, pending = set(), list(names)
    while pending:
        n = pending.pop()
        if n not in out:
            out.add(n)
            pending.extend(HEADERS.get(n, ()))
    return out


def main(root):
    bad = []
    shared = os.path.join(root, "include", "ovrdma")
    for name in sorted(os.listdir(shared)):
        if not name.endswith(".h"):
            continue
        if name not in HEADERS and name not in LEAF:
            bad.append(f"include/ovrdma/{name}: not in the table of "
                       "shared headers (tests/check-rooms.py)")
            continue
        allowed = HEADERS.get(name, set()) | LEAF
        with open(os.path.join(shared, name)) as f:
            for kind, inc in INC.findall(f.read()):
                if kind == "<" and inc.startswith("ovrdma/"):
                    if inc[7:] not in allowed:
                        bad.append(f"include/ovrdma/{name}: includes "
                                   f"<{inc}>")
                elif kind == '"':
                    bad.append(f"include/ovrdma/{name}: includes "
                               f'"{inc}" (a room\'s private header)')
    for room, public in sorted(ROOMS.items()):
        d = os.path.join(root, room)
        if not os.path.isdir(d):
            bad.append(f"{room}/: missing")
            continue
        files = [f for f in sorted(os.listdir(d)) if f.endswith((".c", ".h"))]
        own = {f for f in files if f.endswith(".h")}
        allowed = closure(public) | LEAF
        for fn in files:
            with open(os.path.join(d, fn)) as f:
                text = f.read()
            for kind, inc in INC.findall(text):
                where = f"{room}/{fn}"
                if kind == "<" and inc.startswith("ovrdma/"):
                    if inc[7:] not in allowed:
                        bad.append(f"{where}: includes <{inc}>, not a "
                                   f"header {room}/ may see")
                elif kind == '"':
                    if "/" in inc or inc not in own:
                        bad.append(f'{where}: includes "{inc}", not a '
                                   f"header of {room}/")
    if bad:
        print("\n".join(bad))
        return 1
    print(f"rooms: {len(ROOMS)} rooms and {len(HEADERS) + len(LEAF)} "
          "shared headers keep to their includes")
    return 0


def selftest(root):
    """The checker must catch what it is for: copies of the tree's
    shared headers and rooms with one forbidden include each."""
    import shutil
    import tempfile
    cases = [
        ("provider/x.c", "#include <ovrdma/engine.h>\n"),
        ("client/x.c", '#include "../engine/engine_impl.h"\n'),
        ("engine/x.c", "#include <ovrdma/ctl.h>\n"),
        ("congestion/x.c", "#include <ovrdma/engine.h>\n"),
        ("include/ovrdma/client.h", "#include <ovrdma/engine.h>\n"),
        ("service/x.c", '#include "mrtab.h"\n'),
    ]
    for path, line in cases:
        with tempfile.TemporaryDirectory() as tmp:
            for d in ["include"] + list(ROOMS):
                shutil.copytree(os.path.join(root, d), os.path.join(tmp, d))
            with open(os.path.join(tmp, path), "a") as f:
                f.write(line)
            with open(os.devnull, "w") as null:
                out, sys.stdout = sys.stdout, null
                try:
                    rc = main(tmp)
                finally:
                    sys.stdout = out
            if rc != 1:
                print(f"selftest: {path} with {line.strip()} not caught")
                return 1
    print(f"selftest: all {len(cases)} forbidden includes caught")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--selftest":
        sys.exit(selftest(args[1] if len(args) > 1 else "."))
    sys.exit(main(args[0] if args else "."))
