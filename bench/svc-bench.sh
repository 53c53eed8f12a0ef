#!/bin/bash
# SPDX-License-Identifier: MIT
#
# svc-bench.sh: the node service's benchmark (docs/PERFORMANCE.md, "Node
# service through the fabric"). As root, from the source tree:
#
#   bench/svc-bench.sh [--runs N] [--iters N] [--seconds T] [--no-reg]
#                      [--cc NAME] [--mem private|shared|both]
#                      [--fabric memif|direct|xdp]
#
# --cc NAME: every ovrdmad runs congestion controller NAME (ovr, dcqcn,
# timely, swift, fixed; the testbed's --cc), instead of the default.
# --mem: the data buffers of steps 2 and 3 are private memory (the
# process route) or a shared memfd (the object route) (bench-svc --mem,
# docs/SERVICE.md 4); both: steps 2 and 3 once per route in each run,
# and the table has a column per route and their ratio; the route that
# goes first alternates from run to run. Without it, as
# before: anonymous private memory, no route column.
# --fabric direct (with --mem): the two nodes' memif ports wired to each
# other, no fabric emulator (ovrdma-testbed up --fabric direct): the
# 1 %-loss phase and the fabric's own capacity (steps 3 and 5) are
# skipped, as there is no fabric to impair or measure. --fabric xdp: the
# same without a fabric, the two ovrdmad on AF_XDP at the two ends of one
# veth pair (ovrdma-testbed up --fabric xdp; underlay MTU 3000, so 2 KB
# verbs MTU): the kernel NIC path of a cloud VM.
# With --mem, each route also gets 8-byte RDMA WRITEs at window 64 (the
# message rate) and, from ovrdmad's busy_ns / poll_ns counters (weighed
# by the share of them it ran, busy_smp_* / poll_smp_*), the
# dataplane's busy cycles per operation (bench-svc's bcyc_op), set
# against the engine alone on the same machine (bench-engine --quick
# small large, run once first: ns per 8 B WRITE and per 4 KB packet of a
# 64 KB WRITE, both engines) - the 2-core measure of issue 26.
#
# Each run:
#  1. tools/ovrdma-testbed up 2 (memif fabric, no impairment) under a
#     state directory and prefix of its own (OVRDMA_TESTBED_DIR, default
#     /run/ovrdma-svcbench; OVRDMA_TESTBED_PREFIX, default ovrsb), so it
#     does not collide with another testbed;
#  2. (per route with --mem) bench-svc lat (8 B WRITE ping-pong) and bw (64 KB WRITEs, windows 1,
#     8 and 64), with the two ovrdmad pids (nI/ovrdmad.pid): bench-svc
#     reads their utime + stime from /proc/PID/stat right before and after
#     each timed phase and gives the dataplane's CPU cycles per operation
#     at the TSC rate it measures (bench/bench_svc.c);
#  3. (per route with --mem) 1 % loss on every link (ovrdma-testbed fabric set all loss=0.01):
#     bw again, window 64;
#  4. (first run only, unless --no-reg) bench-svc reg: ovr_cl_reg_mr and
#     dereg of fresh memory from 4 KB to 1 GB, on both routes (on the one
#     --mem names, unless both);
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

# wired: no fabric emulator between the two nodes
wired() { [ "$fabric" = direct ] || [ "$fabric" = xdp ]; }

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
runs=3 iters=20000 seconds=3 reg=1 cc="" mem="" fabric=memif

while [ $# -gt 0 ]; do
	case "$1" in
	--runs) bench_val --runs $#; runs=$2 && shift ;;
	--iters) bench_val --iters $#; iters=$2 && shift ;;
	--seconds) bench_val --seconds $#; seconds=$2 && shift ;;
	--no-reg) reg=0 ;;
	--cc) bench_val --cc $#; cc=$2 && shift ;;
	--fabric)
		bench_val --fabric $#
		case "$2" in
		memif | direct | xdp) fabric=$2 ;;
		*) echo "svc-bench: --fabric memif|direct|xdp" >&2 && exit 2 ;;
		esac
		shift
		;;
	--mem)
		bench_val --mem $#
		case "$2" in
		private | shared) mem=$2 ;;
		both) mem="private shared" ;;
		*) echo "svc-bench: --mem private|shared|both" >&2 && exit 2 ;;
		esac
		shift
		;;
	*) bench_usage ;;
	esac
	shift
