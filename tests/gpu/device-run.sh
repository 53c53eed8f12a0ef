#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs the gpu suite and issue 9's benchmarks on a machine that has CUDA,
# PyTorch and NCCL but no DPDK or rdma-core (docs/GPU.md, "The GPU
# machine"), from the repository root, as root, with what
# tools/gpu-carry packed here:
#
#   tests/gpu/device-run.sh [--carry DIR] [--deadline SECONDS] [STEP...]
#
# Steps (default: env gdr nccl copy bench):
#   env     what the machine has: GPU, driver, PyTorch, NCCL, the
#           carried libraries as the loader resolves them
#   gdr     the gpu suite's gdr_gpu: verbs_gdr between cudaMalloc and
#           cuMem buffers of two processes on two testbed nodes
#   fake    the same test on the fake CUDA driver (checks the carry on a
#           machine without a GPU)
#   gdrcores  gdr with two dataplane cores per node, a pair on each:
#           a copy channel per core on the real driver (gdr_gpu_cores)
#   scale   bench/svc-scale.sh --cores 1,2,4,8 --procs 1,8 --seconds 2
#           (issue 26: rate, bandwidth and cycles against the cores,
#           steered port queues; TCP columns where iperf3 and sockperf
#           are there), about 3 minutes
#   nccl    the gpu suite's nccl: all-reduce 8 B to 1 GB through ovrdma0
#   copy    bench-gdr-copy: the copy engine's GB/s each way
#   bench   bench/nccl-bench.sh: ovrdma0 against NCCL's socket transport
#   routes  bench/svc-bench.sh --mem both on the direct wire, one run
#           (issue 22: the process route's 64 KB goodput against the
#           object route's where each has CPUs of its own), 40 s on
#           the 2-vCPU VM
#
# --deadline SECONDS: the steps share that much wall time from the
# start: each runs under `timeout` for what is left, and one that would
# start with less than 10 s left is skipped (env, a second, while any
# is left) (the device tool kills a command at its limit,
# losing the summary; a deadline a little below it keeps it). Logs are
# written as the steps go, so a step cut short leaves what it printed.
#
# The Debian 12 packages are unpacked with dpkg -x into a prefix
# (OVRDMA_CARRY_PREFIX, default /opt/ovrdma-carry), never into /. A
# general library that the machine has itself (same soname) is left to
# the machine; DPDK's and rdma-core's are always the carried ones. Logs
# go to $OUT (the device tool's folder) or /tmp/ovrdma-device-run, one
# per step; the last line says which steps passed, failed or skipped.
set -u
cd "$(dirname "$0")/../.." || exit 1
carry=.carry deadline=
while [ $# -gt 0 ]; do
	case $1 in
	--carry) carry=$2 && shift 2 ;;
	--deadline) deadline=$2 && shift 2 ;;
	*) break ;;
	esac
done
[ -z "$deadline" ] || [[ "$deadline" =~ ^[0-9]+$ ]] || {
	echo "device-run: --deadline SECONDS" >&2
	exit 2
}
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(env gdr nccl copy bench)
prefix=${OVRDMA_CARRY_PREFIX:-/opt/ovrdma-carry}
logs=${OUT:-/tmp/ovrdma-device-run}
mkdir -p "$logs"

[ "$(id -u)" -eq 0 ] || {
	echo "device-run: run as root" >&2
	exit 1
}
[ -f "$carry/MANIFEST" ] && [ -d "$carry/build" ] || {
	echo "device-run: no $carry/MANIFEST: run tools/gpu-carry first (here: carry it)" >&2
	exit 1
}

# ---- unpack ----------------------------------------------------------------
if [ ! -f "$prefix/.unpacked" ] || [ "$carry/MANIFEST" -nt "$prefix/.unpacked" ]; then
	rm -rf "$prefix"
	mkdir -p "$prefix/shadowed"
	for d in "$carry"/debs/*.deb; do
		dpkg -x "$d" "$prefix" || {
			echo "device-run: dpkg -x $d failed" >&2
			exit 1
		}
	done
	# merged /usr: libraries under lib/ and usr/lib/ alike
	ldconfig -p | awk '{print $1}' | sort -u >"$prefix/system.sonames"
	for f in "$prefix"/lib/*/*.so.* "$prefix"/usr/lib/*/*.so.*; do
		[ -e "$f" ] || continue
		b=${f##*/}
		case $b in
		librte_* | libibverbs* | librdmacm*) continue ;;
		esac
		if grep -qxF "$b" "$prefix/system.sonames"; then
			mv "$f" "$prefix/shadowed/"
		fi
	done
	cp "$carry/MANIFEST" "$prefix/.unpacked"
