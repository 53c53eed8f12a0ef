#!/bin/bash
# SPDX-License-Identifier: MIT
# UCX over the verbs provider (docs/PROVIDER.md section 6): unmodified
# ucx_perftest (Debian 12: ucx-utils, UCX 1.13) between two testbed nodes
# (docs/TESTBED.md) through the memif fabric at 1 % loss with 1 %
# reordering, server on node 1, client on node 2 (the OOB exchange, TCP
# port 13337, over the kernel network between the vIPs).
#   1. rc_verbs (UCX_TLS=rc_verbs,ud_verbs:aux: UCP wires RC endpoints up
#      through a UD auxiliary transport): UCP tag matching (eager and
#      rendezvous), sync, stream, active messages, put, get and atomics,
#      and the UCT level directly (RDMA WRITE, READ, device atomics, AM);
#   2. ud_verbs (UCX_TLS=ud_verbs): the same UCP tests, put/get/atomics
#      emulated over active messages, and UCT AM.
# Each run: both sides exit 0; the client prints its "Final:" line; the
# UCP client says it chose the transport asked for (ep_cfg, at
# UCX_LOG_LEVEL=info); node 1's ovrdmad moved at least the run's payload
# (its port counters: the data crossed ovrdma, not TCP or shared memory).
# Every program runs under a timeout, so a hang fails the test. A summary
# table of what ran ends the output.
# usage: ucx.sh TESTBED
set -u
tb=$1

if [ "$(id -u)" -ne 0 ]; then
	echo "ucx: needs root (network namespaces, DPDK); skipped"
	exit 77
fi
for p in ucx_perftest ss timeout; do
	if ! command -v $p >/dev/null; then
		echo "ucx: $p missing (apt-get install ucx-utils iproute2 coreutils); skipped"
		exit 77
	fi
done
export OVRDMA_TESTBED_DIR=/run/ovrdma-ucx-test.$$
export OVRDMA_TESTBED_PREFIX=ovrux$$
trap '"$tb" down >/dev/null 2>&1' EXIT
out=$OVRDMA_TESTBED_DIR/runs
PORT=13337
RC=rc_verbs,ud_verbs:aux
UD=ud_verbs

nfail=0
summary=()

wait_listen() {
	for _ in $(seq 150); do
		"$tb" exec 1 ss -ltn 2>/dev/null | grep -q ":$PORT " && return 0
		sleep 0.1
	done
	return 1
}

# node 1's port counters: rx_bytes + tx_bytes
port_bytes() {
	"$tb" ctl 1 show counters 2>/dev/null |
		awk '$1 == "rx_bytes" || $1 == "tx_bytes" { s += $2 } END { print s + 0 }'
}