done

[ "$fabric" = memif ] || [ -n "$mem" ] || {
	echo "svc-bench: --fabric $fabric needs --mem (the per-route table)" >&2
	exit 2
}
bench_root
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

routes() { # NODE -> "mr_route_obj mr_route_proc" of its ovrdmad
	"$tb" ctl "$1" show counters | awk '
		$1 == "mr_route_obj" { o = $2 } $1 == "mr_route_proc" { p = $2 }
		END { print o + 0, p + 0 }'
}

# ---- one run through the service --------------------------------------------

# svc_phases RUN MEM PID_A PID_B SOCK_A SOCK_B: steps 2 and 3, with
# bench-svc --mem MEM unless MEM is empty; files lat.R, bw.R, loss.R, or
# lat.MEM.R, ...
svc_phases() {
	local r=$1 m=$2 pa=$3 pb=$4 s1=$5 s2=$6 f0 b0 sfx=$1 o1 p1 n
	local memo=() o0=() p0=()

	if [ -n "$m" ]; then
		sfx=$m.$r
		memo=(--mem "$m")
	fi
	for n in 1 2; do
		read -r "o0[$n]" "p0[$n]" <<<"$(routes "$n")"
	done
	run timeout 600 "$bench" "$s1" "$s2" --cpu-pids "$pa,$pb" "${memo[@]}" \
		--iters "$iters" lat >"$out/lat.$sfx" 2>&1 ||
		fail "bench-svc lat (see $out/lat.$sfx)"
	# lat registered one buffer on each node: on the route asked for
	for n in 1 2; do
		read -r o1 p1 <<<"$(routes "$n")"
		o1=$((o1 - o0[n])) p1=$((p1 - p0[n]))
		echo "node $n registrations: object route $o1, process route $p1" \
			>>"$out/routes.$sfx"
		case "$m" in
		shared) [ "$o1" -ge 1 ] && [ "$p1" = 0 ] ;;
		*) [ "$p1" -ge 1 ] && [ "$o1" = 0 ] ;;
		esac || fail "node $n: lat's buffers took the wrong route" \
			"(${m:-default} memory; $out/routes.$sfx)"
	done
	wired || {
		f0=$(counter p0.rx)
		b0=$(counter p0.rx_bytes)
	}
	run timeout 600 "$bench" "$s1" "$s2" --cpu-pids "$pa,$pb" "${memo[@]}" \
		--seconds "$seconds" --windows 1,8,64 bw >"$out/bw.$sfx" 2>&1 ||
		fail "bench-svc bw (see $out/bw.$sfx)"
	# A's frames into the fabric during bw: data PDUs, nearly all
	wired ||
		echo "frame $((($(counter p0.rx_bytes) - b0) / ($(counter p0.rx) - f0)))" \
			>>"$out/bw.$sfx"
	if [ -n "$m" ]; then
		# the message rate: 8-byte WRITEs, window 64
		run timeout 600 "$bench" "$s1" "$s2" --cpu-pids "$pa,$pb" \
			"${memo[@]}" --seconds "$seconds" --windows 64 --size 8 \
			--tag rate8 bw >"$out/rate.$sfx" 2>&1 ||
			fail "bench-svc bw of 8 B (see $out/rate.$sfx)"
	fi
	wired && return 0

	"$tb" fabric set all loss=0.01 >/dev/null || fail "fabric set loss"
	run timeout 600 "$bench" "$s1" "$s2" --cpu-pids "$pa,$pb" "${memo[@]}" \
		--seconds "$seconds" --windows 64 --tag loss1 bw \
		>"$out/loss.$sfx" 2>&1 || fail "bench-svc bw at 1 % loss"
	echo "lost $(counter loss)" >>"$out/loss.$sfx"
	"$tb" fabric set all reset >/dev/null || fail "fabric reset"
}

