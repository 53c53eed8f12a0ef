#!/bin/bash
# Malformed and foreign frames injected into a node's port are dropped and
# counted, and the node keeps serving (docs/SERVICE.md 8). Two ovrdmad on
# the two ends of a veth pair (DPDK af_packet ports), each end in its own
# network namespace (af_packet's fanout groups are per namespace and must
# not meet); inject.py sends thousands of bad frames out of node A's end
# while a transfer runs, then a second transfer checks the service.
# usage: svc-hostile.sh OVRDMAD SVC_XFER OVRDMACTL INJECT.PY
set -u
ovrdmad=$1 xfer=$2 ctl=$3 inject=$4

if [ "$(id -u)" -ne 0 ]; then
	echo "svc-hostile: needs root (network namespaces, DPDK); skipped"
	exit 77
fi
ns=ovrhostile$$
if ! ip netns add ${ns}a 2>/dev/null || ! ip netns add ${ns}b; then
	ip netns del ${ns}a 2>/dev/null
	echo "svc-hostile: cannot create network namespaces; skipped"
	exit 77
fi
dir=$(mktemp -d /tmp/ovrdma-hostile.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	# and anything else still in the namespaces
	for n in a b; do
		p=$(ip netns pids "$ns$n" 2>/dev/null)
		[ -n "$p" ] && kill -9 $p 2>/dev/null
	done
	wait 2>/dev/null
	ip netns del ${ns}a 2>/dev/null
	ip netns del ${ns}b 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
nsx() { # a|b command...
	local n=$1
	shift
	ip netns exec "$ns$n" "$@"
}
nsx a ip link add va type veth peer name vb netns ${ns}b || exit 1
nsx a ip link set va up
nsx b ip link set vb up

# framecnt=4096: the port's AF_PACKET ring holds 4096 frames, not the
# PMD's 512, so that the kernel does not drop injected frames while
# ovrdmad waits for a core on this 2-core machine (it dropped ~12 % of
# them there, every kind alike, before ovrdmad saw any); what the test
# counts is what ovrdmad does with the frames it receives.
conf() { # name iface host my peer
	cat >"$dir/$1.conf" <<EOC
[service]
socket = $dir/$1.sock
sysfs = $dir/sysfs-$1
host = $3
underlay_mtu = 1500
spin_us = 20
eal = --no-huge -m 256 --no-pci --no-telemetry --file-prefix=ovrhost$$$1 --vdev=net_af_packet0,iface=$2,framecnt=4096
[tenant]
vni = 100
vip = 192.168.1.$4 local ovrdma0
vip = 192.168.1.$5 host 10.0.0.$5 mac 02:00:00:00:00:0$5
sg = 192.168.1.0/24
EOC
}
conf a va 10.0.0.1 1 2
conf b vb 10.0.0.2 2 1
for n in a b; do
	# not through nsx(): $! must be ovrdmad itself (ip netns exec execs
	# it), not a subshell whose kill would leave ovrdmad running
	ip netns exec "$ns$n" "$ovrdmad" -- -c "$dir/$n.conf" >"$dir/$n.log" 2>&1 &
	pids+=($!)
done
for n in a b; do
	for _ in $(seq 100); do
		"$ctl" -s "$dir/$n.sock" show devices >/dev/null 2>&1 && break
		sleep 0.1
	done
done
counter() {
	"$ctl" -s "$dir/$1.sock" show counters | awk -v k="$2" '$1 == k {print $2}'
}
fail() {
	echo "svc-hostile: FAIL: $*"
	for n in a b; do echo "--- $n.log"; tail -n 20 "$dir/$n.log"; done
	exit 1
}

timeout 120 "$xfer" "$dir/a.sock" "$dir/b.sock" 8 >"$dir/x1.log" 2>&1 &
x1=$!
echo "injecting into node b while a transfer runs:"
nsx a python3 "$inject" va 6000 || fail "inject.py"
wait $x1 || fail "transfer during injection: $(tail -1 "$dir/x1.log")"
timeout 120 "$xfer" "$dir/a.sock" "$dir/b.sock" 8 >/dev/null ||
	fail "transfer after injection"
"$ctl" -s "$dir/b.sock" show counters | grep -E '^(rx_|drop_|engine_rx)' |
	grep -v ' 0$'
drops=$(counter b rx_dropped_overlay)
bad=$(($(counter b engine_rx_bad) + $(counter b rx_short_pdu)))
# 5 of every 6 kinds fail the overlay checks, the garbage PDUs the engine's
[ "${drops:-0}" -ge 4000 ] || fail "only ${drops:-0} overlay drops for 5000 bad frames"
[ "$bad" -ge 900 ] || fail "only $bad bad PDUs counted for 1000"
kill -0 "${pids[1]}" || fail "node b died"
echo "svc-hostile: OK ($drops frames dropped by the overlay, $bad bad PDUs; transfers byte-exact during and after)"
