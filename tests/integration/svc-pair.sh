#!/bin/bash
# Two ovrdmad nodes joined back to back by a memif link (no fabric), and
# what the node service must do for applications (docs/SERVICE.md 8):
#   1. byte-exact WRITE, SEND, READ both ways and atomics (svc_xfer);
#   2. an application killed with -9 mid-transfer: its context, QPs and
#      MRs are reclaimed (ovrdmactl), the service keeps serving;
#   3. 1000 QPs between the two nodes, all transferring at once;
#   4. two tenants with the same vIPs on the same nodes: both work at
#      once, and a QP of one cannot reach a QP of the other;
#   5. ovrdmad killed with -9: the application gets errors, not a hang;
#      after a restart a new run works.
#   6. per-application limits: each enforced with its documented error
#      (on-demand registrations not counted as pinned; CQ rings)
#      and logged once, another application unaffected.
#   7. UD QPs, an SRQ and address handles (svc_ud): GRH and src_qp of
#      datagrams, SRQ_LIMIT_REACHED, datagrams for an unknown QPN or from
#      another tenant dropped and counted; SRQs and AHs reclaimed.
#   8. CPUs: dataplane_cores auto is the CPUs less one; core 0 on the
#      CPU EAL pinned, the control thread (and on a third node of two
#      cores, core 1) each on another CPU of its own, none left: any.
# usage: svc-pair.sh OVRDMAD SVC_XFER OVRDMACTL SVC_LIMITS [MB [SVC_UD]]
set -u
ovrdmad=$1 xfer=$2 ctl=$3 limits=$4 mb=${5:-64} ud=${6:-}

if [ "$(id -u)" -ne 0 ]; then
	echo "svc-pair: needs root (DPDK and memif sockets); skipped"
	exit 77
