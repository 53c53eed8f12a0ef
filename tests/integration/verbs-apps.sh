#!/bin/bash
# SPDX-License-Identifier: MIT
# Our own plain-libibverbs programs between two testbed nodes
# (docs/TESTBED.md), through ovrdma-run, exchanging their QP numbers over
# TCP on the nodes' kernel vIP network as ibv_rc_pingpong does
# (docs/PROVIDER.md section 6):
#   integrity: verbs_integrity at 0 %, 1 % and 5 % loss (1 % reordering
#              by 50 us with loss): every operation byte-exact, guards
#              untouched, completions in order; and over UC QPs (--uc:
#              WRITE, WRITE_IMM, SEND, SEND_IMM) at 0 %, where nothing
#              may be dropped;
#   abuse:     verbs_abuse: each misuse of the verbs gives the documented
#              error, never a crash or a hang, and a good transfer follows;
#   mem:       verbs_mem: memory registration's semantics (memory the
#              application also reaches otherwise: shared mappings, a
#              file, a forked child, another thread; MADV_DONTNEED and
#              munmap of registered memory; private memory and fork with
#              and without ibv_fork_init, 1 GiB, a read-only page;
#              on-demand paging: explicit, implicit, ibv_advise_mr), each
#              case's verdict printed;
#              CASE... (default: all) are its case names;
#   qpx:       verbs_qpx: the extended QP API (ibv_create_qp_ex, ibv_wr_*)
#              for every opcode over RC and SEND over UD, byte-exact;
#              batches, wr_abort, errors, queue full, ibv_post_send in
#              between; at 0 % loss, then RC only at 1 % loss with 1 %
#              reordering (UD does not retransmit); under strace, 200
#              batches make no system call (ovrdmad spinning);
#   cores:     verbs_integrity with two dataplane cores in each ovrdmad
#              (ovrdma-testbed up --cores 2): four pairs at once, 16 QPs
#              each (64 QPs, each process's QPs spread over both cores,
#              sharing its CQs), one pair alone whose QPs must be on both
#              cores while it runs, at 0 %,
#              1 % and 5 % loss, each byte-exact; then one long pair (its
#              QPs on both cores) while ibv_rc_pingpong runs come and go
#              (QPs and regions created and destroyed beside it); then
#              four clients killed with
#              -9 mid-transfer (contexts on both cores): every QP and
#              context released on both nodes; each port with a queue
#              pair per core, the fabric putting every frame on the queue
#              of the core serving its QP (its outer source port says
#              which): after the loss phases, both cores of both nodes
#              received from the port and no frame was handed between
#              cores; then the same four pairs at 1 % loss through a
#              fabric forwarding on two workers (up --fabric-workers 2),
#              steered as before, the loss applied; then the direct wire
#              (up --fabric direct --cores 2: a memif queue pair per
#              pair of cores) with four pairs at once, byte-exact, each
#              core of both nodes receiving on its own queues and no
#              frame handed between cores (sends steered to the peer's
#              core of their QP); and the same wire with one port queue,
#              core 0 handing frames to core 1 and core 1 its sends to
#              core 0, byte-exact;
#   mw:        verbs_mw: memory windows (type 1 and 2: bytes exactly in
#              the window, out of it, without its right, invalidated
#              locally and by SEND_WITH_INV, re-bound, deallocated: the
#              remote access error; bind errors, dereg EBUSY), at 0 %
#              loss, then 1 % loss with 1 % reordering.
# Server on node 1, client on node 2, each under a timeout. Both must exit
# 0 and print PASS; afterwards no QP is left on either node.
# usage: verbs-apps.sh TESTBED integrity|abuse|mem|qpx|mw PROGRAM [CASE...]
#   VERBS_SEED=N repeats an integrity run; OVRDMA_TESTBED_DIR /
#   OVRDMA_TESTBED_PREFIX name the testbed (default: one of this run's own).
set -u
tb=$1 mode=$2 prog=$3
shift 3
name=$(basename "$prog")

if [ "$(id -u)" -ne 0 ]; then
	echo "$name: needs root (network namespaces, DPDK); skipped"
	exit 77
fi
case $mode in integrity | abuse | mem | qpx | mw | cores) ;; *)
	echo "usage: verbs-apps.sh TESTBED integrity|abuse|mem|qpx|mw|cores PROGRAM [CASE...]"
	exit 2
	;;
