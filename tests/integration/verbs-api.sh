#!/bin/bash
# SPDX-License-Identifier: MIT
# Extended verbs, the syscall-free data path and the provider's load-time
# refusal (docs/PROVIDER.md section 6), on two testbed nodes through the
# memif fabric at 1 % loss with 1 % reordering:
#   1. verbs_api (tests/integration/verbs_api.c) server on node 1, client
#      on node 2, both under strace -f: create_cq_ex / reg_dmabuf_mr
#      checks, create_qp's limits, a CQ of max_cqe entries (its ring
#      not committed), receive-only and send-only QPs and a receive
#      posted in RESET, a QP on an ibv_cq_ex, then a WRITE stream and a SEND
#      stream each between two getppid(2) markers; the thread that made
#      the markers must make no other system call between them. The
#      nodes' ovrdmad busy-poll for a second before sleeping (--spin-us),
#      so that the stream is the steady state: with a sleeping ovrdmad a
#      post costs one write(2) to wake it (docs/PROVIDER.md section 4,
#      "The data path"). Then completion events: a solicited-only arm
#      fires for a solicited SEND / WRITE_WITH_IMM and not for the others,
#      a plain arm for any receive, one event per arm.
#   2. verbs_api again with both ends on node 1 (ovrdmad's loopback for
#      its own vIPs, counted in tx_loopback);
#   3. the load-time check: ibv_devices run against a copy of libibverbs
#      named as rdma-core 99 gets the provider's refusal message and no
#      ovrdma device, while the real one lists ovrdma0.
#   4. verbs_api alone on node 2: IBV_EVENT_SRQ_LIMIT_REACHED through
#      ibv_get_async_event, then node 2's ovrdmad killed with -9 while
#      the program waits for events: IBV_EVENT_DEVICE_FATAL, posts EIO,
#      the SRQ's receives still posted flushed (WR_FLUSH_ERR, in order,
#      once), everything destroyed without error.
# usage: verbs-api.sh TESTBED VERBS_API [COUNT]
set -u
tb=$1 prog=$2 count=${3:-2000}

if [ "$(id -u)" -ne 0 ]; then
	echo "verbs-api: needs root (network namespaces, DPDK); skipped"
	exit 77
fi
for p in strace ibv_devices ss; do
	if ! command -v $p >/dev/null; then
		echo "verbs-api: $p missing (apt-get install strace ibverbs-utils iproute2); skipped"
		exit 77
	fi
done
export OVRDMA_TESTBED_DIR=/run/ovrdma-api-test.$$
export OVRDMA_TESTBED_PREFIX=ovrapi$$
work=$(mktemp -d /tmp/ovrdma-verbs-api.XXXXXX)
trap '"$tb" down >/dev/null 2>&1; rm -rf "$work"' EXIT
nfail=0
fail() {
	echo "verbs-api: FAIL: $*"
	nfail=$((nfail + 1))
}

"$tb" up 2 --loss 1% --reorder 1%/50us --spin-us 1000000 \
	>"$work/up.log" 2>&1 || {
	cat "$work/up.log"
	echo "verbs-api: FAIL: testbed up"
	exit 1
}

# ---- 1. verbs_api under strace ---------------------------------------------

# Counts, for each pair of getppid markers in an strace -f log, the
# system calls the marking thread made between them; prints the
# offending lines and "pairs=N calls=M probes=P". A probe is the
# client's liveness check, apart: one zero-timeout poll(2) of the control
# socket, made (at most once per 4096 empty polls of a CQ) only when
# ovrdmad's heartbeat is older than a second - ovrdmad did not run for a
# second (a loaded machine); the steady state makes none, and more than
# one per marked stream fails the check (docs/PROVIDER.md section 4).
between_markers() { # log
	awk '
		$2 ~ /^getppid\(/ {
			if (tid == "")
				tid = $1
			if ($1 == tid && !inside++)
				pairs++
			else if ($1 == tid)
				inside = 0
			next
		}
		inside && $1 == tid && $2 !~ /^(---|\+\+\+)/ {
			if ($0 ~ /poll\(\[\{fd=[0-9]+, events=POLLIN\}\], 1, 0\) = 0 \(Timeout\)/)
				probes++
			else
				calls++
			if (shown++ < 10)
				print "  " $0
		}
		END { printf "pairs=%d calls=%d probes=%d\n", pairs, calls, probes }' "$1"
}

wait_listen() {
	for _ in $(seq 150); do
		"$tb" exec 1 ss -ltn 2>/dev/null | grep -q ':18516 ' && return 0
		sleep 0.1
	done
	return 1
}

t0=$SECONDS
timeout -k 5 120 "$tb" run 1 strace -f -qq -o "$work/srv.strace" \
	"$prog" -n "$count" server >"$work/srv.log" 2>&1 &
spid=$!
wait_listen || fail "verbs_api server never listened"
timeout -k 5 120 "$tb" run 2 strace -f -qq -o "$work/cli.strace" \
	"$prog" -n "$count" client "$("$tb" addr 1)" >"$work/cli.log" 2>&1
crc=$?
wait "$spid"
src=$?
echo "verbs-api: verbs_api server exit $src, client exit $crc ($((SECONDS - t0)) s)"
grep -h "create_qp limits\|a CQ of" "$work/srv.log" | sed 's/^verbs_api: /verbs-api: /'
if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
	fail "verbs_api"
	echo "--- server"
	cat "$work/srv.log"
	echo "--- client"
	cat "$work/cli.log"
fi
for side in srv cli; do
	r=$(between_markers "$work/$side.strace")
	echo "verbs-api: $side: system calls between the markers: ${r##*$'\n'}"
	want=$([ $side = cli ] && echo 2 || echo 1)
	case ${r##*$'\n'} in
	"pairs=$want calls=0 probes="[0-$want])
		[ "${r##*probes=}" = 0 ] ||
			echo "verbs-api: $side: (ovrdmad's heartbeat was a second old: the client checked its socket)"
		;;
	*)
		fail "$side: the data path made system calls (or the markers are missing)"
		echo "$r"
		;;
	esac
