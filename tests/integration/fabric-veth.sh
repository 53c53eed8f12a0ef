#!/bin/bash
# SPDX-License-Identifier: MIT
# ovrdma-fabric between two kernel network stacks: namespaces A and B, each
# joined by a veth pair to an AF_PACKET port of a fabric running in a third
# namespace. Checks that ARP and UDP get through (flooding, learning), then
# changes the fabric through its control socket at run time and checks
# what comes out against it: a loss rate, a rate limit, a black hole, the
# no-route drop, and the counters; finally a clean exit on SIGTERM.
# Needs root (exit 77, skipped, otherwise). Removes everything it made,
# also on failure.
# Usage: fabric-veth.sh OVRDMA_FABRIC FABRIC_UDP_PY
set -u

fab=$1
udp=$2
tag=ofv$$
nsf=$tag-f nsa=$tag-a nsb=$tag-b
dir=
fpid=

skip() {
	echo "SKIP: $*"
	exit 77
}
fail() {
	echo "FAIL: $*"
	if [ -n "$dir" ] && [ -S "$dir/ctl" ]; then
		echo "--- fabric counters (non-zero)"
		"$fab" ctl "$dir/ctl" stats | grep -v ' 0$'
	fi
	if [ -n "$dir" ] && [ -f "$dir/fabric.log" ]; then
		echo "--- fabric log (tail)"
		tail -n 30 "$dir/fabric.log"
	fi
	exit 1
}
cleanup() {
	if [ -n "$fpid" ] && kill -0 "$fpid" 2>/dev/null; then
		kill -TERM "$fpid" 2>/dev/null
		sleep 0.5
		kill -KILL "$fpid" 2>/dev/null
	fi
	for ns in "$nsf" "$nsa" "$nsb"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	[ -n "$dir" ] && rm -rf "$dir"
}

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, AF_PACKET)"
command -v ip >/dev/null || skip "no ip(8) (iproute2)"
command -v ethtool >/dev/null || skip "no ethtool"
command -v python3 >/dev/null || skip "no python3"
trap cleanup EXIT
ip netns add "$nsf" 2>/dev/null || skip "cannot create network namespaces"
ip netns add "$nsa" && ip netns add "$nsb" || fail "ip netns add"
dir=$(mktemp -d /tmp/ovrdma-fabric-veth.XXXXXX)

# fa/fb: the fabric's ends; eth0 in A and B. No IPv6 (router solicitations
# and MLD would only be counted as unsupported); no Tx checksum offload:
# a frame taken off a veth by AF_PACKET keeps a partial checksum otherwise.
ip link add fa netns "$nsf" type veth peer name eth0 netns "$nsa" &&
	ip link add fb netns "$nsf" type veth peer name eth0 netns "$nsb" ||
	fail "veth"
for ns in "$nsf" "$nsa" "$nsb"; do
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 || fail "sysctl"
	ip -n "$ns" link set lo up
done
ip -n "$nsf" link set fa up && ip -n "$nsf" link set fb up || fail "link up"
ip -n "$nsa" addr add 10.77.0.1/24 dev eth0 &&
	ip -n "$nsb" addr add 10.77.0.2/24 dev eth0 || fail "addr"
for ns in "$nsa" "$nsb"; do
	ip -n "$ns" link set eth0 up || fail "link up"
	ip netns exec "$ns" ethtool -K eth0 tx off >/dev/null 2>&1 ||
		fail "ethtool -K eth0 tx off"
done

ip netns exec "$nsf" "$fab" --no-huge --no-shconf --file-prefix "$tag" \
	-l 0 --no-pci --no-telemetry --log-level=5 \
	--vdev=net_af_packet0,iface=fa --vdev=net_af_packet1,iface=fb -- \
	--seed 7 --ctl "$dir/ctl" --pidfile "$dir/pid" >"$dir/fabric.log" 2>&1 &
fpid=$!
for _ in $(seq 150); do
	[ -s "$dir/pid" ] && break
	kill -0 "$fpid" 2>/dev/null || fail "the fabric did not start"
	sleep 0.1
done
[ -s "$dir/pid" ] || fail "no pidfile after 15 s"

