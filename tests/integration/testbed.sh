#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 6's acceptance through the testbed (docs/TESTBED.md): two nodes,
# each in its own network namespace with its own ovrdmad, joined by the
# lossy fabric emulator.
#   1. memif fabric, two tenants with the same vIPs; kernel TCP between the
#      vIPs works (the applications' out-of-band network);
#   2. no loss: MB (default 1024) each of RDMA WRITE, SEND and RDMA READ in
#      both directions and atomics, byte-exact (svc_xfer);
#   3. 1 % loss with reordering set at run time: the same again, and 1000
#      QPs between the two nodes all transferring at once;
#   4. an application killed with -9 mid-transfer: the peer's work
#      requests complete with errors at once (its node sends TERMINATE),
#      the killed one's resources are gone;
#   5. both tenants at once, and neither reaches the other;
#   6. veth fabric with kernel traffic routed through it at 1 % loss:
#      ovrdma and kernel TCP both cross it, byte-exact;
#   6b. two nodes wired directly (--fabric direct, no fabric): byte-exact,
#      fabric commands, a third node and impairments refused;
#   6c. two nodes joined by a veth pair, ovrdmad on AF_XDP at each end
#      (--fabric xdp): byte-exact, the XDP program on each end, the
#      loop woken by the XDP socket (it sleeps when idle), an underlay
#      MTU past one AF_XDP frame refused;
#   7. `up` over a running testbed replaces it, `down` (twice) leaves no
#      namespace, process, mount or hugepage behind.
#   8. per-QP state and counters through DPDK telemetry while a transfer
#      runs (/ovrdma/qps, /ovrdma/qp,QPN).
# usage: testbed.sh TESTBED SVC_XFER TCP_CHECK TELEMETRY [MB]
set -u
tb=$1 xfer=$2 tcpc=$3 tel=$4 mb=${5:-1024}

if [ "$(id -u)" -ne 0 ]; then
	echo "testbed: needs root (network namespaces, DPDK); skipped"
	exit 77
fi
export OVRDMA_TESTBED_DIR=/run/ovrdma-tb-test.$$
export OVRDMA_TESTBED_PREFIX=ovrtt$$
huge0=$(cat /proc/sys/vm/nr_hugepages)
trap '"$tb" down' EXIT

fail() {
	echo "testbed: FAIL: $*"
	for f in "$OVRDMA_TESTBED_DIR"/fabric.log "$OVRDMA_TESTBED_DIR"/n*/ovrdmad.log; do
		[ -f "$f" ] && {
			echo "--- $f"
			tail -15 "$f"
		}
	done
	exit 1
}
counter() { # node name
	"$tb" ctl "$1" show counters | awk -v k="$2" '$1 == k {print $2}'
}
fstat() { # name [port]
	"$tb" fabric stats ${2:-} | awk -v k="$1" '$1 == k {print $2}'
}
tcp_check() { # from to MB
	local ip out_s out_c
	ip=$("$tb" addr "$2")
	"$tb" exec "$2" python3 "$tcpc" serve "$ip" 18515 >"$OVRDMA_TESTBED_DIR/tcp.srv" 2>&1 &
	local srv=$!
	out_c=$("$tb" exec "$1" timeout 120 python3 "$tcpc" send "$ip" 18515 "$3") ||
		fail "kernel TCP from node $1 to $ip: $out_c"
	wait $srv
	out_s=$(cat "$OVRDMA_TESTBED_DIR/tcp.srv")
	[ "$(echo "$out_c" | cut -d' ' -f1-2)" = "$out_s" ] ||
		fail "kernel TCP: sent '$out_c', received '$out_s'"
	echo "kernel TCP node $1 -> $ip: $3 MB intact, ${out_c#* * }"
}

