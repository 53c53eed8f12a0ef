#!/bin/bash
# SPDX-License-Identifier: MIT
# qperf (Debian's qperf package) between two testbed nodes through the
# memif fabric at 1 % loss, server on node 1, client on node 2, every run
# under a timeout (docs/PROVIDER.md, "qperf"). Its RC and UD tests -
# rc_bw, rc_lat, rc_rdma_read_bw/lat, rc_rdma_write_bw/lat,
# rc_compare_swap_mr, rc_fetch_add_mr, ud_bw, ud_lat - each plain and with
# -cm1 (the connection through rdma_cm), checked against what RoCE
# hardware does with them:
#   - plain, qperf connects by LID only (no GRH in the address vector):
#     RoCE refuses that (the kernel's and mlx5's EINVAL), and so does
#     ovrdma, at the same step: RC "failed to modify QP to RTR", UD
#     "failed to create address handle: Invalid argument" - after every
#     verb before it worked (the receive-only QP of rc_bw's server, the
#     completion channel, the region);
#   - with -cm1, RC runs pass on RoCE, and must here (ovrdma's rdma_cm,
#     docs/PROVIDER.md "rdma_cm"); qperf ignores -cm1 for UD. (qperf
#     0.4.11's server child then dies of a segfault in its cm_close - it
#     destroys the listener's QP, which is NULL: fixed upstream by
#     qperf's 83bc16e, 2017 - after the client has its result; the
#     server goes on.)
# Then the same ten again with GRH_LIB (libqperf_grh.so, qperf_grh.c)
# preloaded on both sides: it completes the address vectors with the
# peer's GID as rdma_cm would resolve it, so qperf's own traffic runs -
# rc_bw's receive-only server, completion channels, READ, WRITE, atomics,
# datagrams - and each must pass, RC at 1 % loss, UD without loss (a
# datagram lost stalls qperf's ud_lat ping-pong; UD does not retry).
# Anything else fails the test, and so does a server that no longer
# answers (qperf's conf at the end). A server child stuck (the next
# client unanswered: the server waits for each child) is shown - its
# threads' kernel waits and backtraces, and ovrdmad's - and killed; the
# run is repeated once when the child was stuck in qperf's own code
# (qperf 0.4.11 exits from its SIGURG and SIGALRM handlers), and fails
# when its backtrace runs through libibverbs, librdmacm or ovrdma (or
# gdb cannot tell). A table of the runs ends the output.
# usage: qperf.sh TESTBED GRH_LIB
set -u
tb=$1 grh=$2

if [ "$(id -u)" -ne 0 ]; then
	echo "qperf: needs root (network namespaces, DPDK); skipped"
	exit 77
fi
for p in qperf ss; do
	command -v $p >/dev/null || {
		echo "qperf: $p missing (apt-get install qperf iproute2: tools/install-deps); skipped"
		exit 77
	}
done
export OVRDMA_TESTBED_DIR=${OVRDMA_TESTBED_DIR:-/run/ovrdma-qperf-test.$$}
export OVRDMA_TESTBED_PREFIX=${OVRDMA_TESTBED_PREFIX:-ovrqp$$}
out=$OVRDMA_TESTBED_DIR.logs
spid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	"$tb" down >/dev/null 2>&1
}
trap cleanup EXIT
rm -rf "$out"
mkdir -p "$out"
"$tb" up 2 --loss 1% --reorder 1%/50us >"$out/up.log" 2>&1 || {
	cat "$out/up.log"
	echo "qperf: FAIL: testbed did not come up"
	exit 1
}
addr=$("$tb" addr 1)

# one server for every run (qperf serves its clients one after another);
# ENV: more environment for it
srv_env=()
server() { # ENV...
	srv_env=("$@")
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	for _ in $(seq 100); do
		"$tb" exec 1 ss -ltn 2>/dev/null | grep -q ':19765 ' || break
		sleep 0.1
	done
	env "$@" timeout -k 5 600 "$tb" run 1 qperf >>"$out/server.log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do
		"$tb" exec 1 ss -ltn 2>/dev/null | grep -q ':19765 ' && return
		sleep 0.1
	done
}
server