# One ucx_perftest run: server on node 1, client on node 2.
# upt TLS KIND MINBYTES TEST ARGS...
#   KIND lat|bw: what the summary shows (50th percentile latency or the
#   overall bandwidth); MINBYTES: what node 1 must at least have moved;
#   TEST ARGS: the client's ucx_perftest options (-t TEST ...); a UCT test
#   names its transport with -x, a UCP one is checked against ep_cfg.
upt() {
	local tls=$1 kind=$2 minb=$3
	shift 3
	local name="$tls $*" n=$((${#summary[@]} + 1)) spid src crc verdict
	local slog=$out/$n.srv clog=$out/$n.cli t0=$SECONDS b0 b1 fin want=""
	local env=(env UCX_TLS="$tls" UCX_NET_DEVICES=ovrdma0:1
		UCX_LOG_LEVEL=info)

	case " $* " in
	*" -x "*) ;; # UCT: the transport is the one named
	*) want="(${tls%%,*}/ovrdma0:1)" ;;
	esac
	b0=$(port_bytes)
	timeout -k 5 90 "$tb" run 1 "${env[@]}" ucx_perftest -p $PORT \
		>"$slog" 2>&1 &
	spid=$!
	if ! wait_listen; then
		kill "$spid" 2>/dev/null
		wait "$spid"
		summary+=("$(printf '%-68s %-6s %s' "$name" FAIL "server never listened")")
		nfail=$((nfail + 1))
		echo "ucx: FAIL: $name: server never listened"
		tail -5 "$slog"
		return
	fi
	timeout -k 5 80 "$tb" run 2 "${env[@]}" ucx_perftest "$("$tb" addr 1)" \
		-p $PORT "$@" >"$clog" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	b1=$(port_bytes)
	# Final: iters, lat 50%ile, avg, overall (us), bw avg, overall
	# (MB/s), msg rate avg, overall
	fin=$(awk '/^Final:/ { print (k == "lat" ? $3 " us" : $7 " MB/s") }' \
		k="$kind" "$clog" | tail -1)
	verdict=ok
	if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
		verdict="FAIL exit server $src client $crc"
	elif [ -z "$fin" ]; then
		verdict="FAIL no Final: line on the client"
	elif [ -n "$want" ] && ! grep -q "ep_cfg\[[0-9]*\]: .*$want" "$clog"; then
		verdict="FAIL the client did not choose $want"
	elif [ $((b1 - b0)) -lt "$minb" ]; then
		verdict="FAIL node 1 moved $((b1 - b0)) bytes, want >= $minb"
	fi
	summary+=("$(printf '%-68s %-6s %3ds %s' "$name" "${verdict%% *}" \
		$((SECONDS - t0)) "${fin:-$verdict}")")
	if [ "$verdict" != ok ]; then
		nfail=$((nfail + 1))
		echo "ucx: FAIL: $name: $verdict"
		echo "--- server"
		cat "$slog"
		echo "--- client"
		cat "$clog"
	else
		echo "ucx: ok: $name: $fin, node 1 moved $((b1 - b0)) bytes"
	fi
}

"$tb" up 2 --loss 1% --reorder 1%/50us >"$OVRDMA_TESTBED_DIR.up.log" 2>&1 || {
	cat "$OVRDMA_TESTBED_DIR.up.log"
	echo "ucx: FAIL: testbed did not come up"
	exit 1
}
rm -f "$OVRDMA_TESTBED_DIR.up.log"
mkdir -p "$out"
t_start=$SECONDS

K=1024 M=$((1024 * 1024))
# ---- rc_verbs: UCP ---------------------------------------------------------
upt $RC lat $((8 * 1000)) -t tag_lat -n 1000
upt $RC lat $((8 * 500)) -t tag_sync_lat -n 500
upt $RC bw $((64 * K * 500)) -t tag_bw -s 65536 -n 500
upt $RC bw $((M * 40)) -t tag_bw -s 1048576 -n 40
upt $RC bw $((64 * K * 200)) -t stream_bw -s 65536 -n 200
upt $RC bw $((64 * K * 200)) -t ucp_am_bw -s 65536 -n 200
upt $RC lat $((8 * 1000)) -t ucp_put_lat -n 1000
upt $RC bw $((64 * K * 500)) -t ucp_put_bw -s 65536 -n 500
upt $RC bw $((64 * K * 300)) -t ucp_get -s 65536 -n 300
upt $RC lat $((8 * 500)) -t ucp_fadd -n 500
upt $RC lat $((8 * 500)) -t ucp_cswap -n 500
# ---- rc_verbs: UCT (RDMA WRITE, READ, device atomics, AM) -------------------
upt $RC lat $((8 * 1000)) -t am_lat -d ovrdma0:1 -x rc_verbs -n 1000
upt $RC lat $((8 * 1000)) -t put_lat -d ovrdma0:1 -x rc_verbs -n 1000
upt $RC bw $((64 * K * 300)) -t put_bw -d ovrdma0:1 -x rc_verbs -D zcopy -s 65536 -n 300
upt $RC bw $((64 * K * 200)) -t get -d ovrdma0:1 -x rc_verbs -D zcopy -s 65536 -n 200
upt $RC lat $((8 * 500)) -t fadd -d ovrdma0:1 -x rc_verbs -n 500
upt $RC lat $((8 * 500)) -t cswap -d ovrdma0:1 -x rc_verbs -n 500
# ---- ud_verbs: UCP (RMA and atomics emulated over AM) -----------------------
upt $UD lat $((8 * 1000)) -t tag_lat -n 1000
upt $UD bw $((64 * K * 100)) -t tag_bw -s 65536 -n 100
upt $UD bw $((M * 8)) -t tag_bw -s 1048576 -n 8
upt $UD lat $((8 * 500)) -t ucp_put_lat -n 500
upt $UD bw $((64 * K * 100)) -t ucp_put_bw -s 65536 -n 100
upt $UD bw $((64 * K * 100)) -t ucp_get -s 65536 -n 100
upt $UD lat $((8 * 300)) -t ucp_fadd -n 300
# ---- ud_verbs: UCT --------------------------------------------------------
upt $UD lat $((8 * 1000)) -t am_lat -d ovrdma0:1 -x ud_verbs -n 1000
upt $UD bw $((2 * K * 1000)) -t am_bw -d ovrdma0:1 -x ud_verbs -D bcopy -s 2048 -n 1000

echo
echo "ucx: summary (1 % loss, 1 % reordering; $((SECONDS - t_start)) s; server node 1, client node 2)"
printf '%-68s %-6s %4s %s\n' "transports and client options" result time "client's figure"
printf '%s\n' "${summary[@]}"
if [ $nfail -ne 0 ]; then
	echo "ucx: $nfail of ${#summary[@]} runs FAILED"
	exit 1
fi
echo "ucx: all ${#summary[@]} runs passed"
