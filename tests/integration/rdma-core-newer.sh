#!/bin/bash
# SPDX-License-Identifier: MIT
# ovrdma against another rdma-core than the system's (docs/PROVIDER.md,
# "Newer rdma-core"): a build configured against an rdma-core installed
# in a prefix (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig meson setup ...),
# checked with that rdma-core's own libraries and programs
# (LD_LIBRARY_PATH=PREFIX/lib, PREFIX/bin first in PATH):
#   0. the build's provider is libovrdma-rdmav<PABI>.so for the PABI of
#      PREFIX's libibverbs (IBVERBS_PRIVATE_<PABI>) and links it;
#   on a two-node testbed (docs/TESTBED.md), through ovrdma-run:
#   a. PREFIX's ibv_devices lists ovrdma0 and ibv_devinfo -v reads it
#      (PORT_ACTIVE, the GID ::ffff:vIP RoCE v2);
#   b. PREFIX's ibv_rc_pingpong -g 0 between node 1 and node 2, data
#      checked (--chk), polling and with completion events (-e);
#   c. PREFIX's rping -C 100 -V between the two nodes (librdmacm over the
#      interposer's rdma_cm device), every ping printed by the client;
#   d. tests/integration/discovery.sh with PREFIX's programs and
#      libraries: a process whose kernel answers RDMA netlink (the
#      libfakenl.so stand-in), PREFIX's libibverbs and librdmacm
#      parsing the interposer's netlink answers.
# It needs root and such an rdma-core: OVRDMA_RDMA_CORE_PREFIX=PREFIX
# (e.g. /opt/rdma-core-64), and the build configured against it (BUILD,
# or OVRDMA_BUILD); without the prefix it is skipped (exit 77). Run it
# under the testbed lock on a shared machine:
#   OVRDMA_RDMA_CORE_PREFIX=/opt/rdma-core-64 flock /tmp/ovrdma-integ.lock \
#       tests/integration/rdma-core-newer.sh build-rc64
# usage: rdma-core-newer.sh [BUILD]
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${1:-${OVRDMA_BUILD:-}}
prefix=${OVRDMA_RDMA_CORE_PREFIX:-}

if [ -z "$prefix" ]; then
	echo "rdma-core-newer: OVRDMA_RDMA_CORE_PREFIX not set (the prefix of an" \
		"rdma-core built apart, with a build configured against it:" \
		"docs/PROVIDER.md, \"Newer rdma-core\"); skipped"
	exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "rdma-core-newer: needs root (network namespaces, DPDK); skipped"
	exit 77
fi
fail() {
	echo "rdma-core-newer: FAIL: $*"
	for f in "${OVRDMA_TESTBED_DIR:-/nonexistent}"/n*/ovrdmad.log; do
		[ -f "$f" ] && {
			echo "--- $f"
			tail -15 "$f"
		}
	done
	exit 1
}
[ -n "$build" ] && [ -d "$build/provider" ] ||
	fail "no build directory (BUILD or OVRDMA_BUILD, configured against $prefix)"
build=$(cd "$build" && pwd)
lib=$prefix/lib
[ -f "$lib/libibverbs.so.1" ] || lib=$(dirname "$(ls "$prefix"/lib*/libibverbs.so.1 2>/dev/null | head -n 1)")
[ -f "$lib/libibverbs.so.1" ] || fail "no libibverbs.so.1 under $prefix"
for p in ibv_devices ibv_devinfo ibv_rc_pingpong rping; do
	[ -x "$prefix/bin/$p" ] || fail "$prefix/bin/$p missing (rdma-core built without its programs?)"
done
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$prefix/bin:$PATH
export OVRDMA_BUILD=$build
tb=$src/tools/ovrdma-testbed

