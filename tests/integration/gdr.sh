#!/bin/bash
# SPDX-License-Identifier: MIT
# GPU memory registration without a GPU (docs/GPU.md): the fake CUDA
# driver (tests/fakecuda) is libcuda for the applications and for both
# nodes' ovrdmad (OVRDMA_LIBCUDA), two testbed nodes through the memif
# fabric at 1 % loss with 1 % reordering:
#   1. verbs_gdr server on node 1, client on node 2: RDMA WRITE, READ and
#      SEND/RECV between fake-GPU buffers (IPC-handle and fd exports),
#      byte-exact through cuMemcpyDtoH, a FETCH_ADD on GPU memory
#      refused (REM_OP_ERR); the nodes count the device copies, queued
#      from pinned frame buffers in batches, several batches in flight
#      at once (the fake's events answer NOT_READY FAKECUDA_EVENT_POLLS
#      times: the loop goes on while they run); then small WRITEs, SENDs
#      and READs, which both nodes' ovrdmad copy through the BAR (the
#      fake GDRCopy, its gdrdrv "loaded": FAKEGDR=1): BAR copies counted
#      on both nodes, byte-exact, and the READ of cuMem memory made
#      without gpuDirectRDMACapable falls back to the streams (a pin
#      failure on node 1);
#   2. forged handles through the control protocol: EINVAL, ovrdmad
#      keeps running; cuMem memory without a POSIX_FD handle type:
#      ibv_reg_mr EOPNOTSUPP;
#      ibv_reg_dmabuf_mr's errors and a window of a dma-buf (the client
#      registers its READ target through a dma-buf too); a GPU UUID
#      ovrdmad does not know: ENODEV and a log line;
#   3. an application holding two GPU registrations and two host ones
#      (ovrdmactl show mrs lists them: gpu, gpu, process, object) killed
#      with -9: the node's gdr_imports goes back to 0;
#   4. GPU registrations count against pinned_mb_per_context (10 on
#      both nodes) with host ones: ENOMEM beyond, room again after a
#      deregistration;
#   with CORES 2 (test gdr_cores), both nodes run two dataplane cores
#   and step 1 runs as two pairs at once, one on each core of each node:
#   both cores copy through their own copy channels (docs/GPU.md 1.1),
#   counted per core by ovrdmactl show cores;
#   5. pinned host memory (cuMemHostAlloc) registered with ibv_reg_mr on
#      node 1: a fake-GPU copy into it is what node 2 READs, node 2's
#      WRITE is what a fake-GPU copy out of it gives (the fake GPU has
#      its own mapping of the pages: a registration that swapped them
#      fails); ovrdmactl show mrs lists it on the object route.
# usage: gdr.sh TESTBED VERBS_GDR LIBFAKECUDA [fake|gpu [CORES]]
#
# gdr.sh TESTBED VERBS_GDR DRIVER [gpu]: DRIVER is the fake's path; with
# "gpu" (the gpu suite) it is the real driver (libcuda.so.1), the test
# skips (77) where it sees no device, and the fake-only steps (forged
# handles in the fake's format, a second UUID) are left out.
set -u
tb=$1 prog=$2 fake=$3 mode=${4:-fake} cores=${5:-1}

if [ "$(id -u)" -ne 0 ]; then
	echo "gdr: needs root (network namespaces, DPDK); skipped"
	exit 77
fi
export OVRDMA_LIBCUDA=$fake
if [ "$mode" = gpu ]; then
	"$prog" probe || {
		echo "gdr: no GPU here (needs an NVIDIA GPU and its driver); skipped"
		exit 77
	}
elif [ ! -e "$fake" ]; then
	echo "gdr: no fake CUDA driver at $fake; skipped"
	exit 77
else
	# lazy events: each batch is polled a few times before it is done
	export FAKECUDA_EVENT_POLLS=${FAKECUDA_EVENT_POLLS:-2}
	# the fake GDRCopy (same library) with its "gdrdrv" for ovrdmad
	export OVRDMA_LIBGDRAPI=$fake FAKEGDR=1