done

# ---- 2. two applications on one node -------------------------------------

# Both ends on node 1: ovrdmad delivers frames for its own vIPs itself
# (a switch would not send them back); the same checks must hold.
loop_before=$("$tb" ctl 1 show counters | awk '$1 == "tx_loopback" {print $2}')
timeout -k 5 120 "$tb" run 1 "$prog" -p 18517 -n 500 server \
	>"$work/lsrv.log" 2>&1 &
spid=$!
timeout -k 5 120 "$tb" run 1 "$prog" -p 18517 -n 500 client "$("$tb" addr 1)" \
	>"$work/lcli.log" 2>&1
crc=$?
wait "$spid"
src=$?
loop_after=$("$tb" ctl 1 show counters | awk '$1 == "tx_loopback" {print $2}')
echo "verbs-api: one node: server exit $src, client exit $crc, tx_loopback $loop_before -> $loop_after"
if [ $src -ne 0 ] || [ $crc -ne 0 ] || [ "${loop_after:-0}" -le "${loop_before:-0}" ]; then
	fail "verbs_api with both ends on one node"
	echo "--- server"
	cat "$work/lsrv.log"
	echo "--- client"
	cat "$work/lcli.log"
fi

# ---- 3. the load-time refusal -------------------------------------------

real=$(ldd "$(command -v ibv_devices)" | awk '$1 == "libibverbs.so.1" {print $3}')
real=$(readlink -f "$real")
"$tb" run 1 ibv_devices >"$work/devices.log" 2>&1
if ! grep -qw ovrdma0 "$work/devices.log"; then
	fail "ibv_devices does not list ovrdma0"
	cat "$work/devices.log"
fi
mkdir "$work/lib"
cp "$real" "$work/lib/libibverbs.so.1.14.99.0"
ln -s libibverbs.so.1.14.99.0 "$work/lib/libibverbs.so.1"
"$tb" run 1 env LD_LIBRARY_PATH="$work/lib" ibv_devices \
	>"$work/refused.log" 2>&1
if grep -qw ovrdma0 "$work/refused.log" ||
	! grep -q "is rdma-core 99; this provider declares the private ABI of rdma-core 36..56 and stays out" \
		"$work/refused.log"; then
	fail "a libibverbs of rdma-core 99 was not refused"
	cat "$work/refused.log"
else
	echo "verbs-api: rdma-core 99 refused: $(grep -m1 'ovrdma:' "$work/refused.log")"
fi

# ---- 4. the SRQ limit, then ovrdmad killed under an application ---------

# verbs_api alone on node 2: SRQ_LIMIT_REACHED through loopback datagrams,
# then it waits in ibv_get_async_event; node 2's ovrdmad is killed with
# -9 (a crash: no goodbye on the socket) and DEVICE_FATAL must come.
timeout -k 5 90 "$tb" run 2 "$prog" alone >"$work/alone.log" 2>&1 &
apid=$!
for _ in $(seq 300); do
	grep -q "waiting for DEVICE_FATAL" "$work/alone.log" && break
	kill -0 $apid 2>/dev/null || break
	sleep 0.1
done
if grep -q "waiting for DEVICE_FATAL" "$work/alone.log"; then
	kill -9 "$(cat "$OVRDMA_TESTBED_DIR/n2/ovrdmad.pid")"
fi
wait $apid
arc=$?
echo "verbs-api: alone: exit $arc; $(grep -E 'SRQ_LIMIT|DEVICE_FATAL$|flushed' "$work/alone.log" | sed 's/^verbs_api: alone: //' | paste -sd ';' -)"
if [ $arc -ne 0 ]; then
	fail "verbs_api alone (SRQ limit, DEVICE_FATAL)"
	cat "$work/alone.log"
fi

[ $nfail -eq 0 ] && echo "verbs-api: ok" && exit 0
for n in 1 2; do
	echo "--- node $n ovrdmad log"
	tail -20 "$OVRDMA_TESTBED_DIR/n$n/ovrdmad.log" 2>/dev/null
done
exit 1
