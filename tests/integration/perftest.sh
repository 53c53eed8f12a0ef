#!/bin/bash
# SPDX-License-Identifier: MIT
# The verbs provider's acceptance with real programs, RC part
# (docs/PROVIDER.md section 6): unmodified perftest and ibv_rc_pingpong
# between two testbed nodes (docs/TESTBED.md) through the memif fabric at
# 1 % loss with 1 % reordering.
#   1. ib_{send,write,read,atomic}_{lat,bw} -x 0, server on node 1, client
#      on node 2, with variants: completion events (-e), bidirectional
#      (-b), 8 QPs (-q 8), 1000 QPs at perftest's default depths (-q 1000
#      -D 2: CQs of 128 000 and 512 000 entries), sizes (-s 8, the
#      default, an -a sweep), duration
#      mode (-D 2), a shared receive queue (--use-srq), post lists (-l 8,
#      --recv_post_list), --write_with_imm where the installed perftest
#      has it;
#      both sides must exit 0 and print their result line (a number for
#      the bandwidth, t_typical for the latencies);
#   2. ibv_rc_pingpong -g 0 with 1, 4096 and 1048576 bytes, polling and
#      with -e.
# Every program runs under a timeout, so a hang fails the test. A summary
# table of what ran ends the output.
# usage: perftest.sh TESTBED [QUICK]   (QUICK=1: one variant per program)
set -u
tb=$1 quick=${2:-0}

if [ "$(id -u)" -ne 0 ]; then
	echo "perftest: needs root (network namespaces, DPDK); skipped"
	exit 77
fi
for p in ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat ib_send_bw \
	ib_write_bw ib_read_bw ib_atomic_bw ibv_rc_pingpong ss; do
	if ! command -v $p >/dev/null; then
		echo "perftest: $p missing (apt-get install perftest ibverbs-utils iproute2); skipped"
		exit 77
	fi
done
export OVRDMA_TESTBED_DIR=/run/ovrdma-pt-test.$$
export OVRDMA_TESTBED_PREFIX=ovrpt$$
trap '"$tb" down >/dev/null 2>&1' EXIT
out=$OVRDMA_TESTBED_DIR/runs
t_start=$(date +%s)

nfail=0
summary=()

# The server must listen before the client connects (port 18515).
wait_listen() {
	for _ in $(seq 150); do
		"$tb" exec 1 ss -ltn 2>/dev/null | grep -q ':18515 ' && return 0
		sleep 0.1
	done
	return 1
}

# Result lines of a perftest log: bandwidth tables have #bytes,
# #iterations, BW peak, BW average, MsgRate; latency tables #bytes,
# #iterations, t_min, t_max, t_typical, ... (fields 5 and 8: t_typical,
# the 99 % percentile). Prints "n=LINES v=FIGURE [p99=...]" of the last
# line, or nothing when there is no well-formed one.
results() { # log lat|bw
	awk -v kind="$2" '
		/^ *#bytes/ { tab = 1; next }
		tab && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ {
			if (kind == "lat") {
				# perftest prints inf for a size whose few (-n 5)
				# samples it could not time; not the last one
				if ($5 ~ /^(inf|-?nan)$/) { n++; last_bad = 1; next }
				if ($5 !~ /^[0-9]+(\.[0-9]+)?$/) { bad = 1; next }
				v = $5; p = $8; last_bad = 0
			} else {
				if ($4 !~ /^[0-9]+(\.[0-9]+)?$/) { bad = 1; next }
				v = $4
			}
			n++; b = $1
		}
		END {
			if (n && !bad && !last_bad) {
				if (kind == "lat")
					printf "n=%d bytes=%s t_typ=%s t_99=%s\n", n, b, v, p
				else
					printf "n=%d bytes=%s MB/s=%s\n", n, b, v
			}
		}' "$1"
}

