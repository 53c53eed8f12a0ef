#!/bin/bash
# SPDX-License-Identifier: MIT
#
# perftest-vs-tcp.sh: unmodified perftest through the whole ovrdma stack
# against kernel TCP between the same two nodes over the same emulated
# links (docs/PERFORMANCE.md, "perftest against kernel TCP"). As root,
# from the source tree, after a build:
#
#   bench/perftest-vs-tcp.sh [--runs N] [--seconds T] [--loss "0 1"]
#
# For each loss rate (percent; with 1 % reordering when not 0):
#  1. tools/ovrdma-testbed up 2 --kernel-via-fabric: ovrdmad reaches the
#     fabric through memif, the nodes' kernel interfaces (vip0) through
#     AF_PACKET ports of the same fabric process, so both cross the same
#     emulated links (the same loss, the same forwarding thread);
#  2. N runs, each: ib_send_lat and ib_write_lat -s 64 (perftest reports
#     half the round trip; both sides busy-poll), ib_send_lat -s 64 -e
#     (both sides block on a completion channel, as sockperf blocks in
#     recv) against sockperf ping-pong -m 64 over TCP (it reports half
#     the round trip too): median one-way latency in us;
#     ib_write_bw and ib_send_bw -s 65536 -D T against iperf3 -t T over
#     TCP (one stream): Gbit/s;
#  3. a table of medians over the runs, with the ratio ovrdma / TCP.
# Every program runs under a timeout; the testbed is taken down whatever
# happens. Logs are kept in a directory under /tmp (printed).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$here/..
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
export OVRDMA_BUILD=${OVRDMA_BUILD:-$root/build}
export OVRDMA_TESTBED_DIR=${OVRDMA_TESTBED_DIR:-/run/ovrdma-ptbench}
export OVRDMA_TESTBED_PREFIX=${OVRDMA_TESTBED_PREFIX:-ovrpb}
tb=$root/tools/ovrdma-testbed
runs=3 secs=3 losses="0 1"

while [ $# -gt 0 ]; do
	case "$1" in
	--runs) bench_val --runs $#; runs=$2 && shift ;;
	--seconds) bench_val --seconds $#; secs=$2 && shift ;;
	--loss) bench_val --loss $#; losses=$2 && shift ;;
	*) bench_usage ;;
	esac
	shift
done
bench_root
for p in ib_send_lat ib_write_lat ib_write_bw ib_send_bw sockperf iperf3 ss; do
	command -v $p >/dev/null || {
		echo "perftest-vs-tcp: $p missing (apt-get install perftest sockperf iperf3 iproute2)" >&2
		exit 1
	}
done
out=$(mktemp -d /tmp/ovrdma-ptbench.XXXXXX)
trap '"$tb" down >/dev/null 2>&1' EXIT
echo "perftest-vs-tcp: logs in $out"

wait_port() { # port log
	for _ in $(seq 150); do
		"$tb" exec 1 ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
		sleep 0.1
	done
	# say why, on stderr: a figure of "-" alone tells nothing
	echo "perftest-vs-tcp: nothing listened on port $1 of node 1 in 15 s" \
		"(ss: $("$tb" exec 1 ss -ltn 2>&1 | tail -n +2 | tr -s ' ' | head -3 | tr '\n' ';'))" >&2
	[ -s "$2.srv" ] && sed 's/^/  server: /' "$2.srv" | tail -5 >&2
	return 1
}

# The figure awk printed for LOG, or why there is none (stderr).
figure() { # log value
	[ -n "$2" ] && echo "$2" && return 0
	echo "perftest-vs-tcp: no figure in $1:" >&2
	tail -5 "$1" 2>/dev/null | sed 's/^/  client: /' >&2
	[ -s "$1.srv" ] && tail -3 "$1.srv" | sed 's/^/  server: /' >&2
	return 0
}

# perftest, server on node 1, client on node 2; prints the client's last
# result line's figure: t_typical (lat) or BW average (bw, Gbit/s).
perftest() { # log kind prog args...
	local log=$1 kind=$2 prog=$3 spid
	shift 3
	timeout -k 5 60 "$tb" run 1 "$prog" "$@" >"$log.srv" 2>&1 &
	spid=$!
	wait_port 18515 "$log" || { kill $spid; wait $spid; return; }
	timeout -k 5 60 "$tb" run 2 "$prog" "$@" "$("$tb" addr 1)" >"$log" 2>&1
	wait $spid
	figure "$log" "$(awk -v kind="$kind" '
		/^ *#bytes/ { tab = 1; next }
		tab && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ {
			v = (kind == "lat") ? $5 : $4
		}
		END { if (v != "") print v }' "$log")"
}

