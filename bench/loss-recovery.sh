#!/bin/bash
# SPDX-License-Identifier: MIT
#
# loss-recovery.sh: what the transport resends, through the real node
# service (docs/PERFORMANCE.md, "Loss recovery on the real engine"). As
# root, from the source tree:
#
#   bench/loss-recovery.sh [--runs N] [--seconds T] [--cc NAMES]
#                          [--loss RATES]
#
# NAMES: comma-separated controllers (default ovr,fixed); RATES:
# comma-separated loss probabilities set on every fabric link (default
# 0,0.01). For each run, controller and rate: tools/ovrdma-testbed up 2
# (own state directory and prefix: OVRDMA_TESTBED_DIR, default
# /run/ovrdma-lossbench; OVRDMA_TESTBED_PREFIX, default ovrlb), bench-svc
# bw (64 KB RDMA WRITEs, window 64) for T seconds, then node 1's and
# node 2's counters and the fabric's. One line per run, then medians:
# goodput, data frames node 1 sent, frames the fabric dropped, resends
# (engine_retx_pkts, as % of frames sent), duplicates node 2 received
# (engine_rx_dup: resends that were not needed), RTOs and the spurious
# ones among them. Logs stay in a directory under /tmp (printed).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$here/..
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
export OVRDMA_BUILD=${OVRDMA_BUILD:-$root/build}
export OVRDMA_TESTBED_DIR=${OVRDMA_TESTBED_DIR:-/run/ovrdma-lossbench}
export OVRDMA_TESTBED_PREFIX=${OVRDMA_TESTBED_PREFIX:-ovrlb}
tb=$root/tools/ovrdma-testbed
bench=$OVRDMA_BUILD/bench/bench-svc
runs=3 seconds=4 ccs=ovr,fixed rates=0,0.01

while [ $# -gt 0 ]; do
	case "$1" in
	--runs) bench_val --runs $#; runs=$2 && shift ;;
	--seconds) bench_val --seconds $#; seconds=$2 && shift ;;
	--cc) bench_val --cc $#; ccs=$2 && shift ;;
	--loss) bench_val --loss $#; rates=$2 && shift ;;
	*) bench_usage ;;
	esac
	shift
done

bench_root
[ -x "$bench" ] || {
	echo "loss-recovery: no $bench (build the tree or set OVRDMA_BUILD)" >&2
	exit 1
}

out=$(mktemp -d /tmp/loss-recovery.XXXXXX)
trap '"$tb" down >/dev/null 2>&1' EXIT
trap 'exit 1' INT TERM HUP

num() { # FILE KEY: the value of counter KEY in FILE
	awk -v k="$2" '$1 == k { print $2 }' "$1"
}

one() { # CC RATE RUN: prints "gbps sent lost retx dup rto spurious"
	local cc=$1 rate=$2 r=$3 d=$OVRDMA_TESTBED_DIR f pa pb
	f=$out/$cc-$rate-$r
	"$tb" up 2 --cc "$cc" >"$f.up" 2>&1 || {
		echo "loss-recovery: testbed up failed (see $f.up)" >&2
		return 1
	}
	pa=$(cat "$d/n1/ovrdmad.pid")
	pb=$(cat "$d/n2/ovrdmad.pid")
	if [ "$rate" != 0 ]; then
		"$tb" fabric set all loss="$rate" >/dev/null || return 1
	fi
	timeout 120 "$bench" "$("$tb" sock 1)" "$("$tb" sock 2)" \
		--cpu-pids "$pa,$pb" --seconds "$seconds" --windows 64 bw \
		>"$f.bw" 2>&1 || {
		echo "loss-recovery: bench-svc failed (see $f.bw)" >&2
		"$tb" down >/dev/null 2>&1
		return 1
	}
	"$tb" ctl 1 show counters >"$f.c1" 2>&1
	"$tb" ctl 2 show counters >"$f.c2" 2>&1
	"$tb" fabric stats >"$f.fab" 2>&1
	"$tb" down >/dev/null 2>&1
	echo "$(awk '$1 == "result" && $2 == "bw" { print $14 }' "$f.bw")" \
		"$(num "$f.c1" tx_frames)" "$(num "$f.fab" loss)" \
		"$(num "$f.c1" engine_retx_pkts)" "$(num "$f.c2" engine_rx_dup)" \
		"$(num "$f.c1" engine_rto)" "$(num "$f.c1" engine_rto_spurious)"
}

echo "loss-recovery: logs in $out"
for r in $(seq "$runs"); do
	for cc in ${ccs//,/ }; do
		for rate in ${rates//,/ }; do
			line=$(one "$cc" "$rate" "$r") || exit 1
			echo "$cc $rate $r $line" | tee -a "$out/all"
		done
	done
done

echo
echo "| controller | loss | Gbit/s | frames sent | fabric drops | resent (% of sent) | duplicates at receiver | RTOs (spurious) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for cc in ${ccs//,/ }; do
	for rate in ${rates//,/ }; do
		sel() { awk -v c="$cc" -v l="$rate" -v i="$1" \
			'$1 == c && $2 == l { print $(i) }' "$out/all"; }
		pct=$(awk -v c="$cc" -v l="$rate" '$1 == c && $2 == l && $5 > 0 {
			printf "%.3f\n", 100 * $7 / $5 }' "$out/all" | median)
		printf '| %s | %s | %s | %s | %s | %s (%s %%) | %s | %s (%s) |\n' \
			"$cc" "$rate" "$(sel 4 | median)" "$(sel 5 | median)" \
			"$(sel 6 | median)" "$(sel 7 | median)" "$pct" \
			"$(sel 8 | median)" "$(sel 9 | median)" "$(sel 10 | median)"
	done
done
echo "(medians of $runs runs; 64 KB RDMA WRITEs, window 64, $seconds s each)"