svc_run() { # RUN
	local r=$1 d=$OVRDMA_TESTBED_DIR pa pb s1 s2 m regm=()
	run "$tb" up 2 ${cc:+--cc "$cc"} --fabric "$fabric" >"$out/up.$r" 2>&1 ||
		fail "testbed up (see $out/up.$r)"
	pa=$(cat "$d/n1/ovrdmad.pid")
	pb=$(cat "$d/n2/ovrdmad.pid")
	s1=$("$tb" sock 1)
	s2=$("$tb" sock 2)
	if [ "$(cat "/proc/$pa/comm")" != ovrdmad ] ||
		[ "$(cat "/proc/$pb/comm")" != ovrdmad ]; then
		fail "ovrdmad pids"
	fi

	if [ -z "$mem" ]; then
		svc_phases "$r" "" "$pa" "$pb" "$s1" "$s2"
	else
		# both routes: the first one of a run goes second in the next,
		# so that neither always meets a fresh testbed
		order=$mem
		if [ "$mem" = "private shared" ] && [ $((r % 2)) = 0 ]; then
			order="shared private"
		fi
		for m in $order; do
			svc_phases "$r" "$m" "$pa" "$pb" "$s1" "$s2"
		done
	fi

	if [ "$reg" = 1 ] && [ "$r" = 1 ]; then
		# one route, or both (bench-svc's default)
		case "$mem" in private | shared) regm=(--mem "$mem") ;; esac
		run timeout 900 "$bench" "$s1" "$s2" "${regm[@]}" reg \
			>"$out/reg" 2>&1 ||
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
	# shellcheck disable=SC2086 # OVRDMA_EAL_EXTRA: words (-d DRIVER)
	"$fab" --no-huge --no-shconf -m 256 "$lcores" --no-pci --no-telemetry \
		--file-prefix "$prefix-rawf" --log-level=5 ${OVRDMA_EAL_EXTRA:-} \
		--vdev="net_memif0,role=server,socket=$raw/n0.sock,socket-abstract=no,id=0" \
		--vdev="net_memif1,role=server,socket=$raw/n1.sock,socket-abstract=no,id=0" \
		-- --ctl "$raw/ctl" --pidfile "$raw/pid" >"$raw/fabric.log" 2>&1 &
	rawpid=$!
	for _ in $(seq 150); do
		[ -s "$raw/pid" ] && break
		kill -0 "$rawpid" 2>/dev/null ||
			fail "raw fabric did not start: $(tail -3 "$raw/fabric.log" | tr '\n' ' ')"
		sleep 0.1
	done
	[ -s "$raw/pid" ] || fail "raw fabric: no pidfile"
	for size in "$DATA_FRAME" 64; do
		count=$([ "$size" = 64 ] && echo 2000000 || echo 400000)
		# shellcheck disable=SC2086
		run timeout 300 "$gen" --no-huge --no-shconf -m 256 "$lcores" \
			--no-pci --no-telemetry --file-prefix "$prefix-rawg" ${OVRDMA_EAL_EXTRA:-} \
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
		"congestion control ${cc:-default}," \
		"memory ${mem:-default}"
} | tee "$out/about"
# the engines alone, once (--mem): cycles per 8 B WRITE (ring rig, SGE)
# and per 4 KB packet of a 64 KB WRITE, both engines, at the TSC rate
eng8= eng4k=
if [ -n "$mem" ] && [ -x "$OVRDMA_BUILD/bench/bench-engine" ]; then
	"$OVRDMA_BUILD/bench/bench-engine" --quick small large >"$out/engine" 2>&1
	mhz0=$(awk -F': ' '/cpu MHz/ { print $2; exit }' /proc/cpuinfo)
	eng8=$(awk -F'|' -v f="$mhz0" '$2 ~ /RDMA_WRITE 8 B, SGE/ && $3 ~ /engine alone/ {
		gsub(/ /, "", $7); printf "%.0f", $7 * f / 1000 }' "$out/engine")
	eng4k=$(awk -F'|' -v f="$mhz0" '$2 ~ /RDMA_WRITE 64 KB/ && $3 ~ /engine alone/ {
		gsub(/ /, "", $6); printf "%.0f", $6 * f / 1000 }' "$out/engine")
	echo "engines alone: $eng8 cycles per 8 B WRITE, $eng4k per 4 KB packet" |
		tee -a "$out/about"