echo "== 0. the build against $prefix"
rel=$(readlink -f "$lib/libibverbs.so.1" | sed -n 's/.*\.so\.1\.[0-9]*\.\([0-9]*\).*/\1/p')
pabi=$(objdump -T "$lib/libibverbs.so.1" |
	sed -n 's/.*IBVERBS_PRIVATE_\([0-9][0-9]*\).*/\1/p' | head -n 1)
[ -n "$pabi" ] || fail "no IBVERBS_PRIVATE_<PABI> in $lib/libibverbs.so.1"
prov=$build/provider/libovrdma-rdmav$pabi.so
[ -f "$prov" ] || fail "$prov missing: is $build configured against $prefix? ($(ls "$build"/provider/libovrdma-rdmav*.so 2>&1))"
objdump -T "$prov" | grep -q "IBVERBS_PRIVATE_$pabi" ||
	fail "$prov does not link IBVERBS_PRIVATE_$pabi"
got=$(ldd "$prov" | awk '$1 == "libibverbs.so.1" {print $3}')
[ "$(readlink -f "$got")" = "$(readlink -f "$lib/libibverbs.so.1")" ] ||
	fail "$prov resolves libibverbs.so.1 to $got, not $prefix's"
for p in ibv_devices ibv_rc_pingpong rping rping:librdmacm; do
	l=${p#*:}
	[ "$l" = "$p" ] && l=libibverbs
	p=${p%%:*}
	got=$(ldd "$prefix/bin/$p" | awk -v l="$l.so.1" '$1 == l {print $3}')
	[ "$(readlink -f "$got")" = "$(readlink -f "$lib/$l.so.1")" ] ||
		fail "$p resolves $l.so.1 to $got, not $prefix's"
done
echo "rdma-core $rel (IBVERBS_PRIVATE_$pabi): $prov, linked to $(readlink -f "$lib/libibverbs.so.1")"

export OVRDMA_TESTBED_DIR=/run/ovrdma-rcn-test.$$
export OVRDMA_TESTBED_PREFIX=ovrrcn$$
trap '"$tb" down >/dev/null 2>&1' EXIT
"$tb" up 2 >"/tmp/ovrdma-rcn-up.$$.log" 2>&1 || {
	cat "/tmp/ovrdma-rcn-up.$$.log"
	rm -f "/tmp/ovrdma-rcn-up.$$.log"
	fail "testbed up 2"
}
rm -f "/tmp/ovrdma-rcn-up.$$.log"
a1=$("$tb" addr 1)

echo "== a. ibv_devices, ibv_devinfo"
out=$("$tb" run 1 ibv_devices 2>&1) || fail "ibv_devices: $out"
echo "$out"
grep -Eq '^\s*ovrdma0\s+[0-9a-f]{16}$' <<<"$out" || fail "ibv_devices does not list ovrdma0"
# which libibverbs loaded which provider (the dynamic linker's account)
out=$("$tb" run 1 env LD_DEBUG=files ibv_devices 2>&1 >/dev/null |
	grep -E 'file=[^ ]*libovrdma-rdmav[0-9]+\.so \[0\];  dynamically loaded by' | head -n 1)
grep -q "libovrdma-rdmav$pabi.so \[0\];  dynamically loaded by $lib/libibverbs.so.1" <<<"$out" ||
	fail "the provider was not loaded by $lib/libibverbs.so.1: '$out'"
echo "ld.so: $(sed 's/^[[:space:]]*[0-9]*:[[:space:]]*//' <<<"$out")"
out=$("$tb" run 1 ibv_devinfo -v -d ovrdma0 2>&1) || fail "ibv_devinfo -v: $out"
for want in 'hca_id:\s+ovrdma0' 'state:\s+PORT_ACTIVE \(4\)' \
	'link_layer:\s+Ethernet' "GID\\[\\s*0\\]:\\s+::ffff:${a1//./\\.}, RoCE v2"; do
	grep -Eq "$want" <<<"$out" || fail "ibv_devinfo -v: no line like '$want': $out"
done
echo "ibv_devinfo -v -d ovrdma0: PORT_ACTIVE, Ethernet, GID ::ffff:$a1 RoCE v2"

echo "== b. ibv_rc_pingpong"
port=18700
pingpong() { # args...
	local srv=$OVRDMA_TESTBED_DIR/pp.srv cli=$OVRDMA_TESTBED_DIR/pp.cli rc_s=0 rc_c=1
	port=$((port + 1))
	timeout 60 "$tb" run 1 ibv_rc_pingpong -d ovrdma0 -g 0 -p $port "$@" >"$srv" 2>&1 &
	local sp=$!
	sleep 0.5
	for _ in 1 2 3 4 5 6; do # the server may not listen yet
		timeout 60 "$tb" run 2 ibv_rc_pingpong -d ovrdma0 -g 0 -p $port "$@" \
			"$a1" >"$cli" 2>&1 && { rc_c=0; break; }
		rc_c=$?
		grep -q "Couldn't connect" "$cli" || break
		sleep 0.5
	done
	wait $sp || rc_s=$?
	if [ $rc_s -ne 0 ] || [ $rc_c -ne 0 ]; then
		echo "--- server"; cat "$srv"; echo "--- client"; cat "$cli"
		fail "ibv_rc_pingpong $* (server exit $rc_s, client exit $rc_c)"
	fi
	grep -Eq '^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$' "$cli" &&
		grep -Eq '^[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec/iter$' "$cli" ||
		fail "ibv_rc_pingpong $*: no result line: $(cat "$cli")"
	echo "ibv_rc_pingpong $*: $(grep Mbit "$cli"); $(grep usec/iter "$cli")"
}
pingpong -s 4096 -n 500 -c
pingpong -s 65536 -n 100 -c -e

echo "== c. rping -C 100 -V"
timeout 60 "$tb" run 1 rping -s -a "$a1" -C 100 -V >"$OVRDMA_TESTBED_DIR/rping.srv" 2>&1 &
rs=$!
rc=1
for _ in $(seq 20); do # the server may not listen yet
	sleep 0.5
	timeout 60 "$tb" run 2 rping -c -a "$a1" -C 100 -V -v \
		>"$OVRDMA_TESTBED_DIR/rping.cli" 2>&1 && { rc=0; break; }
	kill -0 $rs 2>/dev/null || break
done
wait $rs || rc=1
n=$(grep -c '^ping data: rdma-ping-' "$OVRDMA_TESTBED_DIR/rping.cli")
if [ $rc != 0 ] || [ "$n" != 100 ]; then
	echo "--- rping server"; cat "$OVRDMA_TESTBED_DIR/rping.srv"
	echo "--- rping client"; cat "$OVRDMA_TESTBED_DIR/rping.cli"
	fail "rping -C 100 -V (exit $rc, $n pings)"
fi
echo "rping -C 100 -V: both exit 0, $n pings verified; last: $(grep '^ping data' "$OVRDMA_TESTBED_DIR/rping.cli" | tail -n 1)"
"$tb" down >/dev/null 2>&1
trap - EXIT

echo "== d. discovery beside a kernel's RDMA netlink (tests/integration/discovery.sh)"
for f in service/ovrdmad tools/ovrdmactl tools/ovrdma-run \
	tests/integration/libfakenl.so tests/integration/discovery_check; do
	[ -e "$build/$f" ] || fail "$build/$f missing (ninja -C $build)"
done
"$here/discovery.sh" "$build/service/ovrdmad" "$build/tools/ovrdmactl" \
	"$build/tools/ovrdma-run" "$build" "$build/tests/integration/libfakenl.so" \
	"$build/tests/integration/discovery_check"
rc=$?
[ $rc = 0 ] || fail "discovery.sh with rdma-core $rel's programs (exit $rc)"
echo "rdma-core-newer: OK (rdma-core $rel, IBVERBS_PRIVATE_$pabi)"
