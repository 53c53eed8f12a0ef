#!/bin/bash
# SPDX-License-Identifier: MIT
#
# svc-bench.sh: the node service's benchmark (docs/PERFORMANCE.md, "Node
# service through the fabric"). As root, from the source tree:
#
#   bench/svc-bench.sh [--runs N] [--iters N] [--seconds T] [--no-reg]
#                      [--cc NAME]
#
# --cc NAME: every ovrdmad runs congestion controller NAME (ovr, dcqcn,
# timely, swift, fixed; the testbed's --cc), instead of the default.
#
# Each run:
#  1. tools/ovrdma-testbed up 2 (memif fabric, no impairment) under a
#     state directory and prefix of its own (OVRDMA_TESTBED_DIR, default
#     /run/ovrdma-svcbench; OVRDMA_TESTBED_PREFIX, default ovrsb), so it
#     does not collide with another testbed;
#  2. bench-svc lat (8 B WRITE ping-pong) and bw (64 KB WRITEs, windows 1,
#     8 and 64), with the two ovrdmad pids (nI/ovrdmad.pid): bench-svc
#     reads their utime + stime from /proc/PID/stat right before and after
#     each timed phase and gives the dataplane's CPU cycles per operation
#     at the TSC rate it measures (bench/bench_svc.c);
#  3. 1 % loss on every link (ovrdma-testbed fabric set all loss=0.01):
#     bw again, window 64;
#  4. (first run only, unless --no-reg) bench-svc reg: ovr_cl_reg_mr and
#     dereg from 4 KB to 1 GB;
#  5. ovrdma-testbed down; then the fabric's raw forwarding capacity: a
#     second ovrdma-fabric, started as the testbed starts its own, with
#     fabric-gen (tests/integration/fabric-gen.c) as both hosts, blasting
#     frames of the size of ovrdma's 4 KB data PDUs (DATA_FRAME bytes) and
#     64-byte frames through it.
# Then one table of medians over the runs: goodput against the fabric's
# capacity, latency, cycles per operation. Everything is kept in a
# directory under /tmp (printed). Whatever happens, the testbed and the
# second fabric are taken down (trap).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$here/..
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
export OVRDMA_BUILD=${OVRDMA_BUILD:-$root/build}
export OVRDMA_TESTBED_DIR=${OVRDMA_TESTBED_DIR:-/run/ovrdma-svcbench}
export OVRDMA_TESTBED_PREFIX=${OVRDMA_TESTBED_PREFIX:-ovrsb}
tb=$root/tools/ovrdma-testbed
bench=$OVRDMA_BUILD/bench/bench-svc
fab=$OVRDMA_BUILD/tools/ovrdma-fabric
gen=$OVRDMA_BUILD/tests/fabric-gen
prefix=$OVRDMA_TESTBED_PREFIX

# A 4 KB RDMA WRITE segment on the wire: 4096 B of payload, 60 B of PDU
# header, 4 B of CRC (docs/WIRE.md), 78 B of Ethernet/IPv4/UDP/VXLAN-GPE
# (docs/VPC.md). The bw phase checks it against the fabric's counters.
DATA_FRAME=4238
runs=3 iters=20000 seconds=3 reg=1 cc=

while [ $# -gt 0 ]; do
	case "$1" in
	--runs) runs=$2 && shift ;;
	--iters) iters=$2 && shift ;;
	--seconds) seconds=$2 && shift ;;
	--no-reg) reg=0 ;;
	--cc) cc=$2 && shift ;;
	*)
		sed -n '5,11s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
		exit 2
		;;
	esac
	shift
done

[ "$(id -u)" -eq 0 ] || {
	echo "svc-bench: needs root (namespaces, DPDK)" >&2
	exit 1
}
for b in "$bench" "$fab" "$gen"; do
	[ -x "$b" ] || {
		echo "svc-bench: no $b (build the tree or set OVRDMA_BUILD)" >&2
		exit 1
	}
done