fi
export OVRDMA_TESTBED_DIR=${OVRDMA_TESTBED_DIR:-/run/ovrdma-gdr-test.$$}
export OVRDMA_TESTBED_PREFIX=${OVRDMA_TESTBED_PREFIX:-ovrgdr$$}
work=$(mktemp -d /tmp/ovrdma-gdr.XXXXXX)
pinned_mb=10 # each application registers at most 8 MB at once
trap '"$tb" down >/dev/null 2>&1; rm -rf "$work"' EXIT
nfail=0
fail() {
	echo "gdr: FAIL: $*"
	nfail=$((nfail + 1))
}
counter() { # node name
	"$tb" ctl "$1" show counters | awk -v n="$2" '$1 == n {print $2}'
}

coreopt=
[ "$cores" -gt 1 ] && coreopt="--cores $cores"
# shellcheck disable=SC2086 # options, split on purpose
"$tb" up 2 --loss 1% --reorder 1%/50us --limit pinned_mb_per_context=$pinned_mb \
	$coreopt ${OVRDMA_TESTBED_OPTS:-} >"$work/up.log" 2>&1 || {
	cat "$work/up.log"
	echo "gdr: FAIL: testbed up"
	exit 1
}

# ---- 1. WRITE, READ, SEND between GPU buffers ------------------------------
# One pair per dataplane core: the servers, then the clients, each takes
# the core with the fewest contexts.
t0=$SECONDS
spids=() cpids=()
for k in $(seq 0 $((cores - 1))); do
	VERBS_GDR_PORT=$((18531 + k)) timeout -k 5 120 "$tb" run 1 "$prog" server \
		>"$work/srv.$k.log" 2>&1 &
	spids+=($!)
	for _ in $(seq 150); do
		"$tb" exec 1 ss -ltn 2>/dev/null | grep -q ":$((18531 + k)) " && break
		sleep 0.1
	done
done
for k in $(seq 0 $((cores - 1))); do
	VERBS_GDR_PORT=$((18531 + k)) timeout -k 5 120 "$tb" run 2 "$prog" client \
		"$("$tb" addr 1)" >"$work/cli.$k.log" 2>&1 &
	cpids+=($!)
	sleep 0.2 # its context opened before the next one's
done
for k in $(seq 0 $((cores - 1))); do
	wait ${cpids[$k]}
	crc=$?
	wait ${spids[$k]}
	src=$?
	cat "$work/srv.$k.log" "$work/cli.$k.log" | grep -E 'differ|FETCH_ADD'
	echo "gdr: transfers (pair $k): server exit $src, client exit $crc ($((SECONDS - t0)) s)"
	if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
		fail "transfers between GPU buffers (pair $k)"
		cat "$work/srv.$k.log" "$work/cli.$k.log"
	fi
done
if [ "$cores" -gt 1 ]; then
	# every core of both nodes copied, each through its own channel
	for n in 1 2; do
		"$tb" ctl $n show cores | sed "s/^/gdr: node $n: /"
		# (dev_copies: the copies behind the engine's copy op, this
		# step's GPU memory's)
		c=$("$tb" ctl $n show cores | awk 'NR > 1 && $9 > 0 { n++ } END { print n + 0 }')
		[ "$c" = "$cores" ] ||
			fail "node $n: $c of $cores dataplane cores made device copies"
		grep -q "GPU copy engine: a channel per dataplane core ($cores)" \
			"$OVRDMA_TESTBED_DIR/n$n/ovrdmad.log" ||
			fail "node $n: ovrdmad did not open a copy channel per core"
	done
fi
for n in 1 2; do
	c=$(counter $n engine_dev_copies)
	echo "gdr: node $n: engine_dev_copies ${c:-none}, engine_dev_copy_bytes $(counter $n engine_dev_copy_bytes), engine_dev_atomic_refused $(counter $n engine_dev_atomic_refused)"
	[ "${c:-0}" -gt 0 ] || fail "node $n made no device copies"
	# the copy engine: frame buffers pinned, copies queued in
	# batches, several batches in flight at once, none failed
	# (docs/GPU.md 1.1)
	a=$(counter $n engine_dev_async) b=$(counter $n engine_dev_batches)
	p=$(counter $n gdr_pinned_bytes) e=$(counter $n engine_dev_fence_err)
	m=$(counter $n engine_dev_batch_max_inflight)
	r=$(counter $n engine_dev_batch_not_ready)
	echo "gdr: node $n: engine_dev_async ${a:-none}, engine_dev_batches ${b:-none}, engine_dev_batch_max_inflight ${m:-none}, engine_dev_batch_not_ready ${r:-none}, engine_dev_batch_waits $(counter $n engine_dev_batch_waits), gdr_pinned_bytes ${p:-none}, engine_dev_held $(counter $n engine_dev_held), dev_parked $(counter $n dev_parked), dev_naps $(counter $n dev_naps)"
	[ "${p:-0}" -gt 0 ] || fail "node $n pinned no frame buffers"
	[ "${a:-0}" -gt 0 ] || fail "node $n queued no device copies"
	[ "${b:-0}" -gt 0 ] && [ "${b:-0}" -lt "${a:-0}" ] ||
		fail "node $n: $b batches for $a queued copies"
	[ "${e:-1}" = 0 ] || fail "node $n: failed batches"
	if [ "$mode" != gpu ]; then
		# the loop went on while batches ran: more than one in flight
		[ "${m:-0}" -gt 1 ] ||
			fail "node $n: never more than ${m:-0} batch in flight (FAKECUDA_EVENT_POLLS=$FAKECUDA_EVENT_POLLS)"
		[ "${r:-0}" -gt 0 ] ||
			fail "node $n: no batch was ever polled before it was done"
	fi