fi
for r in $(seq "$runs"); do
	echo "run $r/$runs: load average $(cut -d' ' -f1-3 /proc/loadavg)" |
		tee -a "$out/about"
	svc_run "$r"
	wired || raw_run "$r"
	for m in ${mem:--}; do
		x=$m.$r
		[ "$m" = - ] && x=$r && m=
		echo "  ${m:+$m: }lat p50 $(field "$out/lat.$x" lat - - p50_us) us," \
			"bw w64 $(field "$out/bw.$x" bw window 64 gbps) Gbit/s," \
			"$(wired || echo "at 1 % loss $(field "$out/loss.$x" bw window 64 gbps) Gbit/s")" \
			"${m:+8 B at w64 $(field "$out/rate.$x" bw window 64 mops) Mops}"
	done
	wired ||
		echo "  fabric $(plain "$out/raw$DATA_FRAME.$r" pps) frames/s of $DATA_FRAME B," \
			"$(plain "$out/raw64.$r" pps) of 64 B"
done

# ---- the table per route (--mem) ------------------------------------------------

# mrow LABEL FORMAT PHASE MODE SELKEY SELVAL KEY [DIVISOR]: a row of the
# medians of KEY (over DIVISOR) per route, and process / object when both
mrow() {
	local line="| $1 |" m v vals=()

	for m in $mem; do
		v=$(field "$out/$3.$m.*" "$4" "$5" "$6" "$7" | median)
		v=$(awk -v v="$v" -v d="${8:-1}" 'BEGIN { print v / d }')
		vals+=("$v")
		# shellcheck disable=SC2059 # the format is the caller's
		line+=" $(printf "$2" "$v") |"
	done
	[ ${#vals[@]} = 2 ] && line+=" $(awk -v a="${vals[0]}" -v b="${vals[1]}" \
		'BEGIN { if (b) printf "%.3f", a / b; else print "-" }') |"
	echo "$line"
}

# perrun PHASE MODE SELKEY SELVAL KEY: process / object of each run
perrun() {
	local r a b
	for r in $(seq "$runs"); do
		a=$(field "$out/$1.private.$r" "$2" "$3" "$4" "$5")
		b=$(field "$out/$1.shared.$r" "$2" "$3" "$4" "$5")
		awk -v a="$a" -v b="$b" 'BEGIN { if (b) printf "%.3f\n", a / b }'
	done | paste -sd, | sed 's/,/, /g'
}

route_table() {
	local m w pk=16 # 4 KB data PDUs per 64 KB WRITE
	local hdr="| what |" sep="|---|"

	for m in $mem; do
		case $m in
		private) hdr+=" process route (private memory) |" ;;
		shared) hdr+=" object route (shared memfd) |" ;;
		esac
		sep+="---:|"
	done
	[ "$mem" = "private shared" ] && hdr+=" process / object |" sep+="---:|"
	echo
	echo "Per route, medians of $runs runs (an operation is one WRITE;" \
		"a 64 KB WRITE is $pk data packets of 4 KB$([ "$fabric" = xdp ] &&
			echo "; with --fabric xdp 32 of 2 KB, the verbs MTU that
			an underlay MTU of 3000 allows: a \"4 KB packet\" row is
			per 4 KB of payload there"):"
	echo
	echo "$hdr"
	echo "$sep"
	for w in 1 8 64; do
		mrow "64 KB RDMA WRITE, window $w: Gbit/s" "%.2f" bw bw window "$w" gbps
	done
	for w in 1 8 64; do
		mrow "ovrdmad cycles per 64 KB WRITE (A + B), window $w" "%.0f" \
			bw bw window "$w" cyc_op
	done
	for w in 1 8 64; do
		mrow "ovrdmad cycles per 4 KB packet (A + B), window $w" "%.0f" \
			bw bw window "$w" cyc_op "$pk"
	done
	if ! wired; then
		mrow "64 KB RDMA WRITE, window 64, 1 % loss: Gbit/s" "%.2f" \
			loss bw window 64 gbps
		mrow "ovrdmad cycles per 4 KB packet, window 64, 1 % loss" "%.0f" \
			loss bw window 64 cyc_op "$pk"
	fi
	mrow "8 B RDMA WRITE, window 64: Mops" "%.4f" rate bw window 64 mops
	mrow "ovrdmad cycles per 8 B WRITE (A + B), window 64" "%.0f" \
		rate bw window 64 cyc_op
	mrow "ovrdmad busy cycles per 8 B WRITE (A + B), window 64" "%.0f" \
		rate bw window 64 bcyc_op
	mrow "ovrdmad busy cycles per 4 KB packet (A + B), window 64" "%.0f" \
		bw bw window 64 bcyc_op "$pk"
	if [ -n "$eng8" ]; then
		mrow "busy per 8 B WRITE / the engines alone ($eng8 cycles)" \
			"%.1f" rate bw window 64 bcyc_op "$eng8"
		mrow "busy per 4 KB packet / the engines alone ($eng4k cycles)" \
			"%.1f" bw bw window 64 bcyc_op "$((eng4k * pk))"
	fi
	mrow "8 B RDMA WRITE round trip p50, µs" "%.1f" lat lat - - p50_us
	mrow "8 B RDMA WRITE round trip p99, µs" "%.1f" lat lat - - p99_us
	mrow "ovrdmad cycles per 8 B WRITE (A + B)" "%.0f" lat lat - - cyc_op
	echo
	for m in $mem; do
		echo "Ranges over the runs, $m: window-64 goodput" \
			"$(field "$out/bw.$m.*" bw window 64 gbps | minmax) Gbit/s," \
			"cycles per 4 KB packet at window 64" \
			"$(field "$out/bw.$m.*" bw window 64 cyc_op |
				awk -v k="$pk" '{ printf "%.0f\n", $1 / k }' | minmax)," \
			"lat p50 $(field "$out/lat.$m.*" lat - - p50_us | minmax) µs"
	done
	if [ "$mem" = "private shared" ]; then
		echo "Process / object in each run: window-64 goodput" \
			"$(perrun bw bw window 64 gbps); cycles per packet at" \
			"window 64 $(perrun bw bw window 64 cyc_op); lat p50" \
			"$(perrun lat lat - - p50_us)"
	fi
}

L="$out/lat.*" B="$out/bw.*" X="$out/loss.*"
raw_pps=$(plain "$out/raw$DATA_FRAME.*" pps | median)
raw_gbps=$(plain "$out/raw$DATA_FRAME.*" gbps | median)
raw64=$(plain "$out/raw64.*" pps | median)
# the fabric's capacity in payload: 4096 B per data frame
raw_pay=$(awk -v p="$raw_pps" 'BEGIN { printf "%.2f", p * 4096 * 8 / 1e9 }')
mhz=$(field "$L" clock - - tsc_mhz | median)

echo
if wired; then
	echo "Medians of $runs runs ($(nproc) CPUs; TSC $mhz MHz, measured; no fabric)."
else
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
fi
if [ -z "$mem" ]; then
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
else
	route_table
	if wired; then
		echo "No fabric: the nodes' ports wired to each other (--fabric $fabric)."
	else
		echo "Fabric alone over the runs: $(plain "$out/raw$DATA_FRAME.*" gbps | minmax) Gbit/s"
	fi
fi
if [ -f "$out/reg" ]; then
	echo
	echo "Registration (node 1, medians per call):"
	grep '^|' "$out/reg"
fi
echo
echo "svc-bench: raw output in $out"
