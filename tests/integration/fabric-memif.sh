#!/bin/bash
# SPDX-License-Identifier: MIT
# ovrdma-fabric with memif ports (the testbed's way of connecting node
# services): fabric-gen is hosts A and B as the memif clients. Checks
# forwarding, then impairments set at run time through the control socket
# against what arrives, within 4 standard deviations: loss, duplication,
# reordering, and a rate limit; that the fabric sleeps when idle; and a
# clean exit. Prints the forwarding rate it saw. Needs root (exit 77,
# skipped, otherwise); removes what it made, also on failure.
# Usage: fabric-memif.sh OVRDMA_FABRIC FABRIC_GEN
set -u

fab=$1
gen=$2
tag=ofm$$
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
	[ -n "$dir" ] && rm -rf "$dir"
}

[ "$(id -u)" -eq 0 ] || skip "needs root (DPDK EAL)"
trap cleanup EXIT
dir=$(mktemp -d /tmp/ovrdma-fabric-memif.XXXXXX)

# socket-abstract=no: a socket file, reachable from other namespaces
"$fab" --no-huge --no-shconf --file-prefix "$tag-f" -l 0 --no-pci --no-telemetry \
	--log-level=5 \
	--vdev="net_memif0,role=server,socket=$dir/n0.sock,socket-abstract=no,id=0" \
	--vdev="net_memif1,role=server,socket=$dir/n1.sock,socket-abstract=no,id=0" \
	-- --seed 3 --ctl "$dir/ctl" --pidfile "$dir/pid" >"$dir/fabric.log" 2>&1 &
fpid=$!
for _ in $(seq 150); do
	[ -s "$dir/pid" ] && break
	kill -0 "$fpid" 2>/dev/null || fail "the fabric did not start"
	sleep 0.1
done
[ -s "$dir/pid" ] || fail "no pidfile after 15 s"
[ -S "$dir/n0.sock" ] && [ -S "$dir/n1.sock" ] || fail "no memif sockets"

ctl() {
	"$fab" ctl "$dir/ctl" "$@" >/dev/null || fail "ctl $*"
}
counter() {
	"$fab" ctl "$dir/ctl" stats "$1" | awk -v k="$2" '$1 == k { print $2 }'
}
# gen COUNT SIZE [more fabric-gen options]: sets sent received unique
# duplicates late seconds pps gbps
gen() {
	local count=$1 size=$2
	shift 2
	timeout 60 "$gen" --no-huge --no-shconf --file-prefix "$tag-g" \
		-l 1 --no-pci --no-telemetry --log-level=5 \
		--vdev="net_memif0,role=client,socket=$dir/n0.sock,socket-abstract=no,id=0" \
		--vdev="net_memif1,role=client,socket=$dir/n1.sock,socket-abstract=no,id=0" \
		-- --count "$count" --size "$size" "$@" >"$dir/gen.out" \
		2>"$dir/gen.err" || {
		cat "$dir/gen.err"
		fail "fabric-gen"
	}
	sent=0 received=0 unique=0 duplicates=0 late=0 seconds=0 pps=0 gbps=0
	eval "$(awk '{ printf "%s=%s\n", $1, $2 }' "$dir/gen.out")"
	echo "gen $count x $size $*: received $received unique $unique" \
		"dup $duplicates late $late, $pps pps, $gbps Gbit/s"
}
# binomial4 OBSERVED N P: within 4 sigma
binomial4() {
	awk -v x="$1" -v n="$2" -v p="$3" 'BEGIN {
		m = n * p; sd = sqrt(n * p * (1 - p));
		exit !(x >= m - 4 * sd - 1 && x <= m + 4 * sd + 1) }'
}

# 1. Clean: everything arrives, in order, once; the forwarding rate.
gen 200000 64
[ "$unique" -eq 200000 ] && [ "$duplicates" -eq 0 ] ||
	fail "clean fabric lost or duplicated frames"
echo "forwarding rate, 64-byte frames: $pps frames/s"
gen 100000 1500
echo "forwarding rate, 1500-byte frames: $pps frames/s, $gbps Gbit/s"

# 2. 5 % loss on B's link: what is missing is what the fabric lost (the
# hellos fabric-gen sends first may be lost too: a few more).
loss0=$(counter 1 loss)
ctl set 1 loss=0.05
gen 20000 256
binomial4 $((20000 - unique)) 20000 0.05 || fail "loss 0.05: $unique arrived"
lost=$(($(counter 1 loss) - loss0))
[ "$lost" -ge $((20000 - unique)) ] && [ "$lost" -le $((20000 - unique + 20)) ] ||
	fail "lost $lost, missing $((20000 - unique))"

# 3. 5 % duplication.
ctl set 1 loss=0 dup=0.05
gen 20000 256
[ "$unique" -eq 20000 ] || fail "dup: $unique unique"
binomial4 "$duplicates" 20000 0.05 || fail "dup 0.05: $duplicates copies"

# 4. 5 % held back 1 ms at 100 000 frames/s: each is overtaken.
ctl set 1 dup=0 reorder=0.05/1ms
gen 20000 256 --pps 100000
[ "$unique" -eq 20000 ] || fail "reorder: $unique unique"
binomial4 "$late" 20000 0.05 || fail "reorder 0.05: $late late"

# 5. 20 Mbit/s with a 1 MB buffer (0.4 s: it rides out the scheduling
# hiccups of a busy machine), offered 32 Mbit/s for 1 s: the arrivals come
# at 20 Mbit/s (within 5 %), the excess is tail-dropped.
qd0=$(counter 1 queue_drop)
ctl set 1 reset rate=20m queue=1m
gen 4000 1000 --pps 4000
awk -v g="$gbps" 'BEGIN { exit !(g >= 0.019 && g <= 0.021) }' ||
	fail "rate 20 Mbit/s measured as $gbps Gbit/s"
qd=$(($(counter 1 queue_drop) - qd0))
[ "$qd" -gt 100 ] && [ $((received + qd)) -eq 4000 ] ||
	fail "$qd tail drops, $received arrived"
ctl set all reset

# 6. Idle, it sleeps: under 20 % of a CPU over 2 s (about 2 % measured).
pid=$(cat "$dir/pid")
t0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
sleep 2
t1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
hz=$(getconf CLK_TCK)
echo "idle: $((t1 - t0)) ticks of $((2 * hz)) in 2 s"
[ $((t1 - t0)) -lt $((2 * hz / 5)) ] || fail "busy when idle"

# 7. quit through the control socket: clean exit.
ctl quit
wait "$fpid"
rc=$?
fpid=
[ "$rc" -eq 0 ] || fail "exit status $rc after quit"
grep -q '^p1.dup ' "$dir/fabric.log" || fail "no counters printed on exit"
echo "PASS"