done
[ "$(counter 1 engine_dev_atomic_refused)" = "$cores" ] ||
	fail "node 1 did not refuse the atomic on GPU memory"
# small messages through the BAR (docs/GPU.md 1.2): with the fake on both
# nodes; on a GPU machine only where GDRCopy is installed
for n in 1 2; do
	on=$(counter $n gdr_bar) bc=$(counter $n gdr_bar_copies)
	pf=$(counter $n gdr_bar_pin_failures)
	echo "gdr: node $n: gdr_bar ${on:-none}, gdr_bar_copies ${bc:-none}, gdr_bar_bytes $(counter $n gdr_bar_bytes), gdr_bar_reads $(counter $n gdr_bar_reads), gdr_bar_busy $(counter $n gdr_bar_busy), gdr_bar_pins $(counter $n gdr_bar_pins), gdr_bar_pin_failures ${pf:-none}, gdr_bar_mapped $(counter $n gdr_bar_mapped)"
	grep -h 'GDRCopy' "$OVRDMA_TESTBED_DIR/n$n/ovrdmad.log" | sed "s/^/gdr: node $n: /"
	[ "$mode" = gpu ] && continue
	[ "${on:-0}" = 1 ] || fail "node $n: GDRCopy not on"
	grep -q 'GDRCopy: on, BAR copies of messages up to 16384 bytes host to GPU, 2048 bytes GPU to host' \
		"$OVRDMA_TESTBED_DIR/n$n/ovrdmad.log" ||
		fail "node $n: ovrdmad did not say GDRCopy is on"
	[ "${bc:-0}" -gt 0 ] || fail "node $n made no BAR copies"
done
if [ "$mode" != gpu ]; then
	[ "$(counter 1 gdr_bar_pin_failures)" -gt 0 ] ||
		fail "node 1: the cuMem memory without gpuDirectRDMACapable was mapped"
	grep -q 'GDRCopy: no BAR mapping of a GPU allocation of 4194304 bytes' \
		"$OVRDMA_TESTBED_DIR/n1/ovrdmad.log" ||
		fail "node 1: ovrdmad did not say which allocation it cannot map"
fi

# ---- 2. bad handles ------------------------------------------------------
if [ "$mode" != gpu ]; then
	"$tb" run 1 "$prog" badhandle >"$work/bad.log" 2>&1 ||
		fail "forged handles: $(cat "$work/bad.log")"
	grep 'verbs_gdr:' "$work/bad.log"
fi
"$tb" run 1 "$prog" dmabuf >"$work/dmabuf.log" 2>&1 ||
	fail "ibv_reg_dmabuf_mr: $(cat "$work/dmabuf.log")"
grep 'verbs_gdr:' "$work/dmabuf.log"
if [ "$mode" != gpu ]; then
	FAKECUDA_UUID=0123456789abcdef0123456789abcdef \
		"$tb" run 1 "$prog" otherdev >"$work/otherdev.log" 2>&1 ||
		fail "GPU unknown to ovrdmad: $(cat "$work/otherdev.log")"
	grep 'verbs_gdr:' "$work/otherdev.log"
	grep -q 'GPU-01234567-89ab-cdef-0123-456789abcdef is not visible' \
		"$OVRDMA_TESTBED_DIR/n1/ovrdmad.log" ||
		fail "ovrdmad did not say which GPU it cannot see"