fi
multiarch=x86_64-linux-gnu
libs=$prefix/usr/lib/$multiarch:$prefix/lib/$multiarch
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# the machine's own tools first, the carried ones where it lacks them
export PATH=$PATH:$prefix/usr/sbin:$prefix/usr/bin:$prefix/sbin:$prefix/bin
# DPDK looks for its drivers in /usr/lib/<multiarch>/dpdk: name them
eal=
for p in $(awk '$1 == "pmds" {$1 = ""; print}' "$carry/MANIFEST"); do
	f=$prefix/usr/lib/$multiarch/$p.so.23
	[ -e "$f" ] || f=$(ls "$prefix"/usr/lib/$multiarch/"$p".so.* 2>/dev/null | head -1)
	[ -n "$f" ] && [ -e "$f" ] || {
		echo "device-run: no $p in the carried packages" >&2
		exit 1
	}
	eal+=" -d $f"
done
export OVRDMA_EAL_EXTRA=${eal# }
build=$(cd "$carry/build" && pwd)
export OVRDMA_BUILD=$build
tb=$PWD/tools/ovrdma-testbed

declare -A result=()
step() { # name command...
	local name=$1 rc t0=$SECONDS left= min=10
	shift
	if [ -n "$deadline" ]; then
		left=$((deadline - SECONDS))
		# a function of this script (env: a second) runs as it is,
		# while time is left; a program under timeout, with 10 s
		declare -F "$1" >/dev/null && min=1
		if [ "$left" -lt "$min" ]; then
			echo "device-run: $name: skipped (the deadline)"
			result[$name]="skipped (deadline)"
			return
		fi
		[ "$min" = 1 ] || set -- timeout -k 5 "$left" "$@"
	fi
	echo "device-run: $name: $*"
	set -o pipefail
	"$@" 2>&1 | tee "$logs/$name.log"
	rc=$?
	set +o pipefail
	case $rc in
	0) result[$name]=passed ;;
	77) result[$name]=skipped ;;
	124 | 137) result[$name]="cut at the deadline ($rc)" ;;
	*) result[$name]="failed ($rc)" ;;
	esac
	echo "device-run: $name: ${result[$name]} in $((SECONDS - t0)) s"
}

# shellcheck disable=SC2317 # called through step
env_report() {
	head -2 "$carry/MANIFEST"
	uname -a
	(. /etc/os-release && echo "$PRETTY_NAME")
	nvidia-smi -L 2>&1 || true
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
	${PYTHON:-python3} -c 'import torch
print("torch", torch.__version__, "cuda", torch.version.cuda,
      "available", torch.cuda.is_available(),
      "nccl", ".".join(map(str, torch.cuda.nccl.version())))' 2>&1 || true
	echo "EAL: $OVRDMA_EAL_EXTRA"
	echo "shadowed by the system's own: $(ls "$prefix/shadowed" | tr '\n' ' ')"
	local f bad=0
	for f in "$build/service/ovrdmad" "$build/tools/ovrdma-fabric" \
		"$build/tests/integration/verbs_gdr" \
		"$build"/provider/libovrdma-rdmav*.so $OVRDMA_EAL_EXTRA; do
		[ "$f" = -d ] && continue
		if ldd "$f" | grep -q 'not found'; then
			echo "unresolved in $f:"
			ldd "$f" | grep 'not found'
			bad=1
		fi
	done
	ldd "$build/service/ovrdmad" | grep -E 'librte_eal|libisal|liburcu'
	ip -V && ethtool --version | head -1
	return $bad
}

for s in "${steps[@]}"; do
	case $s in
	env) step env env_report ;;
	gdr)
		step gdr tests/integration/gdr.sh "$tb" \
			"$build/tests/integration/verbs_gdr" libcuda.so.1 gpu
		;;
	gdrcores)
		step gdrcores tests/integration/gdr.sh "$tb" \
			"$build/tests/integration/verbs_gdr" libcuda.so.1 gpu 2
		;;
	scale)
		step scale env OVRDMA_BUILD="$build" bench/svc-scale.sh \
			--cores 1,2,4,8 --procs 1,8 --seconds 2
		;;
	fake)
		step fake tests/integration/gdr.sh "$tb" \
			"$build/tests/integration/verbs_gdr" \
			"$build/tests/fakecuda/libfakecuda.so"
		;;
	nccl)
		step nccl tests/gpu/nccl.sh "$tb" tests/gpu/nccl_allreduce.py test
		;;
	copy)
		if nvidia-smi -L >/dev/null 2>&1; then
			step copy "$build/bench/bench-gdr-copy"
		else
			echo "device-run: copy: no GPU; skipped"
			result[copy]=skipped
		fi
		;;
	bench) step bench bench/nccl-bench.sh "$build" ;;
	routes)
		step routes env OVRDMA_BUILD="$build" bench/svc-bench.sh \
			--runs 1 --seconds 3 --no-reg --mem both --fabric direct
		;;
	*)
		echo "device-run: unknown step $s" >&2
		exit 2
		;;
	esac
done

summary=
status=0
for s in "${steps[@]}"; do
	summary+=" $s: ${result[$s]};"
	case ${result[$s]} in failed* | cut*) status=1 ;; esac
done
echo "device-run:${summary%;}" | tee "$logs/summary"
exit $status
