#!/bin/bash
# SPDX-License-Identifier: MIT
# ovrdmad against its number of dataplane cores (issue 26): message rate,
# bandwidth and latency through the whole stack between two testbed
# nodes, for each number of dataplane cores and of applications at once,
# with kernel TCP between the same two namespaces in the same run.
#
#   bench/svc-scale.sh [--cores LIST] [--procs LIST] [--seconds T]
#                      [--fabric direct|memif] [--mem shared|private]
#                      [--queues Q] [--pt-qps Q]
#
# --cores LIST: dataplane cores of each ovrdmad (dataplane_cores),
#   comma-separated (default 1,2,4,8, those above the CPU count left out).
# --procs LIST: applications at once (default 1,8 and the cores): each is
#   one bench-svc process, a context on each node with one RC QP pair, so
#   P processes are P QPs spread over the cores (each QP goes to the
#   core with fewest, docs/SERVICE.md section 5).
# --seconds T: per measurement (default 3).
# --fabric: direct (default; the two ovrdmad's memif ports wired to each
#   other) or memif (through the fabric emulator, forwarding on as many
#   workers as the nodes have cores: ovrdma-testbed up --fabric-workers,
#   docs/FABRIC.md "Workers", so the fabric is not one core's ceiling).
# --mem: the applications' buffers (default shared: the object route).
# --queues Q: every port's queue pairs (ovrdma-testbed up --queues; by
#   default the testbed's: cores x cores on the direct wire, cores
#   through the fabric, each frame steered to the core serving its QP;
#   1: core 0 receives and sends for every core, handing frames over).
#   A second table gives, per number of cores, the port's queue pairs
#   and the frames handed between cores on both nodes.
# --pt-qps Q: QPs of the unmodified perftest run (default 8; 0: none):
#   per number of cores, one ib_write_bw process on each node with -q Q
#   (issue 26's measure: one process's QPs over the cores), 8 B message
#   rate (Mpps) and 64 KB bandwidth (Gbit/s, -D T), and on how many
#   cores of node 1 its QPs were while it ran.
#
# Per (cores, procs): the P processes' 8-byte RDMA WRITEs at window 64
# (Mops, added up) and 64 KB WRITEs at window 64 (Gbit/s, added up), and
# both ovrdmads' CPU cycles per operation (their whole CPU time over the
# run, polling included: /proc/PID/stat, at the TSC rate); per cores, the
# 8-byte WRITE round trip of one process (p50, p99). Kernel TCP between
# the nodes' namespaces over their plain veth pair (the testbed's kernel
# vIP network, not the fabric): iperf3 -P P and sockperf's 64-byte
# ping-pong. Records the machine (CPUs, model). Medians are not taken:
# one run per cell; repeat the command for more.
#
# Reading it on a machine with fewer CPUs than the threads it runs (two
# ovrdmads of C cores, P applications, the fabric): the absolute figures
# are the scheduler's, the cycles per operation are the measure.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$here/..
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
export OVRDMA_BUILD=${OVRDMA_BUILD:-$root/build}
export OVRDMA_TESTBED_DIR=${OVRDMA_TESTBED_DIR:-/run/ovrdma-svcscale}
export OVRDMA_TESTBED_PREFIX=${OVRDMA_TESTBED_PREFIX:-ovrsc}
tb=$root/tools/ovrdma-testbed
bench=$OVRDMA_BUILD/bench/bench-svc
ncpu=$(nproc)
cores_list="" procs_list="" secs=3 fabric=direct mem=shared queues="" ptq=8

while [ $# -gt 0 ]; do
	case "$1" in
	--cores) bench_val --cores $#; cores_list=$2 && shift ;;
	--procs) bench_val --procs $#; procs_list=$2 && shift ;;
	--seconds) bench_val --seconds $#; secs=$2 && shift ;;
	--queues) bench_val --queues $#; queues=$2 && shift ;;
	--pt-qps) bench_val --pt-qps $#; ptq=$2 && shift ;;
	--fabric)
		bench_val --fabric $#
		case "$2" in direct | memif) fabric=$2 ;; *) bench_usage ;; esac
		shift
		;;
	--mem)
		bench_val --mem $#
		case "$2" in shared | private) mem=$2 ;; *) bench_usage ;; esac
		shift
		;;
	*) bench_usage ;;
	esac
	shift
done
bench_root
[ -x "$bench" ] || {
	echo "svc-scale: no $bench (build the tree or set OVRDMA_BUILD)" >&2
	exit 1
}
if [ -z "$cores_list" ]; then
	for c in 1 2 4 8; do
		[ "$c" -le "$ncpu" ] && cores_list+="${cores_list:+,}$c"
	done
fi
have_tcp=1
for p in iperf3 sockperf ss; do
	command -v $p >/dev/null || have_tcp=0
done
[ $have_tcp = 1 ] || echo "svc-scale: no iperf3/sockperf/ss: no TCP columns" >&2

out=$(mktemp -d /tmp/svc-scale.XXXXXX)
trap '"$tb" down >/dev/null 2>&1' EXIT
echo "svc-scale: logs in $out"