# sockperf ping-pong over TCP: the median one-way latency (us).
sockperf_lat() { # log
	local log=$1 spid a
	a=$("$tb" addr 1)
	timeout -k 5 60 "$tb" exec 1 sockperf sr --tcp -i "$a" -p 11111 \
		>"$log.srv" 2>&1 &
	spid=$!
	wait_port 11111 "$log" || { kill $spid; wait $spid; return; }
	timeout -k 5 60 "$tb" exec 2 sockperf pp --tcp -i "$a" -p 11111 \
		-m 64 -t "$secs" >"$log" 2>&1
	kill $spid 2>/dev/null
	wait $spid 2>/dev/null
	figure "$log" "$(awk '/percentile 50.000 =/ { v = $NF } END { if (v != "") print v }' "$log")"
}

# iperf3 over TCP, one stream: received Gbit/s.
iperf_bw() { # log
	local log=$1 spid a
	a=$("$tb" addr 1)
	timeout -k 5 60 "$tb" exec 1 iperf3 -s -1 -p 5201 >"$log.srv" 2>&1 &
	spid=$!
	wait_port 5201 "$log" || { kill $spid; wait $spid; return; }
	timeout -k 5 60 "$tb" exec 2 iperf3 -c "$a" -p 5201 -t "$secs" \
		-f g >"$log" 2>&1
	wait $spid 2>/dev/null
	figure "$log" "$(awk '/receiver$/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Gbits/sec") v = $i }
		END { if (v != "") print v }' "$log")"
}

median() { # values...
	printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
		awk '{ v[NR] = $1 } END {
			if (!NR) { print "-"; exit }
			if (NR % 2) print v[(NR + 1) / 2]
			else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ratio() { # a b
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'
}

table=()
for loss in $losses; do
	imp=()
	[ "$loss" != 0 ] && imp=(--loss "$loss%" --reorder 1%/50us)
	"$tb" up 2 --kernel-via-fabric "${imp[@]}" >"$out/up-$loss.log" 2>&1 || {
		cat "$out/up-$loss.log"
		exit 1
	}
	declare -A v=()
	for r in $(seq "$runs"); do
		p=$out/l$loss-r$r
		v[send_lat]+=" $(perftest "$p-send-lat" lat ib_send_lat -x 0 -s 64 -n 2000)"
		v[write_lat]+=" $(perftest "$p-write-lat" lat ib_write_lat -x 0 -s 64 -n 2000)"
		v[event_lat]+=" $(perftest "$p-send-lat-e" lat ib_send_lat -x 0 -s 64 -n 2000 -e)"
		v[tcp_lat]+=" $(sockperf_lat "$p-sockperf")"
		v[write_bw]+=" $(perftest "$p-write-bw" bw ib_write_bw -x 0 -s 65536 -D "$secs" --report_gbits)"
		v[send_bw]+=" $(perftest "$p-send-bw" bw ib_send_bw -x 0 -s 65536 -D "$secs" --report_gbits)"
		v[tcp_bw]+=" $(iperf_bw "$p-iperf")"
		echo "perftest-vs-tcp: loss $loss % run $r:" \
			"lat send/write/send-e/tcp ${v[send_lat]##* } ${v[write_lat]##* } ${v[event_lat]##* } ${v[tcp_lat]##* } us," \
			"bw write/send/tcp ${v[write_bw]##* } ${v[send_bw]##* } ${v[tcp_bw]##* } Gbit/s"
	done
	"$tb" down >/dev/null 2>&1
	# shellcheck disable=SC2086
	{
		sl=$(median ${v[send_lat]}) wl=$(median ${v[write_lat]})
		el=$(median ${v[event_lat]})
		tl=$(median ${v[tcp_lat]}) wb=$(median ${v[write_bw]})
		sb=$(median ${v[send_bw]}) tcb=$(median ${v[tcp_bw]})
	}
	table+=("$(printf '| %4s %% | 64 B one-way latency, us, polling | ib_send_lat %s, ib_write_lat %s | sockperf %s | %s, %s |' \
		"$loss" "$sl" "$wl" "$tl" "$(ratio "$sl" "$tl")" "$(ratio "$wl" "$tl")")")
	table+=("$(printf '| %4s %% | 64 B one-way latency, us, blocking | ib_send_lat -e %s | sockperf %s | %s |' \
		"$loss" "$el" "$tl" "$(ratio "$el" "$tl")")")
	table+=("$(printf '| %4s %% | 64 KB bandwidth, Gbit/s | ib_write_bw %s, ib_send_bw %s | iperf3 %s | %s, %s |' \
		"$loss" "$wb" "$sb" "$tcb" "$(ratio "$wb" "$tcb")" "$(ratio "$sb" "$tcb")")")
	unset v
done

echo
echo "perftest-vs-tcp: medians of $runs runs, ${secs} s each bandwidth run ($(nproc) CPUs)"
echo "| loss | metric | ovrdma (perftest) | kernel TCP | ovrdma / TCP |"
echo "|---|---|---|---|---|"
printf '%s\n' "${table[@]}"
