#!/bin/bash
# SPDX-License-Identifier: MIT
#
# cm-setup.sh: rdma_cm connection setup between two testbed nodes
# (docs/PERFORMANCE.md, "rdma_cm connection setup"; issue 25). As root,
# from the source tree, after a build:
#
#   bench/cm-setup.sh [--runs R] [--cycles N] [--conns "C ..."] [--loss P]
#
# Each of R runs (default 3) on a fresh testbed (tools/ovrdma-testbed
# up 2, the fabric at P % loss, default 0):
#  1. one at a time: cm_errors cycles N (default 500; the rdmacm test's
#     program) connects, sends 64 bytes and disconnects N times; each
#     cycle's times are taken with CLOCK_MONOTONIC on both nodes (one
#     machine, one clock): setup latency from rdma_connect to
#     ESTABLISHED on the active side, and to ESTABLISHED on both sides
#     (the later of the two; the passive side's comes with the RTU) -
#     median and p99 - and the cycles per second;
#  2. many at once: cmtime -s -c C (rdmacm-utils) for each C (default
#     "500 2000"): C ids on one channel resolve, create their QPs and
#     connect at once; connections per second = C / cmtime's "connect"
#     step (first rdma_connect to the last ESTABLISHED on the active
#     side), and the CPU time both nodes' ovrdmad spent over the whole
#     cmtime run (every step, disconnect included), per connection, in
#     all and less what they spend idle over as long (they poll while
#     there is work, nap when there is none).
# A table of the medians over the runs ends the output. Every program
# runs under a timeout; the testbed is taken down whatever happens;
# logs are kept in a directory under /tmp (printed).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$here/..
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
export OVRDMA_BUILD=${OVRDMA_BUILD:-$root/build}
export OVRDMA_TESTBED_DIR=${OVRDMA_TESTBED_DIR:-/run/ovrdma-cmbench}
export OVRDMA_TESTBED_PREFIX=${OVRDMA_TESTBED_PREFIX:-ovrcb}
tb=$root/tools/ovrdma-testbed
cme=$OVRDMA_BUILD/tests/integration/cm_errors
runs=3 cycles=500 conns="500 2000" loss=0

while [ $# -gt 0 ]; do
	case "$1" in
	--runs) bench_val --runs $#; runs=$2 && shift ;;
	--cycles) bench_val --cycles $#; cycles=$2 && shift ;;
	--conns) bench_val --conns $#; conns=$2 && shift ;;
	--loss) bench_val --loss $#; loss=$2 && shift ;;
	*) bench_usage ;;
	esac
	shift
done
bench_root
command -v cmtime >/dev/null || {
	echo "cm-setup: cmtime missing (apt-get install rdmacm-utils)" >&2
	exit 1
}
[ -x "$cme" ] || {
	echo "cm-setup: $cme missing (build first)" >&2
	exit 1
}
out=$(mktemp -d /tmp/ovrdma-cmbench.XXXXXX)
trap '"$tb" down >/dev/null 2>&1' EXIT
echo "cm-setup: logs in $out"
hz=$(getconf CLK_TCK)

# ovrdmad's CPU time (utime + stime, clock ticks) on both nodes
svc_ticks() {
	local n pid t=0
	for n in 1 2; do
		pid=$(cat "$OVRDMA_TESTBED_DIR/n$n/ovrdmad.pid")
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
	done
	echo $t
}

# pctl P: the P-th percentile (nearest rank) of the numbers on stdin
pctl() {
	sort -g | awk -v p="$1" '{ v[NR] = $1 } END {
		if (!NR) { print "-"; exit }
		k = int(NR * p / 100 + 0.999999); if (k < 1) k = 1
		print v[k] }'
}