fi
dir=$(mktemp -d /tmp/ovrdma-pair.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

conf() { # name host role peer_vip peer_host
	cat >"$dir/$1.conf" <<EOC
[service]
socket = $dir/$1.sock
sysfs = $dir/sysfs-$1
host = $2
underlay_mtu = 9000
spin_us = 20
eal = --no-huge -m 256 --no-pci --no-telemetry --file-prefix=ovrpair$$$1 --vdev=net_memif0,role=$3,socket=$dir/memif.sock,bsize=10240
[limits]
qp_per_context = 1100
pd_per_context = 32
mr_per_context = 128
cq_per_context = 64
cq_mb_per_context = 32
pinned_mb_per_context = 300
[tenant]
vni = 100
vip = 192.168.1.$4 local ovrdma0
vip = 192.168.1.$5 host 10.0.0.$5 mac 02:00:00:00:00:0$5
sg = 192.168.1.0/24
[tenant]
vni = 200
vip = 192.168.1.$4 local ovrdma1
vip = 192.168.1.$5 host 10.0.0.$5 mac 02:00:00:00:00:0$5
sg = 192.168.1.0/24
EOC
}
conf a 10.0.0.1 server 1 2
conf b 10.0.0.2 client 2 1

start() { # name
	"$ovrdmad" -- -c "$dir/$1.conf" >>"$dir/$1.log" 2>&1 &
	pids+=($!)
	eval "pid_$1=$!"
	for _ in $(seq 100); do
		[ -S "$dir/$1.sock" ] && "$ctl" -s "$dir/$1.sock" show devices \
			>/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "svc-pair: ovrdmad $1 did not start:"
	cat "$dir/$1.log"
	exit 1
}
fail() {
	echo "svc-pair: FAIL: $*"
	for n in a b; do
		echo "--- $n.log"
		tail -20 "$dir/$n.log"
	done
	exit 1
}
counter() { # node name
	"$ctl" -s "$dir/$1.sock" show counters | awk -v k="$2" '$1 == k {print $2}'
}

start a
start b
for _ in $(seq 100); do
	[ "$(counter a port_link_up)" = 1 ] && [ "$(counter b port_link_up)" = 1 ] && break
	sleep 0.1
done

echo "== 1. transfers"
timeout 300 "$xfer" "$dir/a.sock" "$dir/b.sock" "$mb" || fail "svc_xfer"

echo "== 2. kill -9 an application mid-transfer"
"$xfer" "$dir/a.sock" "$dir/b.sock" 256 ovrdma0 hold >"$dir/hold1.log" 2>&1 &
app=$!
for _ in $(seq 100); do
	grep -q holding "$dir/hold1.log" && break
	sleep 0.1
done
sleep 0.5
[ "$(counter a engine_qps)" = 1 ] || fail "no QP while the application ran"
kill -9 $app
wait $app 2>/dev/null
for _ in $(seq 50); do
	[ "$(counter a engine_qps)" = 0 ] && [ "$(counter b engine_qps)" = 0 ] &&
		[ "$(counter a engine_mrs)" = 0 ] && break
	sleep 0.1
done
for n in a b; do
	[ "$(counter $n engine_qps)" = 0 ] || fail "$n kept the killed application's QPs"
	[ "$(counter $n engine_mrs)" = 0 ] || fail "$n kept the killed application's MRs"
	"$ctl" -s "$dir/$n.sock" show contexts | grep -q svc_xfer &&
		fail "$n still lists the killed application"
done
echo "reclaimed: no QP, MR or context left on either node"

echo "== 3. 1000 QPs at once"
timeout 300 "$xfer" "$dir/a.sock" "$dir/b.sock" 128 ovrdma0 qps 1000 || fail "1000 QPs"
[ "$(counter a engine_qps)" = 0 ] || fail "QPs left after the 1000-QP run"

echo "== 4. two tenants, same vIPs"
timeout 300 "$xfer" "$dir/a.sock" "$dir/b.sock" 32 ovrdma0 >"$dir/t100.log" 2>&1 &
t100=$!
timeout 300 "$xfer" "$dir/a.sock" "$dir/b.sock" 32 ovrdma1 >"$dir/t200.log" 2>&1 ||
	fail "tenant 200: $(tail -1 "$dir/t200.log")"
wait $t100 || fail "tenant 100: $(tail -1 "$dir/t100.log")"
echo "tenants 100 and 200 ran at once, both byte-exact"
foreign0=$(counter b rx_foreign)
timeout 120 "$xfer" "$dir/a.sock" "$dir/b.sock" 4 ovrdma0,ovrdma1 cross ||
	fail "cross-tenant isolation"
[ "$(counter b rx_foreign)" -gt "${foreign0:-0}" ] ||
	fail "the other tenant's packets were not counted as foreign"

echo "== 5. kill -9 ovrdmad under an application"
"$xfer" "$dir/a.sock" "$dir/b.sock" 256 ovrdma0 hold >"$dir/hold2.log" 2>&1 &
app=$!
for _ in $(seq 100); do
	grep -q holding "$dir/hold2.log" && break
	sleep 0.1
done
sleep 0.5
kill -9 "$pid_a"
t0=$(date +%s)
timeout 30 tail --pid=$app -f /dev/null
rc=0
wait $app || rc=$?
cat "$dir/hold2.log" | tail -2
[ $rc -eq 3 ] || fail "application exit $rc after ovrdmad died (3: told of the error)"
echo "application saw an error after $(($(date +%s) - t0)) s"
rm -f "$dir/a.sock"
start a
for _ in $(seq 100); do # the memif link comes back within a few seconds
	[ "$(counter a port_link_up)" = 1 ] && [ "$(counter b port_link_up)" = 1 ] && break
	sleep 0.1
done
timeout 300 "$xfer" "$dir/a.sock" "$dir/b.sock" 16 >/dev/null || fail "svc_xfer after restart"
echo "after restart: transfers OK"

echo "== 6. per-application limits"
"$limits" "$dir/b.sock" 32 128 300 64 1100 32 || fail "limits"
grep -q "limit qp_per_context = 1100 reached" "$dir/b.log" ||
	fail "the service did not log the limit it enforced"

if [ -n "$ud" ]; then
	echo "== 7. UD, SRQ, address handles"
	timeout 60 "$ud" "$dir/a.sock" "$dir/b.sock" ovrdma0 ovrdma0 ovrdma1 ||
		fail "svc_ud"
	for n in a b; do
		[ "$(counter $n srqs)" = 0 ] || fail "$n kept an SRQ"
		[ "$(counter $n engine_qps)" = 0 ] || fail "$n kept a UD QP"
	done
fi

# cpus_of PID THREAD_NAME: the CPUs that thread of PID may run on
cpus_of() {
	local t
	for t in /proc/"$1"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] &&
			awk '$1 == "Cpus_allowed_list:" { print $2 }' "$t/status" &&
			return 0
	done
	return 1
}
# core_cpus NODE CORE: the cpus column of show cores
core_cpus() {
	"$ctl" -s "$dir/$1.sock" show cores | awk -v c="$2" 'NR > 1 && $1 == c { print $NF }'
}