ctl() {
	"$fab" ctl "$dir/ctl" "$@" || fail "ctl $*"
}
# counter PORT KEY
counter() {
	"$fab" ctl "$dir/ctl" stats "$1" | awk -v k="$2" '$1 == k { print $2 }'
}
# run COUNT SIZE GAP_S: A sends to B; sets received, unique, fbytes, secs
run=0
run() {
	run=$((run + 1))
	local ready=$dir/ready$run done=$dir/done$run out=$dir/recv$run
	ip netns exec "$nsb" python3 "$udp" recv 9000 "$ready" "$done" 0.5 \
		>"$out" &
	local rpid=$!
	for _ in $(seq 200); do
		[ -e "$ready" ] && break
		sleep 0.05
	done
	[ -e "$ready" ] || fail "the receiver did not start in 10 s"
	ip netns exec "$nsa" python3 "$udp" send 10.77.0.2 9000 "$1" "$2" "$3" ||
		fail "sender"
	touch "$done"
	wait "$rpid" || fail "receiver"
	read -r _ received _ unique _ fbytes _ secs <"$out"
	echo "run $run: sent $1 x $2 bytes, received $received (unique $unique) in $secs s"
}
# within VALUE LOW HIGH
within() {
	awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'
}

# 1. Clean fabric: ARP is flooded and answered, every datagram arrives.
run 300 100 0.001
[ "$received" -eq 300 ] || fail "clean: $received of 300 arrived"
[ "$(counter 0 flooded)" -ge 1 ] || fail "the ARP request was not flooded"
[ "$(counter 0 learned)" -ge 1 ] && [ "$(counter 1 learned)" -ge 1 ] ||
	fail "A and B not learned"
"$fab" ctl "$dir/ctl" routes | grep -q "10.77.0.2 port 1 mac" ||
	fail "no route to B"

# 2. 20 % loss on B's link, set at run time: within 4 sigma, and every
# missing datagram is one the fabric counts as lost.
loss0=$(counter 1 loss)
ctl set 1 loss=0.2 >/dev/null
run 2000 100 0.0002
lost=$(($(counter 1 loss) - loss0))
missing=$((2000 - received))
within "$received" 1528 1672 || fail "loss 0.2: $received of 2000 arrived"
[ "$lost" -ge "$missing" ] && [ "$lost" -le $((missing + 5)) ] ||
	fail "loss counter $lost, missing $missing"
[ "$unique" -eq "$received" ] || fail "duplicates without dup"

# 3. 20 Mbit/s: 1000 frames of 1042 bytes offered at twice that arrive at
# that rate (within 15 %, over 0.4 s); a 2 MB buffer holds them all.
ctl set 1 loss=0 rate=20m queue=2m >/dev/null
run 1000 1000 0.0002
[ "$received" -eq 1000 ] || fail "rate: $received of 1000 arrived"
mbps=$(awk -v b="$fbytes" -v s="$secs" -v n="$received" \
	'BEGIN { printf "%.2f", (s > 0 ? b * (n - 1) / n * 8 / s / 1e6 : 0) }')
echo "rate limit 20 Mbit/s: measured $mbps Mbit/s"
within "$mbps" 17 23 || fail "rate 20 Mbit/s measured as $mbps"

# 4. Black hole: nothing arrives, every frame counted as black-holed.
bh0=$(counter 1 blackhole)
ctl set 1 reset blackhole=1 >/dev/null
run 100 100 0.001
[ "$received" -eq 0 ] || fail "blackhole: $received arrived"
bh=$(($(counter 1 blackhole) - bh0))
[ "$bh" -ge 100 ] && [ "$bh" -le 105 ] || fail "blackhole counted $bh"
ctl set all reset >/dev/null

# 5. An address nobody has: dropped as no_route at A's port.
ip -n "$nsa" neigh add 10.77.0.99 lladdr 02:00:00:00:00:99 dev eth0 ||
	fail "neigh"
nr0=$(counter 0 no_route)
ip netns exec "$nsa" python3 "$udp" send 10.77.0.99 9000 10 100 0.001 ||
	fail "sender"
sleep 0.2
[ $(($(counter 0 no_route) - nr0)) -eq 10 ] || fail "no_route not counted"

# 6. Totals add up on B's port: offered = tx + every cause of drop.
s1=$("$fab" ctl "$dir/ctl" stats 1)
get() { echo "$s1" | awk -v k="$1" '$1 == k { print $2 }'; }
[ "$(get offered)" -eq $(($(get tx) + $(get loss) + $(get blackhole) + \
	$(get queue_drop) + $(get ge_loss) + $(get tx_drop) - $(get dup))) ] ||
	fail "port 1 counters do not add up: $(echo $s1)"

# 7. SIGTERM: clean exit, counters printed, socket and pidfile removed.
kill -TERM "$fpid"
wait "$fpid"
rc=$?
fpid=
[ "$rc" -eq 0 ] || fail "exit status $rc after SIGTERM"
grep -q '^p1.tx ' "$dir/fabric.log" || fail "no counters printed on exit"
[ ! -e "$dir/ctl" ] && [ ! -e "$dir/pid" ] || fail "socket or pidfile left"
echo "PASS"