esac
export OVRDMA_TESTBED_DIR=${OVRDMA_TESTBED_DIR:-/run/ovrdma-va-test.$$}
export OVRDMA_TESTBED_PREFIX=${OVRDMA_TESTBED_PREFIX:-ovrva$$}
trap '"$tb" down >/dev/null 2>&1' EXIT
out=$OVRDMA_TESTBED_DIR.logs
rm -rf "$out"
mkdir -p "$out"
t_start=$SECONDS
nfail=0
summary=()
port=18700

# what the fabric counted so far: "lost N reordered M" (all ports)
fabric_counts() {
	"$tb" fabric stats 2>/dev/null |
		awk '$1 == "loss" { l += $2 } $1 == "reordered" { r += $2 }
		     END { printf "%d %d", l, r }'
}

counter() { # node name
	"$tb" ctl "$1" show counters | awk -v k="$2" '$1 == k {print $2}'
}

# pair LABEL LIMIT [ARGS...]: server on node 1, client on node 2 (the
# client under ${wrap[@]} when set)
wrap=()
pair() {
	local label=$1 limit=$2
	shift 2
	local slog=$out/$label.srv clog=$out/$label.cli t0=$SECONDS src crc verdict=ok
	local spid line f0 f1
	port=$((port + 1))
	f0=$(fabric_counts)
	timeout -k 5 "$limit" "$tb" run 1 "$prog" server -p $port >"$slog" 2>&1 &
	spid=$!
	timeout -k 5 "$limit" "$tb" run 2 "${wrap[@]}" "$prog" client "$("$tb" addr 1)" \
		-p $port "$@" >"$clog" 2>&1
	crc=$?
	wait $spid
	src=$?
	if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
		verdict="FAIL (exit: server $src, client $crc)"
	elif ! grep -q ': PASS' "$slog" || ! grep -q ': PASS' "$clog"; then
		verdict="FAIL (no PASS line)"
	fi
	line=$(grep -m1 ': PASS' "$clog" | sed 's/^[^:]*: PASS: //')
	f1=$(fabric_counts)
	if [ $mode = integrity ]; then
		set -- $f0 $f1
		line="$line; fabric dropped $(($3 - $1)), reordered $(($4 - $2))"
	fi
	summary+=("$(printf '%-22s %-5s %4ds  %s' "$label" "${verdict%% *}" \
		$((SECONDS - t0)) "${line:-$verdict}")")
	echo "--- $label: $verdict ($((SECONDS - t0)) s)"
	if [ "$verdict" != ok ]; then
		nfail=$((nfail + 1))
		echo "--- server log"
		cat "$slog"
		echo "--- client log"
		cat "$clog"
		for n in 1 2; do
			echo "--- ovrdmad $n (last lines)"
			tail -n 15 "$OVRDMA_TESTBED_DIR/n$n/ovrdmad.log" 2>/dev/null
		done
	else
		cat "$clog"
		grep -E ': (PASS|SKIP)' "$slog"
	fi
}

# qpx: ovrdmad busy-polls for a second before it sleeps, so that the
# marked stream of verbs_qpx (below) finds it awake without a wake-up
# write(2), as verbs-api.sh does
up=()
[ $mode = qpx ] && up=(--spin-us 1000000)
[ $mode = cores ] && up=(--cores 2)
"$tb" up 2 "${up[@]}" >"$out/up.log" 2>&1 || {
	cat "$out/up.log"
	echo "$name: FAIL: testbed did not come up"
	exit 1
}

# mem: one 2 MB page more for its hugetlb case, where the kernel has
# one (the testbed's DPDK processes take every free page); given back
# relative to what is there then, as the testbed does with its own
hp=/proc/sys/vm/nr_hugepages
if [ $mode = mem ] && [ -w $hp ]; then
	hp0=$(cat $hp)
	echo $((hp0 + 1)) >$hp 2>/dev/null
	if [ "$(cat $hp)" -gt "$hp0" ]; then
		trap '"$tb" down >/dev/null 2>&1; echo $(($(cat $hp) - 1)) >$hp' EXIT
	fi
fi