echo "== 1. up: memif fabric, 2 tenants"
"$tb" up 2 --tenants 2 || fail "up"
s1=$("$tb" sock 1) s2=$("$tb" sock 2)
[ "$("$tb" addr 1)" = 192.168.100.1 ] || fail "addr 1"
tcp_check 2 1 16

echo "== 2. no loss: $mb MB per operation"
timeout 600 "$xfer" "$s1" "$s2" "$mb" || fail "svc_xfer without loss"

echo "== 8. per-QP state through DPDK telemetry"
"$xfer" "$s1" "$s2" 64 ovrdma0 hold >/dev/null 2>&1 &
hold=$!
sleep 2
qpn=$(python3 "$tel" "$OVRDMA_TESTBED_PREFIX-n1" /ovrdma/qps |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["/ovrdma/qps"][0])') ||
	fail "telemetry /ovrdma/qps"
qp=$(python3 "$tel" "$OVRDMA_TESTBED_PREFIX-n1" "/ovrdma/qp,$qpn")
kill -9 $hold
wait $hold 2>/dev/null
echo "$qp" | python3 -c '
import json, sys
q = json.load(sys.stdin)["/ovrdma/qp"]
assert q["state"] == 3 and q["tx_pkts"] > 0 and q["peer_vip"] == 0xc0a86402, q
print("telemetry: QP %d state RTS, %d packets sent, srtt %d us" %
      (q["qpn"], q["tx_pkts"], q["srtt_ns"] // 1000))' || fail "telemetry /ovrdma/qp: $qp"

echo "== 3. 1 % loss with reordering"
"$tb" fabric set all loss=0.01 reorder=0.01/50us >/dev/null || fail "fabric set"
retx0=$(fstat loss)
timeout 900 "$xfer" "$s1" "$s2" "$mb" || fail "svc_xfer at 1 % loss"
lost=$(fstat loss) reord=$(fstat reordered)
[ "$lost" -gt "$retx0" ] && [ "$reord" -gt 0 ] ||
	fail "the fabric did not lose or reorder (loss $lost reordered $reord)"
echo "fabric dropped $lost and reordered $reord frames; every byte arrived"
timeout 300 "$xfer" "$s1" "$s2" 128 ovrdma0 qps 1000 || fail "1000 QPs at 1 % loss"

echo "== 4. kill -9 an application mid-transfer"
out=$(timeout 120 "$xfer" "$s1" "$s2" 64 ovrdma0 peerkill) || fail "peer's WRs after the kill: $out"
echo "$out"
# 16: IBV_WC_REM_ABORT_ERR, what a TERMINATE from the dead QP's node gives
# (a retry timeout would give 12, RETRY_EXC_ERR, much later)
echo "$out" | grep -q "failed with status 16 " ||
	fail "the peer was not told through a TERMINATE"
for _ in $(seq 50); do
	[ "$(counter 1 engine_qps)" = 0 ] && [ "$(counter 1 engine_mrs)" = 0 ] && break
	sleep 0.1
done
[ "$(counter 1 engine_qps)" = 0 ] && [ "$(counter 1 engine_mrs)" = 0 ] ||
	fail "node 1 kept the killed application's QPs or MRs"
"$tb" ctl 1 show contexts | grep -q svc_xfer && fail "node 1 still lists the killed application"
echo "the killed application's QPs, MRs and context are gone"

echo "== 5. two tenants, same vIPs, at once"
timeout 300 "$xfer" "$s1" "$s2" 32 ovrdma0 >"$OVRDMA_TESTBED_DIR/t0.log" 2>&1 &
t0=$!
timeout 300 "$xfer" "$s1" "$s2" 32 ovrdma1 >"$OVRDMA_TESTBED_DIR/t1.log" 2>&1 ||
	fail "tenant 2: $(tail -1 "$OVRDMA_TESTBED_DIR/t1.log")"
wait $t0 || fail "tenant 1: $(tail -1 "$OVRDMA_TESTBED_DIR/t0.log")"
timeout 120 "$xfer" "$s1" "$s2" 4 ovrdma0,ovrdma1 cross || fail "cross-tenant isolation"

echo "== 6. veth fabric, kernel traffic through it, 1 % loss"
"$tb" up 2 --fabric veth --kernel-via-fabric --loss 1% --mtu 9000 2>&1 | head -1
[ -S "$("$tb" sock 2)" ] || fail "up over a running testbed"
timeout 300 "$xfer" "$("$tb" sock 1)" "$("$tb" sock 2)" 64 || fail "svc_xfer over veth"
tcp_check 1 2 32
kp=$(fstat rx 2)
[ "${kp:-0}" -gt 1000 ] || fail "kernel traffic did not cross the fabric (port 2 rx ${kp:-0})"
echo "fabric kernel ports saw $kp frames from node 1; lost on all links: $(fstat loss)"

echo "== 6b. direct wire (no fabric): byte-exact, and what it refuses"
"$tb" up 2 --fabric direct 2>&1 | head -1
"$tb" status | grep -q "^fabric: none" || fail "direct: status"
timeout 300 "$xfer" "$("$tb" sock 1)" "$("$tb" sock 2)" 64 || fail "svc_xfer over the direct wire"
"$tb" fabric stats >/dev/null 2>&1 && fail "direct: a fabric command was taken"
"$tb" up 3 --fabric direct >/dev/null 2>&1 && fail "direct: three nodes taken"
"$tb" up 2 --fabric direct --loss 1% >/dev/null 2>&1 && fail "direct: --loss taken"

echo "== 6c. AF_XDP on a veth pair (no fabric)"
"$tb" up 2 --fabric xdp 2>&1 | head -1
"$tb" status | grep -q "^fabric: none" || fail "xdp: status"
for n in 1 2; do
	ip -n "$OVRDMA_TESTBED_PREFIX-n$n" link show ul0 | grep -q "prog/xdp" ||
		fail "xdp: no XDP program on node $n's ul0"
	grep -q "receive interrupts on (its XDP socket)" \
		"$OVRDMA_TESTBED_DIR/n$n/ovrdmad.log" ||
		fail "xdp: node $n's loop not woken by its XDP socket"
done
timeout 300 "$xfer" "$("$tb" sock 1)" "$("$tb" sock 2)" 64 || fail "svc_xfer over AF_XDP"
sl=$("$tb" ctl 1 show counters | awk '$1 == "sleeps" { print $2 }')
sleep 1
sl2=$("$tb" ctl 1 show counters | awk '$1 == "sleeps" { print $2 }')
[ "$((sl2 - sl))" -lt 200 ] || fail "xdp: idle ovrdmad slept $((sl2 - sl)) times in 1 s (napping, not sleeping)"
"$tb" up 2 --fabric xdp --mtu 4000 >/dev/null 2>&1 && fail "xdp: --mtu 4000 taken"

echo "== 7. down"
"$tb" down || fail "down"
"$tb" down || fail "second down"
ip netns list | grep -q "^$OVRDMA_TESTBED_PREFIX-" && fail "namespaces left behind"
pgrep -f "$OVRDMA_TESTBED_DIR" >/dev/null && fail "processes left behind"
[ -e "$OVRDMA_TESTBED_DIR" ] && fail "state directory left behind"
mount | grep -q " $OVRDMA_TESTBED_DIR/huge " && fail "hugetlbfs left mounted"
# nr_hugepages itself is shared with any other testbed running on the
# machine (each adds and gives back its own under a lock): compared only
# when no other one was seen
if [ -z "$(mount | grep ' type hugetlbfs ' | grep ' /run/ovrdma')" ] &&
	[ "$(cat /proc/sys/vm/nr_hugepages)" != "$huge0" ] && [ "$huge0" = 0 ]; then
	fail "hugepages $(cat /proc/sys/vm/nr_hugepages), were $huge0"
fi
echo "testbed: OK"