# What a run's output says: pass (a result line), lid (RoCE's refusal of
# an address vector without GRH), no_rdma_cm, or other. The server's
# lines written since the run began (SRV_LOG from byte SRV_FROM) count
# too: when both sides fail at the same step, as they do at the LID
# refusal, qperf 0.4.11 loses the server's message now and then - the
# server's child sends its error as urgent data and then the text, and
# the client's own urgent data arriving in between makes it exit (its
# SIGURG handler) before the text; the client then prints "server: "
# with nothing after it, or dies of the server's urgent data before
# printing its own error. The server's child writes its error to its
# own output first, flushed as it exits: waited for (2 s at most).
classify() { # log srv_log srv_from
	local lid='failed to modify QP to RTR|failed to create address handle: Invalid argument'
	if grep -Eq '^ +(bw|latency|msg_rate|recv_bw) += ' "$1"; then
		echo pass
	elif grep -Eq "$lid" "$1"; then
		echo lid
	elif grep -q 'rdma_create_event_channel failed' "$1"; then
		echo no_rdma_cm
	else
		for _ in $(seq 20); do
			if tail -c +$(($3 + 1)) "$2" | grep -Eq "$lid"; then
				echo lid
				return
			fi
			sleep 0.1
		done
		echo other
	fi
}

# A server that stopped answering (the client's "failed to receive node
# information" or "failed to connect": qperf's server forks a child per
# test and waits for it before it accepts the next client): where its
# processes and node 1's ovrdmad are - each one's state, every thread's
# kernel wait, system call and kernel stack, and with gdb its backtrace
# - then the server's children are killed and the server started anew.
# stuck_in: "verbs" when a stuck child's main thread runs through
# libibverbs, librdmacm or ovrdma's provider (or gdb cannot tell), else
# "qperf" (its own code or libc's: the run is repeated once; see the
# loop). Only node 1's processes (its network namespace: another test
# may run qperf beside this one). Printed every time.
nstuck=0 stuck_in=
show_stuck() {
	local p t pids= bt main
	nstuck=$((nstuck + 1))
	stuck_in=qperf
	echo "qperf: the server stopped answering; its processes and ovrdmad:"
	for p in $(ip netns pids "$OVRDMA_TESTBED_PREFIX-n1" 2>/dev/null); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = qperf ] &&
			pids+=" $p"
	done
	pids+=" $(cat "$OVRDMA_TESTBED_DIR/n1/ovrdmad.pid")"
	for p in $pids; do
		echo "-- pid $p ($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)):" \
			"$(grep -E '^(State|PPid)' "/proc/$p/status" 2>/dev/null |
				paste -sd' ')"
		for t in /proc/$p/task/*; do
			echo "   task ${t##*/} ($(cat "$t/comm" 2>/dev/null)):" \
				"wchan $(cat "$t/wchan" 2>/dev/null)," \
				"syscall $(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
			sed 's/^/      /' "$t/stack" 2>/dev/null | head -12
		done
		bt=
		command -v gdb >/dev/null &&
			bt=$(timeout 30 gdb -batch -p "$p" \
				-ex 'thread apply all bt' 2>/dev/null |
				grep -E '^(#|Thread)' | head -40)
		echo "$bt"
		# a child of the server (whose parent is no qperf); its main
		# thread (the provider's watcher thread is always in ovrdma)
		if [ "$(ps -o comm= -p "$(ps -o ppid= -p "$p" 2>/dev/null)" \
			2>/dev/null)" = qperf ]; then
			main=$(awk -v lwp="(LWP $p)" '/^Thread / {
				m = index($0, lwp) > 0; next } m' <<<"$bt")
			if [ -z "$main" ] ||
				grep -Eq 'ovrdma|libibverbs|librdmacm' <<<"$main"; then
				stuck_in=verbs
			fi
			kill -9 "$p"
		fi
	done
	# a fresh server (the old one's queue holds the clients that gave
	# up; a child holds its listening socket too, hence the kill)
	server "${srv_env[@]}"
}

# run_client LOG ARGS...: one client run on node 2 (environment in env)
run_client() {
	local log=$1
	shift
	env "${env[@]}" timeout -k 5 60 "$tb" run 2 qperf "$@" >"$log" 2>&1
}