fi
"$tb" run 1 "$prog" nofd >"$work/nofd.log" 2>&1 ||
	fail "cuMem without POSIX_FD: $(cat "$work/nofd.log")"
grep 'verbs_gdr:' "$work/nofd.log"
"$tb" ctl 1 show counters >/dev/null || fail "ovrdmad on node 1 is gone"

# ---- 3. release on application death --------------------------------------
"$tb" run 2 "$prog" hold >"$work/hold.log" 2>&1 &
hpid=$!
for _ in $(seq 100); do
	grep -q registered "$work/hold.log" && break
	sleep 0.1
done
held=$(counter 2 gdr_imports)
# ovrdmactl show mrs: the held regions, each with its route
"$tb" ctl 2 show mrs >"$work/mrs.log"
sed 's/^/gdr: show mrs: /' "$work/mrs.log"
hp=$(pgrep -f "$prog hold" | head -1)
routes=$(awk -v p="${hp:-x}" '$2 == p {print $8 "/" $6 "/" $7}' "$work/mrs.log" | sort | tr '\n' ' ')
[ "$routes" = "gpu/2097152/LWRA gpu/2097152/LWRA object/65536/L process/65536/LWRA " ] ||
	fail "show mrs: the held regions are '$routes'"
app=$(pgrep -f "$prog hold" | head -1)
if [ -n "$app" ]; then
	kill -9 $(pgrep -f "$prog hold")
else
	fail "no '$prog hold' process found (pgrep: $(pgrep -V 2>&1 | head -1))"
	kill -9 $hpid
fi
wait $hpid 2>/dev/null
after=x
for _ in $(seq 50); do
	after=$(counter 2 gdr_imports)
	[ "$after" = 0 ] && break
	sleep 0.1
done
echo "gdr: node 2: gdr_imports while held $held, after kill -9 $after"
[ "$held" = 2 ] || fail "the held registrations were not imported ($held)"
[ "$after" = 0 ] || fail "imports not released after the application died"

# ---- 4. the pinned memory limit counts GPU registrations --------------------
"$tb" run 2 "$prog" pinned $pinned_mb >"$work/pinned.log" 2>&1 ||
	fail "pinned_mb_per_context: $(cat "$work/pinned.log")"
grep 'verbs_gdr:' "$work/pinned.log"
grep -q 'limit pinned_mb_per_context = 10 reached' \
	"$OVRDMA_TESTBED_DIR/n2/ovrdmad.log" ||
	fail "ovrdmad did not log the pinned limit"

# ---- 5. pinned host memory (cuMemHostAlloc) ----------------------------------
# The fake GPU reaches it through its own mapping of the pages: a GPU copy
# into it is what the peer READs, the peer's WRITE is what a GPU copy out
# of it reads (a registration that swapped the pages fails here).
timeout -k 5 60 "$tb" run 1 "$prog" hostsrv >"$work/hsrv.log" 2>&1 &
spid=$!
for _ in $(seq 150); do
	"$tb" exec 1 ss -ltn 2>/dev/null | grep -q ':18531 ' && break
	sleep 0.1
done
# the route it takes: the fake's memfd is an object root opens; a real
# driver's mapping of /dev/nvidiactl is not (docs/GPU.md)
want=object
[ "$mode" = gpu ] && want=process
"$tb" ctl 1 show mrs >"$work/hmrs.log"
grep -E '^ctx| 1048576 ' "$work/hmrs.log" | sed 's/^/gdr: show mrs: /'
awk '$6 == 1048576 {print $8}' "$work/hmrs.log" | grep -qx "$want" ||
	fail "show mrs: pinned host memory not on the $want route"
timeout -k 5 60 "$tb" run 2 "$prog" hostcli "$("$tb" addr 1)" \
	>"$work/hcli.log" 2>&1
crc=$?
wait $spid
src=$?
cat "$work/hsrv.log" "$work/hcli.log" | grep 'verbs_gdr: hostmem'
if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
	fail "pinned host memory between the GPU and the network (server exit $src, client exit $crc)"
	cat "$work/hsrv.log" "$work/hcli.log"
fi

[ $nfail -eq 0 ] && echo "gdr: ok" && exit 0
for n in 1 2; do
	echo "--- node $n ovrdmad log"
	tail -20 "$OVRDMA_TESTBED_DIR/n$n/ovrdmad.log" 2>/dev/null
done
exit 1
