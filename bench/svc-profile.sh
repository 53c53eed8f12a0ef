#!/bin/bash
# SPDX-License-Identifier: MIT
#
# svc-profile.sh: where the node service's cycles per operation go
# (issue 26, docs/PERFORMANCE.md "Where an 8-byte WRITE's cycles go").
# As root, from the source tree:
#
#   bench/svc-profile.sh [--size BYTES] [--window W] [--seconds T]
#                        [--mem shared|private] [--fabric direct|memif]
#                        [--top N] [--keep]
#
# Brings up a two-node testbed of its own (OVRDMA_TESTBED_DIR, default
# /run/ovrdma-svcprof), runs bench-svc bw (RDMA WRITEs of BYTES, default
# 8, at window W, default 64, for T seconds, default 8, from node 1 to
# node 2, buffers on the route --mem names, default the object route)
# and, over the middle T - 2 seconds, `perf record` of both ovrdmad
# processes (all their threads; the kernel's samples on their behalf
# included). Prints two tables: the CPU cycles per operation (both
# nodes, A + B) of each part of the house - the engine (engine/,
# congestion/), the VPC (vpc/, liburcu), the port (DPDK and the port's
# glue in ovrdmad.c), the rest of the service (service/), the clock
# (clock_gettime), the kernel, anything else - and of the TOP (default
# 25) symbols. A cycle here is the TSC's at bench-svc's measured rate,
# perf's samples being the CPU clock's (this VM has no PMU). Polling
# rounds that found nothing are in the figures as well: set them beside
# bench-svc's bcyc_op (the busy cycles only), which the script also
# prints. --keep: the perf data and outputs are kept (printed).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$here/..
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
export OVRDMA_BUILD=${OVRDMA_BUILD:-$root/build}
export OVRDMA_TESTBED_DIR=${OVRDMA_TESTBED_DIR:-/run/ovrdma-svcprof}
export OVRDMA_TESTBED_PREFIX=${OVRDMA_TESTBED_PREFIX:-ovrsp}
tb=$root/tools/ovrdma-testbed
bench=$OVRDMA_BUILD/bench/bench-svc
size=8 window=64 seconds=8 mem=shared fabric=direct top=25 keep=0

while [ $# -gt 0 ]; do
	case "$1" in
	--size) bench_val --size $#; size=$2 && shift ;;
	--window) bench_val --window $#; window=$2 && shift ;;
	--seconds) bench_val --seconds $#; seconds=$2 && shift ;;
	--mem) bench_val --mem $#; mem=$2 && shift ;;
	--fabric) bench_val --fabric $#; fabric=$2 && shift ;;
	--top) bench_val --top $#; top=$2 && shift ;;
	--keep) keep=1 ;;
	*) bench_usage ;;
	esac
	shift
done
case "$mem" in shared | private) ;; *) bench_usage ;; esac
case "$fabric" in direct | memif) ;; *) bench_usage ;; esac
[ "$seconds" -ge 4 ] 2>/dev/null || {
	echo "svc-profile: --seconds: at least 4" >&2
	exit 2
}
bench_root
command -v perf >/dev/null || {
	echo "svc-profile: no perf (apt-get install linux-perf)" >&2
	exit 1
}
[ -x "$bench" ] || {
	echo "svc-profile: no $bench (build the tree or set OVRDMA_BUILD)" >&2
	exit 1
}