echo "== 8. CPUs (dataplane_cores, docs/SERVICE.md 5)"
# EAL (no -l: every CPU an lcore) pins the main thread, core 0, to one
# CPU; dataplane_cores is auto: the CPUs given less one (at least 1)
given=$(awk '$1 == "Cpus_allowed_list:" { print $2 }' /proc/$$/status)
ncpu=$(nproc)
want=$((ncpu > 2 ? ncpu - 1 : 1))
[ "$want" -gt 16 ] && want=16
[ "$(counter a dataplane_cores)" = "$want" ] ||
	fail "auto: $(counter a dataplane_cores) dataplane cores on $ncpu CPUs, want $want"
c0=$(core_cpus a 0)
ctlc=$(cpus_of "$pid_a" ovrdmad-ctl) || fail "no control thread"
echo "node a: $want cores on CPUs $given; core 0 on $c0, the control thread on $ctlc"
case "$c0" in *[-,]* | "") fail "core 0 not on one CPU: '$c0'" ;; esac
if [ "$ncpu" -gt 1 ] && [ "$want" = 1 ]; then
	case "$ctlc" in *[-,]* | "$c0") fail "the control thread on $ctlc, not on a CPU of its own beside core 0's ($c0)" ;; esac
fi
# two cores on a node of its own: core 1 on a CPU of its own, never on
# core 0's (the pin it would inherit from the main thread)
if [ "$ncpu" -ge 2 ]; then
	sed -e "s|^socket = .*|socket = $dir/c.sock|" -e "s|^sysfs = .*|sysfs = $dir/sysfs-c|" \
		-e "s|file-prefix=ovrpair$$a|file-prefix=ovrpair$$c|" \
		-e "s|socket=$dir/memif.sock|socket=$dir/memif-c.sock|" \
		-e "s|^spin_us = .*|&\ndataplane_cores = 2|" "$dir/a.conf" >"$dir/c.conf"
	start c
	c0=$(core_cpus c 0) c1=$(core_cpus c 1)
	ctlc=$(cpus_of "$pid_c" ovrdmad-ctl)
	echo "node c (2 cores): core 0 on $c0, core 1 on $c1, the control thread on $ctlc"
	case "$c1" in *[-,]* | "" | "$c0") fail "core 1 on '$c1' (core 0 on $c0)" ;; esac
	[ "$(cpus_of "$pid_c" ovrdmad-dp1)" = "$c1" ] ||
		fail "show cores says core 1 on $c1, its thread runs on $(cpus_of "$pid_c" ovrdmad-dp1)"
	if [ "$ncpu" = 2 ]; then
		[ "$ctlc" = "$given" ] || fail "no CPU left: the control thread on $ctlc, want any ($given)"
	fi
	kill -TERM "$pid_c"
	wait "$pid_c" || fail "ovrdmad c did not stop cleanly"
fi

kill -TERM "$pid_a" "$pid_b"
wait "$pid_a" || fail "ovrdmad a did not stop cleanly"
wait "$pid_b" || fail "ovrdmad b did not stop cleanly"
echo "svc-pair: OK"