for r in $(seq "$runs"); do
	"$tb" up 2 --loss "$loss%" >"$out/up.$r.log" 2>&1 || {
		cat "$out/up.$r.log"
		echo "cm-setup: the testbed did not come up" >&2
		exit 1
	}
	a1=$("$tb" addr 1)
	# 1. one at a time
	timeout -k 5 300 "$tb" run 1 env CM_TIMES="$out/srv.$r.t" "$cme" \
		server 7500 cycles "$cycles" >"$out/cyc-srv.$r.log" 2>&1 &
	spid=$!
	sleep 1
	timeout -k 5 300 "$tb" run 2 env CM_TIMES="$out/cli.$r.t" "$cme" \
		client "$a1" 7500 cycles "$cycles" >"$out/cyc-cli.$r.log" 2>&1
	wait $spid
	awk '{ printf "%.1f\n", ($3 - $2) * 1e6 }' "$out/cli.$r.t" \
		>"$out/lat-active.$r"
	awk 'NR == FNR { srv[$1] = $2; next }
		$1 in srv { e = $3 > srv[$1] ? $3 : srv[$1]
			printf "%.1f\n", (e - $2) * 1e6 }' \
		"$out/srv.$r.t" "$out/cli.$r.t" >"$out/lat-both.$r"
	echo "$(median <"$out/lat-active.$r") $(pctl 99 <"$out/lat-active.$r")" \
		"$(median <"$out/lat-both.$r") $(pctl 99 <"$out/lat-both.$r")" \
		"$(sed -n 's/^cycles [0-9]*: \([0-9]*\) per second.*/\1/p' \
			"$out/cyc-cli.$r.log")" >>"$out/seq"
	grep -q '^cycles' "$out/cyc-cli.$r.log" || {
		tail -3 "$out/cyc-cli.$r.log" "$out/cyc-srv.$r.log"
		echo "cm-setup: run $r: the cycles failed" >&2
		exit 1
	}
	# 2. many at once
	for c in $conns; do
		timeout -k 5 120 "$tb" run 1 cmtime >"$out/cmtime-srv.$c.$r.log" 2>&1 &
		spid=$!
		sleep 1
		t0=$(svc_ticks) w0=$(date +%s%N)
		timeout -k 5 100 "$tb" run 2 cmtime -s "$a1" -c "$c" \
			>"$out/cmtime.$c.$r.log" 2>&1
		t1=$(svc_ticks) w1=$(date +%s%N)
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
		# the services poll while there is work and nap when idle:
		# what they spend idle over as long is taken off
		sleep "$(((w1 - w0) / 1000000000)).$(((w1 - w0) % 1000000000 / 1000000))" &
		i0=$(svc_ticks)
		wait $!
		i1=$(svc_ticks)
		awk -v c="$c" -v cpu=$((t1 - t0)) -v idle=$((i1 - i0)) \
			-v hz="$hz" '
			$1 == "connect" { printf "%.0f %.1f %.1f\n",
				c / ($3 / 1000), cpu * 1e6 / hz / c,
				(cpu - idle) * 1e6 / hz / c }' \
			"$out/cmtime.$c.$r.log" >>"$out/par.$c"
	done
	"$tb" down >/dev/null 2>&1
done

col() { # file column
	awk -v k="$2" '{ print $k }' "$1" | median
}
echo
echo "rdma_cm connection setup: $runs runs, fabric loss $loss %, $(nproc) CPUs"
echo "one at a time ($cycles connect / SEND / disconnect cycles):"
printf '  %-34s %10s %10s\n' "" median p99
printf '  %-34s %8s us %8s us\n' "rdma_connect -> ESTABLISHED, active" \
	"$(col "$out/seq" 1)" "$(col "$out/seq" 2)"
printf '  %-34s %8s us %8s us\n' "rdma_connect -> ESTABLISHED, both" \
	"$(col "$out/seq" 3)" "$(col "$out/seq" 4)"
printf '  %-34s %8s /s\n' "cycles" "$(col "$out/seq" 5)"
echo "many at once (cmtime, one channel per side):"
printf '  %-8s %14s %26s\n' ids "connections/s" "ovrdmad CPU us / conn"
printf '  %-8s %14s %12s %13s\n' "" "" "in all" "less idle"
for c in $conns; do
	printf '  %-8s %14s %12s %13s\n' "$c" "$(col "$out/par.$c" 1)" \
		"$(col "$out/par.$c" 2)" "$(col "$out/par.$c" 3)"
done
echo "  (CPU: both nodes' ovrdmad over the whole cmtime run, every step;"
echo "  \"less idle\": minus what they spend idle over as long)"