# One perftest run: server on node 1, client on node 2.
# pt SIDES KIND LIMIT PROGRAM ARGS...
#   SIDES: "both" when the server prints results too, "client" when only
#   the client does (the latency tests of READ and atomics: the server is
#   passive); KIND lat|bw; LIMIT: seconds for each side.
pt() {
	local sides=$1 kind=$2 limit=$3 prog=$4
	shift 4
	local name="$prog $*" n=$((${#summary[@]} + 1)) spid src crc r_s r_c verdict
	local slog=$out/$n.srv clog=$out/$n.cli t0=$SECONDS try=1 note=""

	# perftest calibrates its clock against usleep() before reporting and
	# gives up ("Correlation coefficient r^2 < 0.9", "Can't produce a
	# report") when the machine is too busy to sleep accurately: that is
	# the machine, not the device, so such a run is repeated once.
	while :; do
		timeout -k 5 "$limit" "$tb" run 1 "$prog" "$@" >"$slog" 2>&1 &
		spid=$!
		if ! wait_listen; then
			kill "$spid" 2>/dev/null
			wait "$spid"
			summary+=("$(printf '%-48s %-6s %s' "$name" FAIL "server never listened")")
			nfail=$((nfail + 1))
			echo "perftest: FAIL: $name: server never listened"
			tail -5 "$slog"
			return
		fi
		timeout -k 5 "$limit" "$tb" run 2 "$prog" "$@" "$("$tb" addr 1)" \
			>"$clog" 2>&1
		crc=$?
		wait "$spid"
		src=$?
		r_c=$(results "$clog" "$kind")
		r_s=$(results "$slog" "$kind")
		verdict=ok
		if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
			verdict="FAIL exit server $src client $crc"
		elif [ -z "$r_c" ]; then
			verdict="FAIL no result line on the client"
		elif [ "$sides" = both ] && [ -z "$r_s" ]; then
			verdict="FAIL no result line on the server"
		fi
		if [ "$verdict" != ok ] && [ $try = 1 ] &&
			grep -q "Can't produce a report" "$slog" "$clog"; then
			echo "perftest: $name: perftest could not calibrate its clock (busy machine); again"
			try=2 note=" (2nd try: clock calibration)"
			continue
		fi
		break
	done
	summary+=("$(printf '%-48s %-6s %3ds %s' "$name" "${verdict%% *}" \
		$((SECONDS - t0)) "${r_c:-$verdict}$note")")
	if [ "$verdict" != ok ]; then
		nfail=$((nfail + 1))
		echo "perftest: FAIL: $name: $verdict"
		echo "--- server"
		cat "$slog"
		echo "--- client"
		cat "$clog"
	else
		echo "perftest: ok: $name: $r_c"
	fi
}

# ibv_rc_pingpong: both sides print "N bytes in T seconds = R Mbit/sec"
# and "N iters in T seconds = L usec/iter".
pp() { # LIMIT ARGS...
	local limit=$1
	shift
	local name="ibv_rc_pingpong $*" n=$((${#summary[@]} + 1)) spid src crc
	local slog=$out/$n.srv clog=$out/$n.cli t0=$SECONDS verdict=ok lat

	timeout -k 5 "$limit" "$tb" run 1 ibv_rc_pingpong "$@" >"$slog" 2>&1 &
	spid=$!
	wait_listen
	timeout -k 5 "$limit" "$tb" run 2 ibv_rc_pingpong "$@" \
		"$("$tb" addr 1)" >"$clog" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
		verdict="FAIL exit server $src client $crc"
	elif ! grep -q 'bytes in .* Mbit/sec' "$slog" ||
		! grep -q 'bytes in .* Mbit/sec' "$clog"; then
		verdict="FAIL no result line"
	fi
	lat=$(awk '/usec\/iter/ {print $(NF-1) " us/iter"}' "$clog")
	summary+=("$(printf '%-48s %-6s %3ds %s' "$name" "${verdict%% *}" \
		$((SECONDS - t0)) "${lat:-$verdict}")")
	if [ "$verdict" != ok ]; then
		nfail=$((nfail + 1))
		echo "perftest: FAIL: $name: $verdict"
		tail -n 5 "$slog" "$clog"
	else
		echo "perftest: ok: $name: $lat"
	fi
}

"$tb" up 2 --loss 1% --reorder 1%/50us >"$OVRDMA_TESTBED_DIR.up.log" 2>&1 || {
	cat "$OVRDMA_TESTBED_DIR.up.log"
	echo "perftest: FAIL: testbed did not come up"
	exit 1
}
rm -f "$OVRDMA_TESTBED_DIR.up.log"
mkdir -p "$out"

# ---- latency ---------------------------------------------------------------
L=60 # seconds per side
pt both lat $L ib_send_lat -x 0 -n 300
pt both lat $L ib_write_lat -x 0 -n 300
pt client lat $L ib_read_lat -x 0 -n 300
pt client lat $L ib_atomic_lat -x 0 -n 300
if [ "$quick" = 0 ]; then
	pt both lat $L ib_send_lat -x 0 -n 300 -s 8
	pt both lat $L ib_write_lat -x 0 -n 300 -s 8
	pt client lat $L ib_read_lat -x 0 -n 300 -s 8
	pt both lat $L ib_send_lat -x 0 -n 100 -s 65536
	pt client lat $L ib_read_lat -x 0 -n 100 -s 65536
	# events: perftest has no -e for WRITE
	pt both lat $L ib_send_lat -x 0 -n 200 -e
	pt client lat $L ib_read_lat -x 0 -n 200 -e
	pt client lat $L ib_atomic_lat -x 0 -n 200 -e
fi

# ---- bandwidth -------------------------------------------------------------
pt both bw $L ib_send_bw -x 0 -n 300
pt both bw $L ib_write_bw -x 0 -n 300
pt both bw $L ib_read_bw -x 0 -n 300
pt both bw $L ib_atomic_bw -x 0 -n 300
if [ "$quick" = 0 ]; then
	for p in ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw; do
		# perftest has no -e for WRITE
		[ $p = ib_write_bw ] || pt both bw $L $p -x 0 -n 200 -e
		pt both bw $L $p -x 0 -n 200 -b
		pt both bw $L $p -x 0 -n 100 -q 8
	done
	pt both bw $L ib_send_bw -x 0 -n 300 -s 8
	pt both bw $L ib_write_bw -x 0 -n 300 -s 8
	pt both bw $L ib_write_bw -x 0 -n 5 -a
	pt both bw $L ib_read_bw -x 0 -n 5 -a
	pt both bw $L ib_write_bw -x 0 -D 2
	pt both bw $L ib_send_bw -x 0 -D 2
	pt both bw $L ib_read_bw -x 0 -D 2
	# 1000 QPs; duration mode keeps perftest's default depths (a count
	# below them shrinks them): the WRITE CQ asks 128 000 entries, the
	# SEND receiver's 512 000 (max_cqe 4194303; it was 65535)
	pt both bw $L ib_write_bw -x 0 -D 2 -q 1000
	pt both bw $L ib_send_bw -x 0 -D 2 -q 1000
	# a shared receive queue (SEND only), post lists
	pt both lat $L ib_send_lat -x 0 -n 200 --use-srq
	pt both bw $L ib_send_bw -x 0 -n 300 --use-srq
	pt both bw $L ib_send_bw -x 0 -n 100 -q 8 --use-srq
	pt both bw $L ib_send_bw -x 0 -n 320 -l 8 --recv_post_list=8
	pt both bw $L ib_write_bw -x 0 -n 320 -l 8
	# perftest 4.5-0.17 (Debian 12) has no --write_with_imm
	if ib_write_bw --help 2>&1 | grep -q -- --write_with_imm; then
		pt both bw $L ib_write_bw -x 0 -n 200 --write_with_imm
		pt both lat $L ib_write_lat -x 0 -n 200 --write_with_imm
	fi
fi

# ---- ibverbs-utils -----------------------------------------------------------
pp $L -g 0 -s 1 -n 300
pp $L -g 0 -s 4096 -n 300
pp $L -g 0 -s 1048576 -n 30
pp $L -g 0 -s 1 -n 300 -e
if [ "$quick" = 0 ]; then
	pp $L -g 0 -s 4096 -n 300 -e
	pp $L -g 0 -s 1048576 -n 30 -e
fi

echo
echo "perftest: through the testbed, memif fabric, 1 % loss, 1 % reordered by 50 us"
printf '%-48s %-6s %4s %s\n' "program" "result" "time" "client's figure (last line)"
printf '%s\n' "${summary[@]}"
echo "perftest: ${#summary[@]} runs, $nfail failed, $(($(date +%s) - t_start)) s"
[ $nfail -eq 0 ] || exit 1