seed=()
[ -n "${VERBS_SEED:-}" ] && seed=(--seed "$VERBS_SEED")
if [ $mode = integrity ]; then
	# modest amounts: the 2-core machine runs two ovrdmad, the fabric and
	# both programs; 5 % loss costs many retransmissions
	pair loss-0 150 "${seed[@]}" --qps 4 --window 6 --rounds 200
	pair uc-loss-0 150 "${seed[@]}" --uc --qps 4 --window 6 --rounds 200
	for n in 1 2; do
		v=$(counter $n engine_uc_msg_dropped)
		if [ "${v:-x}" != 0 ]; then
			echo "$name: FAIL: node $n dropped ${v:-?} UC messages at 0 % loss"
			nfail=$((nfail + 1))
		fi
	done
	"$tb" fabric set all loss=0.01 reorder=0.01/50us >/dev/null
	pair loss-1-reorder-1 150 "${seed[@]}" --qps 4 --window 6 --rounds 150
	"$tb" fabric set all loss=0.05 reorder=0.01/50us >/dev/null
	pair loss-5-reorder-1 150 "${seed[@]}" --qps 4 --window 6 --rounds 100 \
		--max-size $((2 << 20))
elif [ $mode = mem ]; then
	# the server holds the memory under test and prints every case's
	# verdict (also when one fails: its log is printed then)
	pair mem 300 "$@"
	# the server's memory took both routes, and each counted its bytes
	# (the cases move 64 KB or more each way on both)
	if [ $# -eq 0 ] || [ $# -gt 2 ]; then
		for k in engine_host_copy_bytes proc_copy_bytes; do
			v=$(counter 1 $k)
			if [ "${v:-0}" -lt 65536 ]; then
				echo "$name: FAIL: node 1 counted ${v:-no} $k"
				nfail=$((nfail + 1))
			fi
		done
	fi
elif [ $mode = qpx ]; then
	# the client's thread makes no system call between verbs_qpx's two
	# getppid(2) markers (200 batches through ibv_wr_*), counted in an
	# strace -f log as verbs-api.sh counts them
	if command -v strace >/dev/null; then
		wrap=(strace -f -qq -o "$out/qpx.strace")
	else
		echo "$name: no strace: the system calls of ibv_wr_* are not counted"
	fi
	pair qpx-loss-0 120 "${seed[@]}"
	if [ ${#wrap[@]} -gt 0 ]; then
		r=$(awk '
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
				# the liveness probe (verbs-api.sh) apart
				if ($0 ~ /poll\(\[\{fd=[0-9]+, events=POLLIN\}\], 1, 0\) = 0 \(Timeout\)/)
					probes++
				else
					calls++
				if (shown++ < 10)
					print "  " $0
			}
			END { printf "pairs=%d calls=%d probes=%d\n", pairs, calls, probes }' "$out/qpx.strace")
		echo "$name: system calls between the markers: ${r##*$'\n'}"
		if [ "${r##*$'\n'}" != "pairs=1 calls=0 probes=0" ] &&
			[ "${r##*$'\n'}" != "pairs=1 calls=0 probes=1" ]; then
			echo "$name: FAIL: ibv_wr_* made system calls (or the markers are missing)"
			echo "$r"
			nfail=$((nfail + 1))
		fi
		wrap=()
	fi
	"$tb" fabric set all loss=0.01 reorder=0.01/50us >/dev/null
	pair qpx-loss-1-reorder-1 120 "${seed[@]}" --no-ud
elif [ $mode = cores ]; then
	# several pairs at once: contexts go to the core serving fewest
	many() { # LABEL LIMIT N ARGS...
		local label=$1 limit=$2 k=$3 i pids=() rc bad=0 t0=$SECONDS
		shift 3
		for i in $(seq "$k"); do
			port=$((port + 1))
			timeout -k 5 "$limit" "$tb" run 1 "$prog" server -p $port \
				>"$out/$label.$i.srv" 2>&1 &
			pids+=($!)
			timeout -k 5 "$limit" "$tb" run 2 "$prog" client \
				"$("$tb" addr 1)" -p $port "$@" \
				>"$out/$label.$i.cli" 2>&1 &
			pids+=($!)
		done
		for i in "${pids[@]}"; do
			wait "$i"
			rc=$?
			[ $rc = 0 ] || bad=$((bad + 1))
		done
		for i in $(seq "$k"); do
			grep -q ': PASS' "$out/$label.$i.cli" || bad=$((bad + 1))
		done
		summary+=("$(printf '%-22s %-5s %4ds  %d pairs at once' "$label" \
			"$([ $bad = 0 ] && echo ok || echo FAIL)" $((SECONDS - t0)) "$k")")
		echo "--- $label: $k pairs, $bad failed"
		if [ $bad != 0 ]; then
			nfail=$((nfail + 1))
			tail -n 5 "$out/$label".*
			for n in 1 2; do
				"$tb" ctl $n show cores
				tail -n 15 "$OVRDMA_TESTBED_DIR/n$n/ovrdmad.log"
			done
		fi
	}
	# every core of both nodes received from the port on queues of
	# its own, and no frame was handed between cores: the fabric (or
	# the direct wire) put each on the queue of the core serving its QP
	steered() { # LABEL
		local n got handed
		for n in 1 2; do
			"$tb" ctl $n show cores
			read -r got handed <<<"$("$tb" ctl $n show cores |
				awk 'NR > 1 { if ($5 > 0) r++; h += $7 } END { print r + 0, h + 0 }')"
			summary+=("$(printf '%-22s %-5s %4s  node %d: %d of 2 cores received, %d frames handed' \
				"$1-n$n" "$([ "$got" = 2 ] && [ "$handed" = 0 ] && echo ok || echo FAIL)" \
				- "$n" "$got" "$handed")")
			if [ "$got" != 2 ] || [ "$handed" != 0 ]; then
				echo "$name: FAIL: $1: node $n: $got of 2 cores received from the port, $handed frames handed between cores"
				nfail=$((nfail + 1))
			fi
		done
	}
	[ "$(counter 1 dataplane_cores)" = 2 ] || {
		echo "$name: FAIL: node 1 does not run two dataplane cores"
		exit 1
	}
	grep -q 'net_memif): 2 queue pairs' "$OVRDMA_TESTBED_DIR/n1/ovrdmad.log" || {
		echo "$name: FAIL: node 1's port has not 2 queue pairs"
		nfail=$((nfail + 1))
	}
	many cores-loss-0 150 4 "${seed[@]}" --qps 16 --window 4 --rounds 60
	# both cores served a pair, on both nodes
	for n in 1 2; do
		"$tb" ctl $n show cores
		busy=$("$tb" ctl $n show cores |
			awk 'NR > 1 && $4 > 0 { n++ } END { print n + 0 }')
		if [ "$busy" != 2 ]; then
			echo "$name: FAIL: node $n: $busy of 2 cores did work"
			nfail=$((nfail + 1))
		fi
	done
	# the same per core through DPDK telemetry
	tel=$(dirname "$0")/telemetry.py
	for k in 0 1; do
		python3 "$tel" "$OVRDMA_TESTBED_PREFIX-n1" "/ovrdma/core,$k" |
			python3 -c 'import json, sys
c = json.load(sys.stdin)["/ovrdma/core"]
assert c["core"] == '"$k"' and c["busy_ns"] > 0 and c["engine_rx_pkts"] > 0, c
print("telemetry: core %d busy %d ms, %d packets received" %
      (c["core"], c["busy_ns"] // 1000000, c["engine_rx_pkts"]))' || {
			echo "$name: FAIL: telemetry /ovrdma/core,$k of node 1"
			nfail=$((nfail + 1))
		}
	done
	# one process's QPs over both cores (what ib_write_bw -q N needs):
	# one pair, 16 QPs sharing two CQs; while it runs (alone), node 2
	# has QPs on both cores; byte-exact as every pair
	port=$((port + 1))
	timeout -k 5 150 "$tb" run 1 "$prog" server -p $port \
		>"$out/one-proc.srv" 2>&1 &
	one_s=$!
	timeout -k 5 150 "$tb" run 2 "$prog" client "$("$tb" addr 1)" \
		-p $port "${seed[@]}" --qps 16 --window 4 --rounds 200 \
		>"$out/one-proc.cli" 2>&1 &
	one_c=$!
	spread=0
	for _ in $(seq 100); do
		spread=$("$tb" ctl 2 show cores | awk 'NR > 1 && $3 > 0 { q++ }
			END { print q + 0 }')
		[ "$spread" = 2 ] && break
		kill -0 $one_c 2>/dev/null || break
		sleep 0.1
	done
	"$tb" ctl 2 show cores
	one_bad=0
	wait $one_s || one_bad=1
	wait $one_c || one_bad=1
	grep -q ': PASS' "$out/one-proc.cli" || one_bad=1
	summary+=("$(printf '%-22s %-5s %4s  one process, 16 QPs on %d of 2 cores of node 2' \
		cores-one-process "$([ $one_bad = 0 ] && [ "$spread" = 2 ] && echo ok || echo FAIL)" - "$spread")")
	if [ $one_bad != 0 ] || [ "$spread" != 2 ]; then
		echo "$name: FAIL: one process's 16 QPs: $one_bad, on $spread of 2 cores"
		tail -n 5 "$out"/one-proc.*
		nfail=$((nfail + 1))
	fi
	"$tb" fabric set all loss=0.01 reorder=0.01/50us >/dev/null
	many cores-loss-1 150 4 "${seed[@]}" --qps 16 --window 4 --rounds 40
	"$tb" fabric set all loss=0.05 reorder=0.01/50us >/dev/null
	many cores-loss-5 240 4 "${seed[@]}" --qps 16 --window 4 --rounds 20 \
		--max-size $((256 << 10))
	steered fabric-steer
	"$tb" fabric set all reset >/dev/null
	# a long pair on one core; pingpongs come and go on the other
	(pair churn-long 200 "${seed[@]}" --qps 8 --window 6 --rounds 300 \
		>"$out/churn-long.log" 2>&1; echo "rc $?" >>"$out/churn-long.log") &
	lp=$!
	sleep 1
	churn=0
	for i in $(seq 15); do
		port=$((port + 1))
		timeout 30 "$tb" run 1 ibv_rc_pingpong -g 0 -p $port -n 50 \
			>"$out/pp.$i.srv" 2>&1 &
		sp=$!
		sleep 0.3
		if timeout 30 "$tb" run 2 ibv_rc_pingpong -g 0 -p $port -n 50 \
			"$("$tb" addr 1)" >"$out/pp.$i.cli" 2>&1 && wait $sp; then
			churn=$((churn + 1))
		else
			wait $sp
		fi
	done
	wait $lp
	if ! grep -q 'churn-long: ok' "$out/churn-long.log" || [ $churn != 15 ]; then
		echo "$name: FAIL: QPs created and destroyed beside traffic on" \
			"the other core: long pair $(grep -- '--- churn' "$out/churn-long.log"), $churn of 15 pingpongs"
		cat "$out/churn-long.log"
		for n in 1 2; do
			"$tb" ctl $n show counters | grep -E 'cq_overflows|wqe_bad|async|xcore|tx_nobuf|loopback_full'
		done
		nfail=$((nfail + 1))
	fi
	summary+=("$(printf '%-22s %-5s %4s  %d of 15 ibv_rc_pingpong beside it' \
		churn "$([ $churn = 15 ] && echo ok || echo FAIL)" - $churn)")
	# four clients killed mid-transfer: contexts on both cores go
	for i in 1 2 3 4; do
		port=$((port + 1))
		timeout 60 "$tb" run 1 "$prog" server -p $port \
			>"$out/kill.$i.srv" 2>&1 &
		timeout 60 "$tb" run 2 "$prog" client "$("$tb" addr 1)" -p $port \
			--qps 8 --window 6 --rounds 100000 >"$out/kill.$i.cli" 2>&1 &
	done
	sleep 3
	before=$("$tb" ctl 2 show cores | awk 'NR > 1 && $3 > 0 { n++ } END { print n + 0 }')
	pkill -9 -f "$prog client" 2>/dev/null
	pkill -9 -f "$prog server" 2>/dev/null
	wait 2>/dev/null
	# (the check below: no QP left on either node)
	summary+=("$(printf '%-22s %-5s %4s  4 clients killed with -9, QPs on %d cores of node 2' \
		kill-9 "$([ "$before" = 2 ] && echo ok || echo FAIL)" - "$before")")
	if [ "$before" != 2 ]; then
		echo "$name: FAIL: the killed clients' QPs were on $before of 2 cores"
		nfail=$((nfail + 1))
	fi
	for n in 1 2; do # (the check at the end, before this testbed goes)
		for _ in $(seq 50); do
			[ "$(counter $n engine_qps)" = 0 ] && break
			sleep 0.1
		done
		[ "$(counter $n engine_qps)" = 0 ] || {
			echo "$name: FAIL: node $n holds QPs after the kills"
			nfail=$((nfail + 1))
		}
	done
	# the fabric forwarding on two workers (--fabric-workers 2: worker
	# w the queues q with q % 2 == w, each its own links and routes,
	# learning shared), at 1 % loss: byte-exact, frames still on the
	# queue of the core serving their QP, the loss applied
	# reup LABEL UP_ARGS...: the testbed again, with those arguments
	# (its log $out/up-LABEL.log); not up: the test ends
	reup() {
		local l=$1
		shift
		"$tb" down >/dev/null 2>&1
		"$tb" up 2 "$@" >"$out/up-$l.log" 2>&1 && return 0
		cat "$out/up-$l.log"
		echo "$name: FAIL: testbed $* did not come up"
		exit 1
	}
	# has_line FILE PATTERN WHAT: FILE says PATTERN, else WHAT fails
	has_line() {
		grep -q "$2" "$1" && return 0
		echo "$name: FAIL: $3"
		nfail=$((nfail + 1))
	}
	reup workers --cores 2 --fabric-workers 2 --loss 0.01
	has_line "$OVRDMA_TESTBED_DIR/fabric.log" '2 queues, 2 workers' \
		"the fabric does not run two workers"
	many cores-fabric-workers 150 4 "${seed[@]}" --qps 16 --window 4 --rounds 30
	steered workers-steer
	fl=$("$tb" fabric stats | awk '$1 == "loss" { print $2 }')
	fr=$("$tb" fabric stats | awk '$1 == "rx" { print $2 }')
	ok=ok
	[ "${fl:-0}" -gt 0 ] && [ "${fr:-0}" -gt 0 ] || ok=FAIL
	summary+=("$(printf '%-22s %-5s %4s  %s of %s frames lost' workers-loss "$ok" - "${fl:-0}" "${fr:-0}")")
	[ $ok = ok ] || {
		echo "$name: FAIL: the fabric's workers lost ${fl:-0} of ${fr:-0} frames at 1 %"
		nfail=$((nfail + 1))
	}
	# the direct wire, a queue pair per pair of cores: every core
	# receives on queues of its own, and what it sends goes to the
	# queue of the peer's core that serves the QP
	reup direct --fabric direct --cores 2
	has_line "$OVRDMA_TESTBED_DIR/n1/ovrdmad.log" 'net_memif): 4 queue pairs' \
		"node 1's port has not 4 queue pairs"
	many cores-direct 150 4 "${seed[@]}" --qps 16 --window 4 --rounds 20
	steered direct-steer
	# and one port queue: core 0 receives and sends for both cores,
	# handing frames over both ways (what a port without queues, or a
	# peer with another QPN layout, costs)
	reup direct1 --fabric direct --cores 2 --queues 1
	many cores-handover 150 4 "${seed[@]}" --qps 16 --window 4 --rounds 20
	for n in 1 2; do
		"$tb" ctl $n show cores
		read -r rx1 h0 h1 <<<"$("$tb" ctl $n show cores |
			awk '$1 == 0 { a = $7 } $1 == 1 { r = $5; b = $7 } END { print r + 0, a + 0, b + 0 }')"
		ok=ok
		[ "$rx1" = 0 ] && [ "$h0" -gt 0 ] && [ "$h1" -gt 0 ] || ok=FAIL
		summary+=("$(printf '%-22s %-5s %4s  node %d: core 1 received %d from the port, handed %d (core 0) and %d (core 1)' \
			"handover-n$n" "$ok" - "$n" "$rx1" "$h0" "$h1")")
		if [ $ok != ok ]; then
			echo "$name: FAIL: one queue, node $n: core 1 received $rx1 frames from the port, cores 0 and 1 handed $h0 and $h1"
			nfail=$((nfail + 1))
		fi
	done
elif [ $mode = mw ]; then
	pair mw-loss-0 120
	"$tb" fabric set all loss=0.01 reorder=0.01/50us >/dev/null
	pair mw-loss-1-reorder-1 120
else
	pair abuse 240
fi

# nothing left behind on either node
for n in 1 2; do
	for _ in $(seq 50); do
		[ "$(counter $n engine_qps)" = 0 ] && break
		sleep 0.1
	done
	if [ "$(counter $n engine_qps)" != 0 ]; then
		echo "$name: FAIL: node $n still holds QPs after the programs exited"
		"$tb" ctl $n show qps
		nfail=$((nfail + 1))
	fi
done

echo
echo "$name: through the testbed (memif fabric), server node 1, client node 2"
printf '%s\n' "${summary[@]}"
echo "$name: ${#summary[@]} runs, $nfail failed, $((SECONDS - t_start)) s"
[ $nfail -eq 0 ] || exit 1
rm -rf "$out" # on a failure the logs stay (and were printed)
