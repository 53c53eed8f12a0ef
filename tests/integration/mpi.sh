#!/bin/bash
# SPDX-License-Identifier: MIT
# Open MPI over UCX over the verbs provider (docs/PROVIDER.md section 6):
# two ranks of mpi_check on two testbed nodes (docs/TESTBED.md) through
# the memif fabric at 1 % loss with 1 % reordering.
#
# mpirun (Debian 12: openmpi-bin 4.1.4) runs in node 1 and starts the
# rank of node 2 through `ovrdma-testbed rsh` as its remote shell
# (plm_rsh_agent); each rank runs under ovrdma-run, so it finds its node's
# ovrdma0. pml ucx carries the MPI traffic over UCX's verbs transports
# only (UCX_TLS without tcp or shared memory); TCP is the launcher's
# out-of-band channel (oob, btl tcp for the runtime) and nothing else.
#   1. UCX_TLS=rc_verbs,ud_verbs:aux,self: mpi_check 256 - MPI_Allreduce
#      of known values checked exactly, 256 MB each way byte-exact;
#   2. UCX_TLS=ud_verbs,self: the same with 16 MB (UD moves a few MB/s
#      at 1 % loss).
# Each run: mpirun exits 0, rank 0 prints "mpi_check: OK", both ranks'
# UCX chose the transport asked for (ep_cfg at UCX_LOG_LEVEL=info), and
# each node's ovrdmad received and sent at least the bytes exchanged (its
# port counters: the data crossed ovrdma between the two nodes).
# usage: mpi.sh TESTBED [MPI_CHECK]   (no MPI_CHECK: built without MPI)
set -u
tb=$1 check=${2:-}

if [ "$(id -u)" -ne 0 ]; then
	echo "mpi: needs root (network namespaces, DPDK); skipped"
	exit 77
fi
if [ -z "$check" ]; then
	echo "mpi: mpi_check not built: no MPI found at configure time (apt-get install libopenmpi-dev, then reconfigure); skipped"
	exit 77
fi
for p in mpirun ompi_info timeout; do
	if ! command -v $p >/dev/null; then
		echo "mpi: $p missing (apt-get install openmpi-bin); skipped"
		exit 77
	fi
done
if ! ompi_info --parsable 2>/dev/null | grep -q '^mca:pml:ucx:'; then
	echo "mpi: this Open MPI has no pml ucx; skipped"
	exit 77
fi
export OVRDMA_TESTBED_DIR=/run/ovrdma-mpi-test.$$
export OVRDMA_TESTBED_PREFIX=ovrmp$$
trap '"$tb" down >/dev/null 2>&1' EXIT
out=$OVRDMA_TESTBED_DIR/runs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# ovrdma-run of the build tree the test runs from (the testbed exports
# OVRDMA_BUILD into the nodes; mpirun hands a rank its node's environment)
run_bin=${OVRDMA_BUILD:-$(dirname "$tb")/../build}/tools/ovrdma-run
nfail=0
summary=()

# NODE: "rx tx" bytes of its ovrdmad's port
port_bytes() {
	"$tb" ctl "$1" show counters 2>/dev/null |
		awk '$1 == "rx_bytes" { r = $2 } $1 == "tx_bytes" { t = $2 }
			END { print r + 0, t + 0 }'
}

# mpi TLS MB LIMIT
mpi() {
	local tls=$1 mb=$2 limit=$3 n=$((${#summary[@]} + 1)) rc verdict
	local log=$out/$n.log t0=$SECONDS want="(${1%%,*}/ovrdma0:1)" line
	local r1 t1 r2 t2 r1b t1b r2b t2b need=$(($2 * 1024 * 1024)) bad=""

	read -r r1 t1 < <(port_bytes 1)
	read -r r2 t2 < <(port_bytes 2)
	UCX_TLS=$tls UCX_NET_DEVICES=ovrdma0:1 UCX_LOG_LEVEL=info \
		timeout -k 10 "$limit" "$tb" exec 1 mpirun -np 2 \
		--hostfile "$out/hosts" --map-by node \
		--mca plm_rsh_agent "$tb rsh" \
		--mca pml ucx --mca btl self,tcp \
		--mca oob_tcp_if_include 192.168.100.0/24 \
		--mca btl_tcp_if_include 192.168.100.0/24 \
		-x UCX_TLS -x UCX_NET_DEVICES -x UCX_LOG_LEVEL \
		"$run_bin" "$check" "$mb" >"$log" 2>&1
	rc=$?
	read -r r1b t1b < <(port_bytes 1)
	read -r r2b t2b < <(port_bytes 2)
	line=$(grep '^mpi_check: ' "$log" | tail -1)
	verdict=ok
	if [ $rc -ne 0 ]; then
		verdict="FAIL mpirun exit $rc"
	elif [ "${line#mpi_check: OK}" = "$line" ]; then
		verdict="FAIL no mpi_check: OK line"
	elif [ "$(grep -c "ep_cfg\[[0-9]*\]: .*$want" "$log")" -lt 2 ]; then
		verdict="FAIL both ranks must choose $want"
	else
		for v in "node 1 rx $((r1b - r1))" "node 1 tx $((t1b - t1))" \
			"node 2 rx $((r2b - r2))" "node 2 tx $((t2b - t2))"; do
			[ "${v##* }" -ge $need ] || bad+="${bad:+, }$v"
		done
		[ -z "$bad" ] || verdict="FAIL bytes below $need: $bad"
	fi
	summary+=("$(printf '%-34s %4s MB %-6s %3ds node 1 rx/tx %d/%d MB' \
		"$tls" "$mb" "${verdict%% *}" $((SECONDS - t0)) \
		$(((r1b - r1) >> 20)) $(((t1b - t1) >> 20)))")
	if [ "$verdict" != ok ]; then
		nfail=$((nfail + 1))
		echo "mpi: FAIL: $tls $mb MB: $verdict"
		cat "$log"
	else
		echo "mpi: ok: $tls: ${line#mpi_check: }"
		echo "mpi:     node 1 rx $((r1b - r1)) tx $((t1b - t1)), node 2 rx $((r2b - r2)) tx $((t2b - t2)) bytes"
	fi
}

"$tb" up 2 --loss 1% --reorder 1%/50us >"$OVRDMA_TESTBED_DIR.up.log" 2>&1 || {
	cat "$OVRDMA_TESTBED_DIR.up.log"
	echo "mpi: FAIL: testbed did not come up"
	exit 1
}
rm -f "$OVRDMA_TESTBED_DIR.up.log"
mkdir -p "$out"
printf '%s slots=1\n' "$("$tb" addr 1)" "$("$tb" addr 2)" >"$out/hosts"
t_start=$SECONDS

mpi rc_verbs,ud_verbs:aux,self 256 300
mpi ud_verbs,self 16 240

echo
echo "mpi: summary (1 % loss, 1 % reordering; $((SECONDS - t_start)) s; rank 0 node 1, rank 1 node 2)"
printf '%s\n' "${summary[@]}"
if [ $nfail -ne 0 ]; then
	echo "mpi: $nfail of ${#summary[@]} runs FAILED"
	exit 1
fi
echo "mpi: all ${#summary[@]} runs passed"