tests=(rc_bw rc_lat rc_rdma_read_bw rc_rdma_read_lat rc_rdma_write_bw
	rc_rdma_write_lat rc_compare_swap_mr rc_fetch_add_mr ud_bw ud_lat)
nfail=0 npass=0
summary=()
for mode in plain -cm1 grh; do
	if [ $mode = grh ]; then
		server LD_PRELOAD="$grh" QPERF_GRH_PEER="$("$tb" addr 2)"
	fi
	for t in "${tests[@]}"; do
		log=$out/$t$mode.log
		args=(-t 2)
		[ $mode = -cm1 ] && args+=("$mode")
		env=()
		[ $mode = grh ] && env=(LD_PRELOAD="$grh" QPERF_GRH_PEER="$addr")
		case $mode/$t in
		grh/rc_*) "$tb" fabric set all loss=0.01 reorder=0.01/50us >/dev/null ;;
		grh/ud_*) "$tb" fabric set all loss=0 reorder=0 >/dev/null ;;
		esac
		t0=$SECONDS
		from=$(stat -c %s "$out/server.log")
		run_client "$log" "${args[@]}" "$addr" "$t"
		rc=$?
		note=
		if grep -Eq 'failed to (receive node information|connect)' "$log"; then
			# a server child stuck: shown and killed; stuck in
			# qperf's own code, the run once more
			show_stuck
			if [ "$stuck_in" = qperf ]; then
				from=$(stat -c %s "$out/server.log")
				run_client "$log" "${args[@]}" "$addr" "$t"
				rc=$?
				note=" (again: a server child was stuck in qperf)"
			else
				note=" (a server child stuck in verbs)"
			fi
		fi
		got=$(classify "$log" "$out/server.log" "$from")
		# what RoCE hardware gives; pass for -cm1 RC (rdma_cm) and
		# with the GRH supplied
		case $mode/$t in
		grh/*) want="pass" ;;
		*/ud_*) want="lid" ;;
		plain/*) want="lid" ;;
		*) want="pass" ;;
		esac
		[ "$got" = pass ] && [ $rc -ne 0 ] && got="other"
		res=$(grep -E '^ +(bw|latency|msg_rate|send_bw|recv_bw) += ' \
			"$log" | sed -E 's/^ +//; s/ +/ /g' | paste -sd, -)
		what=$(grep -m1 -E 'failed|error' "$log")
		[ -z "$what" ] && what="server: $(tail -c +$((from + 1)) \
			"$out/server.log" | grep -m1 -E 'failed|error')" 
		if [[ " $want " == *" $got "* ]]; then
			verdict=ok
			[ "$got" = pass ] && npass=$((npass + 1))
		else
			verdict=FAIL
			nfail=$((nfail + 1))
			echo "qperf: FAIL: qperf ${args[*]} $t: $got (exit $rc), expected ${want// / or }"
			cat "$log"
		fi
		summary+=("$(printf '%-20s %-6s %-5s %-11s %3ds %s' "$t" "$mode" \
			"$verdict" "$got" $((SECONDS - t0)) "${res:-$what}$note")")
	done
done

# the server answered every client and still does
timeout -k 5 30 "$tb" run 2 qperf "$addr" conf >"$out/conf.log" 2>&1
if ! grep -q 'loc_node' "$out/conf.log"; then
	echo "qperf: FAIL: the server no longer answers (qperf conf)"
	cat "$out/conf.log"
	nfail=$((nfail + 1))
fi

echo
echo "qperf: $(qperf --version 2>&1 | head -1) through the testbed, memif fabric, 1 % loss"
echo "qperf: lid = RoCE's refusal of an address vector without GRH (qperf addresses by LID);"
echo "qperf: -cm1 = the RC connection through rdma_cm (UD: qperf ignores -cm1);"
echo "qperf: grh = the address vector completed by libqperf_grh.so as rdma_cm would (RC at 1 % loss, UD at none)"
printf '%-20s %-6s %-5s %-11s %4s %s\n' test mode ok outcome time "result or message"
printf '%s\n' "${summary[@]}"
echo "qperf: ${#summary[@]} runs, $npass passed, $nfail failed," \
	"$nstuck with a server child stuck (shown above, run again)"
if [ $nfail -gt 0 ]; then
	echo "--- server"
	cat "$out/server.log"
	exit 1
fi
rm -rf "$out"