out=$(mktemp -d /tmp/svc-bench.XXXXXX)
raw=
rawpid=
child=

cleanup() {
	[ -n "$child" ] && kill -TERM "$child" 2>/dev/null
	"$tb" down >/dev/null 2>&1
	if [ -n "$rawpid" ] && kill -0 "$rawpid" 2>/dev/null; then
		kill -TERM "$rawpid" 2>/dev/null
		sleep 0.5
		kill -KILL "$rawpid" 2>/dev/null
	fi
	[ -n "$raw" ] && rm -rf "$raw"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# run CMD... in the background and wait for it, so that a signal reaches
# the trap at once (bash runs traps only between foreground commands)
run() {
	"$@" &
	child=$!
	wait "$child"
	local rc=$?
	child=
	return "$rc"
}

fail() {
	echo "svc-bench: FAIL: $*" >&2
	echo "svc-bench: logs in $out" >&2
	exit 1
}

counter() { # fabric counter KEY (sum or pN.KEY)
	"$tb" fabric stats | awk -v k="$1" '$1 == k { print $2 }'
}

# ---- one run through the service --------------------------------------------

svc_run() { # RUN
	local r=$1 d=$OVRDMA_TESTBED_DIR pa pb s1 s2 f0 b0
	run "$tb" up 2 ${cc:+--cc "$cc"} >"$out/up.$r" 2>&1 ||
		fail "testbed up (see $out/up.$r)"
	pa=$(cat "$d/n1/ovrdmad.pid")
	pb=$(cat "$d/n2/ovrdmad.pid")
	s1=$("$tb" sock 1)
	s2=$("$tb" sock 2)
	if [ "$(cat "/proc/$pa/comm")" != ovrdmad ] ||
		[ "$(cat "/proc/$pb/comm")" != ovrdmad ]; then
		fail "ovrdmad pids"
	fi

	run timeout 600 "$bench" "$s1" "$s2" --cpu-pids "$pa,$pb" \
		--iters "$iters" lat >"$out/lat.$r" 2>&1 ||
		fail "bench-svc lat (see $out/lat.$r)"
	f0=$(counter p0.rx)
	b0=$(counter p0.rx_bytes)
	run timeout 600 "$bench" "$s1" "$s2" --cpu-pids "$pa,$pb" \
		--seconds "$seconds" --windows 1,8,64 bw >"$out/bw.$r" 2>&1 ||
		fail "bench-svc bw (see $out/bw.$r)"
	# A's frames into the fabric during bw: data PDUs, nearly all
	echo "frame $((($(counter p0.rx_bytes) - b0) / ($(counter p0.rx) - f0)))" \
		>>"$out/bw.$r"

	"$tb" fabric set all loss=0.01 >/dev/null || fail "fabric set loss"
	run timeout 600 "$bench" "$s1" "$s2" --cpu-pids "$pa,$pb" \
		--seconds "$seconds" --windows 64 --tag loss1 bw \
		>"$out/loss.$r" 2>&1 || fail "bench-svc bw at 1 % loss"
	echo "lost $(counter loss)" >>"$out/loss.$r"
	"$tb" fabric set all reset >/dev/null || fail "fabric reset"

	if [ "$reg" = 1 ] && [ "$r" = 1 ]; then
		run timeout 900 "$bench" "$s1" "$s2" reg >"$out/reg" 2>&1 ||
			fail "bench-svc reg (see $out/reg)"
	fi
	"$tb" ctl 1 show counters >"$out/counters1.$r" 2>&1
	"$tb" ctl 2 show counters >"$out/counters2.$r" 2>&1
	"$tb" down || fail "testbed down"
}

# ---- the fabric alone ---------------------------------------------------------

# As the testbed starts its fabric (tools/ovrdma-testbed: -m 256, one
# lcore allowed on every CPU; memif server ports), without hugepages; the
# generator's ports are memif clients with the buffer size ovrdmad uses.
raw_run() { # RUN
	local r=$1 lcores ncpu size count
	ncpu=$(nproc)
	lcores="--lcores=0@(0-$((ncpu - 1)))"
	raw=$(mktemp -d /tmp/svc-bench-fabric.XXXXXX)
	"$fab" --no-huge --no-shconf -m 256 "$lcores" --no-pci --no-telemetry \
		--file-prefix "$prefix-rawf" --log-level=5 \
		--vdev="net_memif0,role=server,socket=$raw/n0.sock,socket-abstract=no,id=0" \
		--vdev="net_memif1,role=server,socket=$raw/n1.sock,socket-abstract=no,id=0" \
		-- --ctl "$raw/ctl" --pidfile "$raw/pid" >"$raw/fabric.log" 2>&1 &
	rawpid=$!
	for _ in $(seq 150); do
		[ -s "$raw/pid" ] && break
		kill -0 "$rawpid" 2>/dev/null || fail "raw fabric did not start"
		sleep 0.1
	done
	[ -s "$raw/pid" ] || fail "raw fabric: no pidfile"
	for size in "$DATA_FRAME" 64; do
		count=$([ "$size" = 64 ] && echo 2000000 || echo 400000)
		run timeout 300 "$gen" --no-huge --no-shconf -m 256 "$lcores" \
			--no-pci --no-telemetry --file-prefix "$prefix-rawg" \
			--log-level=5 \
			--vdev="net_memif0,role=client,socket=$raw/n0.sock,socket-abstract=no,id=0,bsize=10240,rsize=12" \
			--vdev="net_memif1,role=client,socket=$raw/n1.sock,socket-abstract=no,id=0,bsize=10240,rsize=12" \
			-- --count "$count" --size "$size" >"$out/raw$size.$r" \
			2>"$out/raw$size.$r.err" || fail "fabric-gen $size"
	done
	"$fab" ctl "$raw/ctl" quit >/dev/null
	wait "$rawpid"
	rawpid=
	rm -rf "$raw"
	raw=
}

# ---- medians --------------------------------------------------------------------

# field GLOB MODE SELKEY SELVAL KEY: KEY of every "result MODE" line (of
# the runs' files) whose SELKEY is SELVAL ("-" "-": every line)
field() {
	# shellcheck disable=SC2086
	cat $1 2>/dev/null | awk -v m="$2" -v sk="$3" -v sv="$4" -v k="$5" '
		$1 == "result" && $2 == m {
			delete v; ok = sk == "-"
			for (i = 3; i < NF; i += 2) {
				v[$i] = $(i + 1)
				if ($i == sk && $(i + 1) == sv) ok = 1
			}
			if (ok && (k in v)) print v[k]
		}'
}
# plain GLOB KEY: "KEY value" lines (fabric-gen, our notes)
plain() {
	# shellcheck disable=SC2086
	cat $1 2>/dev/null | awk -v k="$2" '$1 == k { print $2 }'
}
minmax() { # values on stdin -> "min-max"
	sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }'
}