out=$(mktemp -d /tmp/svc-profile.XXXXXX)
child=
cleanup() {
	[ -n "$child" ] && kill -TERM "$child" 2>/dev/null
	"$tb" down >/dev/null 2>&1
	[ "$keep" = 1 ] || rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

"$tb" up 2 --fabric "$fabric" >"$out/up" 2>&1 || {
	cat "$out/up" >&2
	echo "svc-profile: testbed did not come up" >&2
	exit 1
}
pa=$(cat "$OVRDMA_TESTBED_DIR/n1/ovrdmad.pid")
pb=$(cat "$OVRDMA_TESTBED_DIR/n2/ovrdmad.pid")
"$bench" "$("$tb" sock 1)" "$("$tb" sock 2)" --cpu-pids "$pa,$pb" \
	--mem "$mem" --seconds "$seconds" --windows "$window" \
	--size "$size" --tag prof bw >"$out/bench" 2>&1 &
child=$!
sleep 1
perf record -F 4999 -p "$pa,$pb" -o "$out/perf.data" \
	-- sleep $((seconds - 2)) >"$out/perf.log" 2>&1
wait "$child" || {
	cat "$out/bench" >&2
	echo "svc-profile: bench-svc failed" >&2
	exit 1
}
child=

# the engine's, the VPC's and the service's own symbols, from their
# static libraries: a symbol's room without a table kept by hand
for lib in engine:engine/libovr_engine.a congestion:congestion/libovr_congestion.a \
	vpc:vpc/libovr_vpc.a service:service/libovr_svc.a; do
	nm --defined-only "$OVRDMA_BUILD/${lib#*:}" 2>/dev/null |
		awk -v r="${lib%%:*}" 'NF == 3 && $2 ~ /[tT]/ { print $3, r }'
done >"$out/rooms"

perf report -i "$out/perf.data" --no-children --sort dso,sym -F overhead,sample,dso,sym \
	--stdio -t '|' 2>/dev/null | grep -v '^#' | grep -v '^$' >"$out/report"

res=$(grep '^result bw ' "$out/bench")
tsc=$(awk '$1 == "result" && $2 == "clock" { print $4 }' "$out/bench")
awk -v res="$res" -v tsc="${tsc:-0}" -v syms="$out/syms" -v secs=$((seconds - 2)) -v top="$top" -v size="$size" \
	-v window="$window" -v mem="$mem" -v fabric="$fabric" '
function field(k,   i, n, a) {
	n = split(res, a, " ")
	for (i = 1; i < n; i++)
		if (a[i] == k)
			return a[i + 1]
	return ""
}
function room(dso, sym) {
	sub(/^\[[.k]\] /, "", sym)
	if (sym in rooms) {
		r = rooms[sym]
		return r == "congestion" ? "engine" : r
	}
	if (dso ~ /kernel/) return "kernel"
	if (dso ~ /vdso/ || sym ~ /^clock_gettime/) return "clock"
	if (dso ~ /librte_/) return "port"
	if (dso ~ /liburcu/) return "vpc"
	if (dso == "ovrdmad" && sym ~ /^p_/) return "port"
	if (dso == "ovrdmad") return "service"
	return "other"
}
FNR == NR { rooms[$1] = $2; next }
{
	n = split($0, f, "|")
	if (n < 4) next
	gsub(/^ +| +$/, "", f[2]); gsub(/^ +| +$/, "", f[3]); gsub(/^ +| +$/, "", f[4])
	s = f[2] + 0; d = f[3]; y = f[4]
	tot += s
	r = room(d, y)
	byroom[r] += s
	sub(/^\[[.k]\] /, "", y)
	sym[y " (" r ")"] += s
}
END {
	mops = field("mops")
	ops = mops * 1e6 * secs
	if (!ops || !tot) { print "svc-profile: no operations or no samples"; exit 1 }
	# a sample is 1/4999 s of one thread on a CPU
	cyc = (tsc ? tsc * 1e6 : 1) / 4999 / ops
	printf "RDMA WRITE %s B, window %s, %s route, %s wire: %.4f Mops; ", size, window, mem, fabric, mops
	printf "bench-svc: ovrdmad cycles/op %s, busy %s (bcyc_op)\n", field("cyc_op"), field("bcyc_op")
	printf "%d samples of both ovrdmads over %d s (%.2f CPUs)\n\n", tot, secs, tot / 4999 / secs
	print "| part | cycles per WRITE (A + B) | share |"
	print "|---|---:|---:|"
	np = split("engine service port vpc clock kernel other", order, " ")
	for (i = 1; i <= np; i++)
		printf "| %s | %.0f | %.1f %% |\n", order[i], byroom[order[i]] * cyc, 100 * byroom[order[i]] / tot
	printf "| all | %.0f | 100 %% |\n\n", tot * cyc
	for (y in sym)
		printf "%d|%s|%.0f|%.1f\n", sym[y], y, sym[y] * cyc, 100 * sym[y] / tot > syms
}' "$out/rooms" "$out/report" || exit 1
echo "| symbol (part) | cycles per WRITE (A + B) | share |"
echo "|---|---:|---:|"
sort -t '|' -k1,1nr "$out/syms" | head -n "$top" |
	awk -F '|' '{ printf "| %s | %s | %s %% |\n", $2, $3, $4 }'
[ "$keep" = 1 ] && echo "svc-profile: kept $out"
exit 0
