#!/bin/bash
# SPDX-License-Identifier: MIT
# verbs_cqx (tests/integration/verbs_cqx.c) on testbed node 1, in one
# process (two contexts, their RC QPs through ovrdmad's loopback):
# ibv_resize_cq and ibv_rereg_mr as docs/PROVIDER.md "Re-registration and
# resizing" says. Every case must print ok and the program PASS; no QP
# may be left on the node afterwards.
# usage: verbs-cqx.sh TESTBED VERBS_CQX [CASE...]
set -u
tb=$1 prog=$2
shift 2
if [ "$(id -u)" -ne 0 ]; then
	echo "verbs_cqx: needs root (network namespaces, DPDK); skipped"
	exit 77
fi
export OVRDMA_TESTBED_DIR=${OVRDMA_TESTBED_DIR:-/run/ovrdma-cqx-test.$$}
export OVRDMA_TESTBED_PREFIX=${OVRDMA_TESTBED_PREFIX:-ovrcx$$}
out=$OVRDMA_TESTBED_DIR.logs
trap '"$tb" down >/dev/null 2>&1' EXIT
rm -rf "$out"
mkdir -p "$out"
"$tb" up 2 >"$out/up.log" 2>&1 || {
	cat "$out/up.log"
	echo "verbs_cqx: FAIL: testbed did not come up"
	exit 1
}
timeout -k 5 240 "$tb" run 1 "$prog" "$@" >"$out/run.log" 2>&1
rc=$?
cat "$out/run.log"
# the context closes with the process: its QPs go with it
for _ in 1 2 3 4 5 6 7 8 9 10; do
	qps=$("$tb" ctl 1 show counters 2>/dev/null |
		awk '$1 == "engine_qps" { print $2 }')
	[ "$qps" = 0 ] && break
	sleep 0.2
done
if [ $rc -ne 0 ] || ! grep -q '^verbs_cqx: PASS$' "$out/run.log"; then
	echo "--- ovrdmad 1 (last lines)"
	tail -n 20 "$OVRDMA_TESTBED_DIR/n1/ovrdmad.log" 2>/dev/null
	echo "verbs_cqx: FAIL (exit $rc)"
	exit 1
fi
if [ "$qps" != 0 ]; then
	echo "verbs_cqx: FAIL: $qps QPs left on node 1"
	exit 1
fi
echo "verbs_cqx: PASS"