tsc_hz() { # the TSC rate bench-svc measured (in a log of it)
	awk '$1 == "result" && $2 == "clock" { print $4 * 1e6; exit }' "$1"
}

cpu_ticks() { # PID... -> utime + stime of all, clock ticks
	local t=0 p
	for p in "$@"; do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
	done
	echo $t
}

# many SIZE P: P bench-svc bw processes at once, window 64; prints
# "TOTAL_MOPS TOTAL_GBPS CYCLES_PER_OP" (cycles: both ovrdmads)
many() {
	local size=$1 p=$2 i pids=() t0 t1 ops=0 mops=0 gbps=0 hz
	t0=$(cpu_ticks "$pa" "$pb")
	for i in $(seq "$p"); do
		# --cpu-pids: for the TSC rate it measures (its own
		# per-process figures are not used: the processes overlap)
		timeout 300 "$bench" "$s1" "$s2" --mem "$mem" --seconds "$secs" \
			--cpu-pids "$pa,$pb" --windows 64 --size "$size" bw \
			>"$out/bw.$size.$p.$i" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"
	t1=$(cpu_ticks "$pa" "$pb")
	for i in $(seq "$p"); do
		read -r o m g < <(awk '$1 == "result" && $2 == "bw" {
			for (i = 3; i < NF; i++) {
				if ($i == "ops") o = $(i + 1)
				if ($i == "mops") m = $(i + 1)
				if ($i == "gbps") g = $(i + 1)
			}
			print o, m, g }' "$out/bw.$size.$p.$i")
		[ -n "${o:-}" ] || { echo "- - -"; return; }
		ops=$((ops + o))
		mops=$(awk -v a="$mops" -v b="$m" 'BEGIN { print a + b }')
		gbps=$(awk -v a="$gbps" -v b="$g" 'BEGIN { print a + b }')
	done
	hz=$(tsc_hz "$out/bw.$size.$p.1")
	# the processes' warm-ups and set-up count too: CPU over the whole
	# run, operations of the timed phases (an upper bound per op)
	awk -v m="$mops" -v g="$gbps" -v t="$((t1 - t0))" -v tk="$(getconf CLK_TCK)" \
		-v hz="${hz:-0}" -v ops="$ops" 'BEGIN {
		c = (ops > 0 && hz > 0) ? t / tk * hz / ops : -1
		printf "%.3f %.2f %s\n", m, g, (c >= 0 ? sprintf("%.0f", c) : "-") }'
}

tcp_bw() { # P -> Gbit/s of iperf3 -P P between the namespaces
	local a
	a=$("$tb" addr 1)
	timeout 60 "$tb" exec 1 iperf3 -s -1 -p 5299 >"$out/iperf.srv" 2>&1 &
	local sp=$!
	sleep 0.5
	timeout 60 "$tb" exec 2 iperf3 -c "$a" -p 5299 -t "$secs" -P "$1" -f g \
		>"$out/iperf.$1" 2>&1
	wait $sp 2>/dev/null
	awk '/SUM.*receiver$|^\[ *[0-9]+\].*receiver$/ {
		for (i = 1; i < NF; i++) if ($(i + 1) == "Gbits/sec") v = $i }
		END { print (v != "" ? v : "-") }' "$out/iperf.$1"
}

tcp_lat() { # sockperf 64 B ping-pong: one-way p50 and p99, us
	local a
	a=$("$tb" addr 1)
	timeout 60 "$tb" exec 1 sockperf sr --tcp -i "$a" -p 11299 >"$out/sp.srv" 2>&1 &
	local sp=$!
	sleep 0.5
	timeout 60 "$tb" exec 2 sockperf pp --tcp -i "$a" -p 11299 -m 64 -t "$secs" \
		>"$out/sp.cli" 2>&1
	kill $sp 2>/dev/null
	wait $sp 2>/dev/null
	awk '/percentile 50.000 =/ { a = $NF } /percentile 99.000 =/ { b = $NF }
		END { print (a != "" ? a : "-"), (b != "" ? b : "-") }' "$out/sp.cli"
}

# ib_write_bw -q $ptq, one process per node: SIZE -> the figure (8 B:
# Mpps, else Gbit/s) and the cores of node 1 holding its QPs mid-run
perftest_q() {
	local size=$1 log=$out/ptq.$c.$1 spid spread=0 col=4
	[ "$size" = 8 ] && col=5
	timeout -k 5 $((secs + 60)) "$tb" run 1 ib_write_bw -x 0 -q "$ptq" \
		-s "$size" -D "$secs" --report_gbits >"$log.srv" 2>&1 &
	spid=$!
	sleep 1
	timeout -k 5 $((secs + 60)) "$tb" run 2 ib_write_bw -x 0 -q "$ptq" \
		-s "$size" -D "$secs" --report_gbits "$("$tb" addr 1)" \
		>"$log" 2>&1 &
	sleep 2
	spread=$("$tb" ctl 1 show cores | awk 'NR > 1 && $3 > 0 { n++ } END { print n + 0 }')
	wait $!
	wait $spid
	echo "$(awk -v col=$col '/^ *#bytes/ { tab = 1; next }
		tab && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { v = $col }
		END { print (v != "" ? v : "-") }' "$log") $spread"
}