# ---- main -----------------------------------------------------------------------

{
	echo "svc-bench: $(date -u +%FT%TZ), $(nproc) CPUs," \
		"$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)," \
		"commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null)," \
		"congestion control ${cc:-default}"
} | tee "$out/about"
for r in $(seq "$runs"); do
	echo "run $r/$runs: load average $(cut -d' ' -f1-3 /proc/loadavg)" |
		tee -a "$out/about"
	svc_run "$r"
	raw_run "$r"
	echo "  lat p50 $(field "$out/lat.$r" lat - - p50_us) us," \
		"bw w64 $(field "$out/bw.$r" bw window 64 gbps) Gbit/s," \
		"at 1 % loss $(field "$out/loss.$r" bw window 64 gbps) Gbit/s," \
		"fabric $(plain "$out/raw$DATA_FRAME.$r" pps) frames/s of $DATA_FRAME B," \
		"$(plain "$out/raw64.$r" pps) of 64 B"
done

L="$out/lat.*" B="$out/bw.*" X="$out/loss.*"
raw_pps=$(plain "$out/raw$DATA_FRAME.*" pps | median)
raw_gbps=$(plain "$out/raw$DATA_FRAME.*" gbps | median)
raw64=$(plain "$out/raw64.*" pps | median)
# the fabric's capacity in payload: 4096 B per data frame
raw_pay=$(awk -v p="$raw_pps" 'BEGIN { printf "%.2f", p * 4096 * 8 / 1e9 }')
mhz=$(field "$L" clock - - tsc_mhz | median)

echo
echo "Medians of $runs runs ($(nproc) CPUs; TSC $mhz MHz, measured;" \
	"data frame $(plain "$B" frame | median) B measured, $DATA_FRAME B generated):"
echo
echo "| what | figure | ovrdmad CPU (A, B; cores) | ovrdmad cycles/op (A + B) | ratio to the fabric |"
echo "|---|---:|---:|---:|---:|"
printf "| fabric alone, %s B frames (fabric-gen) | %.2f Mpps, %.2f Gbit/s (%s Gbit/s of 4 KB payloads) | - | - | 1 |\n" \
	"$DATA_FRAME" "$(awk -v p="$raw_pps" 'BEGIN { print p / 1e6 }')" \
	"$raw_gbps" "$raw_pay"
printf "| fabric alone, 64 B frames | %.2f Mpps | - | - | - |\n" \
	"$(awk -v p="$raw64" 'BEGIN { print p / 1e6 }')"
for w in 1 8 64; do
	g=$(field "$B" bw window "$w" gbps | median)
	printf "| ovrdma 64 KB RDMA WRITE, window %s | %.2f Gbit/s, %.4f Mops | %.2f, %.2f | %.0f | %.3f |\n" \
		"$w" "$g" "$(field "$B" bw window "$w" mops | median)" \
		"$(field "$B" bw window "$w" cpu_a | median)" \
		"$(field "$B" bw window "$w" cpu_b | median)" \
		"$(field "$B" bw window "$w" cyc_op | median)" \
		"$(awk -v g="$g" -v c="$raw_pay" 'BEGIN { print g / c }')"
done
g=$(field "$X" bw window 64 gbps | median)
g0=$(field "$B" bw window 64 gbps | median)
printf "| ovrdma 64 KB RDMA WRITE, window 64, 1 %% loss | %.2f Gbit/s (%.2f of loss-free) | %.2f, %.2f | %.0f | %.3f |\n" \
	"$g" "$(awk -v g="$g" -v c="$g0" 'BEGIN { print g / c }')" \
	"$(field "$X" bw window 64 cpu_a | median)" \
	"$(field "$X" bw window 64 cpu_b | median)" \
	"$(field "$X" bw window 64 cyc_op | median)" \
	"$(awk -v g="$g" -v c="$raw_pay" 'BEGIN { print g / c }')"
printf "| ovrdma 8 B RDMA WRITE round trip | p50 %.1f µs, p99 %.1f, p99.9 %.1f, max %.1f (one way %.1f) | %.2f, %.2f | %.0f per WRITE | - |\n" \
	"$(field "$L" lat - - p50_us | median)" \
	"$(field "$L" lat - - p99_us | median)" \
	"$(field "$L" lat - - p999_us | median)" \
	"$(field "$L" lat - - max_us | median)" \
	"$(field "$L" lat - - oneway_us | median)" \
	"$(field "$L" lat - - cpu_a | median)" \
	"$(field "$L" lat - - cpu_b | median)" \
	"$(field "$L" lat - - cyc_op | median)"
echo
echo "Ranges over the runs: window-64 goodput $(field "$B" bw window 64 gbps | minmax) Gbit/s," \
	"fabric $(plain "$out/raw$DATA_FRAME.*" gbps | minmax) Gbit/s," \
	"lat p50 $(field "$L" lat - - p50_us | minmax) µs"
if [ -f "$out/reg" ]; then
	echo
	echo "Registration (node 1, medians per call):"
	grep '^|' "$out/reg"
fi
echo
echo "svc-bench: raw output in $out"