rows=()
ptrows=()
tcp_rows=()
qrows=()
IFS=, read -r -a cl <<<"$cores_list"
for c in "${cl[@]}"; do
	fw=1
	[ "$fabric" = memif ] && [ -z "$queues" ] && fw=$c
	"$tb" up 2 --fabric "$fabric" --cores "$c" ${queues:+--queues "$queues"} \
		$([ "$fw" = 1 ] || echo "--fabric-workers $fw") \
		>"$out/up.$c" 2>&1 || {
		cat "$out/up.$c"
		exit 1
	}
	pa=$(cat "$OVRDMA_TESTBED_DIR/n1/ovrdmad.pid")
	pb=$(cat "$OVRDMA_TESTBED_DIR/n2/ovrdmad.pid")
	s1=$("$tb" sock 1)
	s2=$("$tb" sock 2)
	plist=$procs_list
	[ -n "$plist" ] || plist=$(printf '%s\n' 1 8 "$c" | sort -nu | paste -sd,)
	timeout 300 "$bench" "$s1" "$s2" --mem "$mem" --iters 20000 lat \
		>"$out/lat.$c" 2>&1
	lat=$(awk '$1 == "result" && $2 == "lat" {
		for (i = 3; i < NF; i++) {
			if ($i == "p50_us") a = $(i + 1)
			if ($i == "p99_us") b = $(i + 1)
		}
		print a / 2, b / 2 }' "$out/lat.$c")
	IFS=, read -r -a pl <<<"$plist"
	for p in "${pl[@]}"; do
		read -r m8 _ c8 < <(many 8 "$p")
		read -r _ g64 c64 < <(many 65536 "$p")
		echo "svc-scale: cores $c, $p at once: 8 B $m8 Mops ($c8 cycles/op)," \
			"64 KB $g64 Gbit/s ($c64 cycles/op)"
		rows+=("| $c | $p | $m8 | $c8 | $g64 | $c64 | ${lat% *} | ${lat#* } |")
	done
	if [ "$ptq" -gt 0 ] && command -v ib_write_bw >/dev/null; then
		read -r pm sp8 < <(perftest_q 8)
		read -r pg sp64 < <(perftest_q 65536)
		echo "svc-scale: cores $c, ib_write_bw -q $ptq: 8 B $pm Mpps" \
			"(QPs on $sp8 cores), 64 KB $pg Gbit/s (on $sp64)"
		ptrows+=("| $c | $ptq | $pm | $pg | $sp8, $sp64 |")
	fi
	if [ $have_tcp = 1 ] && [ "$c" = "${cl[0]}" ]; then
		for p in "${pl[@]}"; do
			tcp_rows+=("| $p | $(tcp_bw "$p") |")
		done
		tl=$(tcp_lat)
	fi
	"$tb" ctl 1 show cores >"$out/cores1.$c" 2>&1
	"$tb" ctl 2 show cores >"$out/cores2.$c" 2>&1
	qrows+=("| $c | $(grep -o 'net_[a-z_]*): [0-9]* queue pair' \
		"$OVRDMA_TESTBED_DIR/n1/ovrdmad.log" | grep -o '[0-9]* queue' |
		cut -d' ' -f1) | $(cat "$out/cores1.$c" "$out/cores2.$c" |
		awk '$1 ~ /^[0-9]+$/ { h += $7 } END { print h + 0 }') |")
	"$tb" down >/dev/null 2>&1
done

echo
echo "svc-scale: $(date -u +%FT%TZ), $ncpu CPUs, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)," \
	"commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null), fabric $fabric, memory $mem, $secs s per cell"
echo
echo "| dataplane cores | applications (QPs) | 8 B WRITE Mops, window 64 | ovrdmad cycles per 8 B WRITE (A + B) | 64 KB WRITE Gbit/s, window 64 | ovrdmad cycles per 64 KB WRITE (A + B) | 8 B WRITE one-way p50, µs | p99, µs |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
if [ ${#ptrows[@]} -gt 0 ]; then
	echo
	echo "| dataplane cores | ib_write_bw -q (one process per node) | 8 B Mpps | 64 KB Gbit/s | cores of node 1 with its QPs (8 B, 64 KB runs) |"
	echo "|---:|---:|---:|---:|---:|"
	printf '%s\n' "${ptrows[@]}"
fi
echo
echo "| dataplane cores | port queue pairs | frames handed between cores (A + B, all cells) |"
echo "|---:|---:|---:|"
printf '%s\n' "${qrows[@]}"
if [ ${#tcp_rows[@]} -gt 0 ]; then
	echo
	echo "Kernel TCP between the two nodes' namespaces (veth), same run: sockperf 64 B one-way p50 ${tl% *} µs, p99 ${tl#* } µs"
	echo
	echo "| iperf3 streams | Gbit/s |"
	echo "|---:|---:|"
	printf '%s\n' "${tcp_rows[@]}"
fi
