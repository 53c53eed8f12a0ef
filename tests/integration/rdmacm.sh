#!/bin/bash
# SPDX-License-Identifier: MIT
# rdma_cm over ovrdma (docs/PROVIDER.md, "rdma_cm"; issue 25): unmodified
# rdmacm-utils programs between two testbed nodes (docs/TESTBED.md), at
# 0 % and 1 % loss, server on node 1, client on node 2, as a user runs
# them:
#   1. rping -s / rping -c -C 1000 -V (data verified): both exit 0, the
#      client prints every ping;
#   2. ucmatose (several RC connections, data both ways, disconnect);
#   3. udaddy (UD ids: SIDR exchange, address handles, datagrams);
#   4. perftest's ib_write_bw -R and ib_send_lat -R (rdma_cm exchange);
#   5. rdma_server / rdma_client (the synchronous API: rdma_get_request
#      migrates the new id to its own channel), rstream and riostream
#      (rsocket), ib_read_bw -R, qperf -cm1 rc_lat, rc_bw,
#      rc_rdma_read_bw and rc_rdma_write_lat (where installed);
#   5b. cmtime -c 500 and -c 2000: that many connections set up at once
#      on one channel on each side (hundreds of events pending: the
#      channel's queue in ovrdmad, none dropped), each step reported;
#   5c. libfabric's verbs provider (Debian's libfabric-bin, where
#      installed: fi_pingpong; fabtests' fi_rdm_pingpong is not
#      packaged): -e rdm (verbs;ofi_rxd, reliable datagrams over UD
#      QPs) 1000 x 4 KiB with the data checked, at 0 and 1 % loss;
#      -e dgram at 0 %; -e msg refused as on a kernel's RoCE or IB
#      port: libfabric 1.17 asks its server's address of rdma_cm as
#      "localhost", and rdma_bind_addr(127.0.0.1) fails (ENODEV: no RDMA
#      port has that GID), so fi_getinfo gives -61 (docs/PROVIDER.md
#      "libfabric");
#   5d. multicast at 0 % loss: mckey receivers on both nodes, the
#      sender on node 2, with and without -l (no loopback to itself);
#   6. errors: rping -c to a port with no listener: REJECTED with
#      reason 8 at once; to another tenant's vIP (a listener there):
#      ADDR_ERROR -EHOSTUNREACH; a security group on the client's node
#      forbidding the server: ADDR_ERROR -EACCES; one on the server's
#      node forbidding the client: the REQ dropped, UNREACHABLE
#      -ETIMEDOUT after the retries (about 5 s); never a connection;
#      with cm_errors (given): private data one byte over the IB CM
#      limits (REQ 56, REP 196, REJ 148; UD: SIDR_REQ 180, SIDR_REP
#      136) EINVAL and at the limits carried byte-exact; an id held
#      after DISCONNECTED: TIMEWAIT_EXIT 0.4-3 s later, both sides; the
#      active side's QP in ERROR at the REP: CONNECT_ERROR, and the
#      passive side REJECTED 28 when it destroys its id; the listener killed (SIGKILL) at the
#      CONNECT_REQUEST: REJECTED 28; the peer killed (SIGKILL) while
#      connected: DISCONNECTED; a REQ refused for want of a listener
#      whose copies reach a listener started meanwhile (the REJ delayed
#      4 s): REJECTED 8, and nothing for the listener; a listener
#      accepting 8 s after the request (longer than the REQ's retries):
#      ESTABLISHED (MRA); an application's REJ lost on the way and its
#      id destroyed: the client's next REQ gets the same REJ (28, private
#      data), the listener nothing more; a client that gives up while
#      the listener's application decides: its late accept fails; with
#      no peer, an IPv6 destination or source refused EAFNOSUPPORT, the
#      channel's fd O_NONBLOCK giving EAGAIN with nothing pending, epoll
#      reporting it readable once an event waits; the ucma ABI's
#      QUERY ADDR, GID and PATH (cm_errors query);
#   7. with cm_errors, at 0 % and at 1 % loss: 2000 connect / SEND / disconnect
#      cycles one after another (cm_errors cycles), each side holding
#      no more fds after the last cycle than after the first, each node's
#      ovrdmad back where it started: CM ids, contexts, the engine's QPs
#      and MRs, its open fds, its resident memory (within 2 MiB: the
#      allocator keeps what it freed); the cycles per second and the
#      setup latency printed;
# then no CM id is left on either node; with cm_errors, the peer
# node's ovrdmad killed under a connection: a SEND fails and
# rdma_disconnect gives DISCONNECTED within 30 s; last, on a testbed
# whose channels' sockets hold 64 KiB, cmtime -c 2000 with its events
# waiting in ovrdmad's queue (some must, none dropped), then (with
# cm_errors) the application's own node's ovrdmad killed while it waits
# for an event: the channel readable, rdma_get_cm_event EIO. Every program runs
# under a timeout, so a hang fails the test. A summary table ends the
# output.
# usage: rdmacm.sh TESTBED [CM_ERRORS]
set -u
tb=$1
cme=${2:-}

if [ "$(id -u)" -ne 0 ]; then
	echo "rdmacm: needs root (network namespaces, DPDK); skipped"
	exit 77
fi
for p in rping ucmatose udaddy ib_write_bw ib_read_bw ib_send_lat \
	rdma_server rdma_client rstream riostream cmtime mckey timeout; do
	if ! command -v $p >/dev/null; then
		echo "rdmacm: $p missing (apt-get install rdmacm-utils perftest); skipped"
		exit 77
	fi
done
export OVRDMA_TESTBED_DIR=/run/ovrdma-cm-test.$$
export OVRDMA_TESTBED_PREFIX=ovrcm$$
trap '"$tb" down >/dev/null 2>&1' EXIT
out=$OVRDMA_TESTBED_DIR/runs

nfail=0
summary=()

# cm_ids NODE: the CM ids NODE's ovrdmad holds; cm_listening NODE: of
# those, the ones listening
cm_ids() {
	"$tb" ctl "$1" show counters 2>/dev/null |
		awk '$1 == "cm_ids" { print $2 }'
}
cm_listening() {
	"$tb" ctl "$1" show counters 2>/dev/null |
		awk '$1 == "cm_listening" { print $2 }'
}

# ids_gone NODE TRIES: until NODE holds no CM id (TRIES x 0.2 s; 1: not
# in time)
ids_gone() {
	for _ in $(seq "$2"); do
		[ "$(cm_ids "$1")" = 0 ] && return 0
		sleep 0.2
	done
	[ "$(cm_ids "$1")" = 0 ]
}

# pair_server N CMD...: starts CMD on node 1 (output $out/N.srv), its
# pid in pair_spid; a second later, or with pair_listen=1 once node 1
# has more listening ids than before (at most 10 s more)
pair_server() {
	local n=$1 l0
	shift
	l0=$(cm_listening 1)
	timeout -k 5 "${pair_ts:-60}" "$tb" run 1 "$@" >"$out/$n.srv" 2>&1 &
	pair_spid=$!
	sleep 1
	if [ "${pair_listen:-0}" = 1 ]; then
		for _ in $(seq 100); do
			[ "$(cm_listening 1)" -gt "${l0:-0}" ] 2>/dev/null &&
				break
			sleep 0.1
		done
	fi
}

# pair NAME WANT_SERVER WANT_CLIENT SERVER_CMD -- CLIENT_CMD: runs the
# server on node 1 and, a second later, the client on node 2; each
# side's exit status must be WANT (a number, or "any").
pair() {
	local name=$1 ws=$2 wc=$3 srv=() cli=() n=$((${#summary[@]} + 1))
	local t0=$SECONDS spid src crc verdict=ok
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	pair_server "$n" "${srv[@]}"
	spid=$pair_spid
	# pair_ready=FUNCTION: the client starts once it returns
	[ -n "${pair_ready:-}" ] && "$pair_ready"
	timeout -k 5 "${pair_tc:-45}" "$tb" run 2 "${cli[@]}" >"$out/$n.cli" 2>&1
	crc=$?
	# a server not listening yet a second after its start (a loaded
	# machine) is the peer's REJECTED 8, as for no listener: the client
	# once more. perftest -R (pair_listen=1) has a race of its own: its
	# server listens a second time, for the test QPs, only once its
	# first (handshake) connection is ESTABLISHED, while its client
	# sends the second REQ right after its own ESTABLISHED; where the
	# RTU is lost (1 % loss) the server waits for it (the REP's
	# retransmission, 50 ms here, seconds with IB CM's timers) and the
	# REQ finds no listener: REJECTED 8, with a kernel's CM too. perftest
	# 4.5's client then retries on ids it has just destroyed and crashes
	# (rdma_cm_client_connection; fixed upstream in 23.04). So both
	# start again, up to twice more, the client once the server listens
	local try=1
	while [ "$wc" = 0 ] && [ "$crc" != 0 ] &&
		{ [ "${pair_listen:-0}" = 1 ] || kill -0 "$spid" 2>/dev/null; } &&
		grep -q -E 'REJECTED(, error|; error:) 8|Unexpected CM event.* 8$' "$out/$n.cli"; do
		if [ "${pair_listen:-0}" = 1 ]; then
			[ $try -le 2 ] || break
			echo "   ($name: rejected 8: the server and the client again, try $((try + 1)))"
			kill "$spid" 2>/dev/null
			wait "$spid" 2>/dev/null
			pkill -x "${srv[0]##*/}" 2>/dev/null
			ids_gone 1 50 || true
			mv "$out/$n.srv" "$out/$n.srv.$try"
			pair_server "$n" "${srv[@]}"
			spid=$pair_spid
		else
			[ $try = 1 ] || break
			echo "   ($name: rejected 8, the server not listening yet: the client again)"
			sleep 2
		fi
		mv "$out/$n.cli" "$out/$n.cli.$try"
		try=$((try + 1))
		timeout -k 5 "${pair_tc:-45}" "$tb" run 2 "${cli[@]}" \
			>"$out/$n.cli" 2>&1
		crc=$?
	done
	wait "$spid"
	src=$?
	pair_src=$src pair_crc=$crc
	if [ "$ws" != any ] && [ "$src" != "$ws" ]; then
		verdict="FAIL (server exit $src, want $ws)"
	fi
	if [ "$wc" != any ] && [ "$crc" != "$wc" ]; then
		verdict="FAIL (client exit $crc, want $wc)"
	fi
	report "$name" "$verdict" "$n" "$name: $verdict ($((SECONDS - t0))s)"
	[ "$verdict" = ok ]
}

# report NAME VERDICT N LINE: a run's verdict - LINE printed, on failure
# the end of both sides' output ($out/N.srv, .cli), NAME in the summary
report() {
	echo "== $4"
	if [ "$2" != ok ]; then
		nfail=$((nfail + 1))
		echo "-- server:"; tail -20 "$out/$3.srv"
		echo "-- client:"; tail -20 "$out/$3.cli"
	fi
	summary+=("$(printf '%-34s %s' "$1" "$2")")
}

# check NAME FILE PATTERN [COUNT]: FILE has PATTERN (at least COUNT lines)
check() {
	local name=$1 f=$2 pat=$3 want=${4:-1} got
	got=$(grep -c -E -- "$pat" "$f" 2>/dev/null)
	if [ "${got:-0}" -lt "$want" ]; then
		echo "== $name: FAIL ($got lines of '$pat', want $want)"
		tail -20 "$f"
		nfail=$((nfail + 1))
		summary+=("$(printf '%-34s %s' "$name" FAIL)")
		return 1
	fi
	summary+=("$(printf '%-34s %s' "$name" "ok ($got)")")
}

# unfail [WHY]: the last failure counts no more (it is retried)
unfail() {
	nfail=$((nfail - 1))
	summary[-1]="${summary[-1]%% FAIL*} ${1:-lost a datagram}, retried"
}

run_all() { # LABEL LOSSY
	local l=$1 lossy=$2 a1 r
	a1=$("$tb" addr 1)
	mkdir -p "$out"
	if pair "$l rping -C 1000 -V" 0 0 rping -s -a "$a1" -C 1000 -V -- \
		rping -c -a "$a1" -C 1000 -V -v; then
		# (not anchored: rping's "client DISCONNECT EVENT" on stderr
		# may cut into its last lines)
		check "$l rping pings verified" "$out/${#summary[@]}.cli" \
			'rdma-ping-[0-9]+: ' 1000
	fi
	if pair "$l ucmatose 4 connections" 0 0 ucmatose -c 4 -C 20 -- \
		ucmatose -s "$a1" -c 4 -C 20; then
		check "$l ucmatose both directions" "$out/${#summary[@]}.cli" \
			'^test complete' 1
	fi
	# UD is unreliable: at loss a datagram (not a SIDR message, which
	# is retransmitted) may be lost and udaddy waits for it forever;
	# there it sends 2 messages per id, not 20 (8 datagrams in all, not
	# 80: 92 % of runs lose none at 1 %, not 45 %), and the pair gets a
	# second try
	local ud=20
	[ "$lossy" = 1 ] && ud=2
	if pair "$l udaddy 2 ids" 0 0 udaddy -c 2 -C $ud -- \
		udaddy -s "$a1" -c 2 -C $ud ||
		{ [ "$lossy" = 1 ] && unfail && pair "$l udaddy, again" 0 0 \
			udaddy -c 2 -C $ud -- udaddy -s "$a1" -c 2 -C $ud; }; then
		check "$l udaddy datagrams" "$out/${#summary[@]}.cli" \
			'^test complete' 1
	fi
	pair_listen=1 pair "$l ib_write_bw -R" 0 0 ib_write_bw -R -n 500 -- \
		ib_write_bw -R -n 500 "$a1"
	pair_listen=1 pair "$l ib_send_lat -R" 0 0 ib_send_lat -R -n 500 -- \
		ib_send_lat -R -n 500 "$a1"
	# no listener on that port: REJECTED, the client fails at once
	pair "$l rping, no listener" 0 255 sleep 3 -- \
		rping -c -a "$a1" -p 7999 -C 1
	check "$l no listener: rejected" "$out/${#summary[@]}.cli" \
		'RDMA_CM_EVENT_REJECTED, error 8' 1
	pair "$l rdma_server / rdma_client" 0 0 rdma_server -- \
		rdma_client -s "$a1"
	pair "$l rstream (rsocket)" 0 0 rstream -C 100 -S 4096 -- \
		rstream -s "$a1" -C 100 -S 4096
	pair "$l riostream (rsocket iomap)" 0 0 riostream -C 100 -S 4096 -- \
		riostream -s "$a1" -C 100 -S 4096
	pair_listen=1 pair "$l ib_read_bw -R" 0 0 ib_read_bw -R -n 500 -- \
		ib_read_bw -R -n 500 "$a1"
	# many connections at once on one channel: cmtime's server runs
	# until stopped; the client's steps must all complete, no event
	# dropped (ovrdmad counts any it would drop)
	for c in 500 2000; do
		pair "$l cmtime -c $c" any 0 timeout 20 cmtime -- \
			cmtime -s "$a1" -c $c
		r=${#summary[@]}
		check "$l cmtime -c $c: every step" "$out/$r.cli" \
			'^(connect|disconnect|destroy) +:' 3
		if grep -q -E 'error|fail' "$out/$r.cli"; then
			echo "== $l cmtime -c $c: FAIL (errors reported)"
			grep -E 'error|fail' "$out/$r.cli" | head
			nfail=$((nfail + 1))
		fi
	done
	if command -v fi_pingpong >/dev/null; then
		fabric "$l" "$lossy"
	fi
	for n in 1 2; do
		d=$("$tb" ctl "$n" show counters 2>/dev/null |
			awk '$1 == "cm_ev_dropped" { print $2 }')
		if [ "${d:-0}" != 0 ]; then
			echo "== $l node $n: $d CM events dropped"
			nfail=$((nfail + 1))
			summary+=("$(printf '%-34s %s' "$l node $n events" FAIL)")
		fi
	done
	# qperf's server runs until stopped; the issue's four RC tests
	# through rdma_cm, one client run (qperf.sh runs all eight with
	# -cm1 at 1 % loss with reordering)
	if command -v qperf >/dev/null; then
		pair "$l qperf -cm1 rc_lat rc_bw rc_rdma_read_bw rc_rdma_write_lat" \
			any 0 timeout 20 qperf -- \
			qperf -cm1 -t 2 "$a1" rc_lat rc_bw rc_rdma_read_bw \
			rc_rdma_write_lat
		check "$l qperf -cm1: each measured" "$out/${#summary[@]}.cli" \
			'^ *(latency|bw) +=' 4
	fi
	errors "$l"
}

# mcast LABEL: rdmacm-utils' mckey and a multicast group of the tenant
# (docs/PROVIDER.md 4.11): a receiver on each node, the sender on node
# 2 - node 1's receiver hears it through the fabric, node 2's through its
# own node's delivery; each must get all 10 datagrams. Then again with
# the sender's QP blocking its own loopback (-l). At 0 % loss only: a
# datagram lost is lost, and mckey waits for it forever.
# members NODE GROUP: the QPs of NODE attached to GROUP (show mcast)
members() {
	"$tb" ctl "$1" show mcast 2>/dev/null | grep -c -F " $2 "
}
mcast() {
	local l=$1 a1 a2 g=239.7.7.7 rpid rrc lb
	a1=$("$tb" addr 1)
	a2=$("$tb" addr 2)
	# the sender only once both receivers' QPs are in the group: a
	# datagram sent before is not theirs (mckey waits for it for ever)
	joined() {
		for _ in $(seq 100); do
			[ "$(members 1 $g)" -ge 1 ] && [ "$(members 2 $g)" -ge 1 ] &&
				return 0
			sleep 0.1
		done
	}
	for lb in "" -l; do
		timeout -k 5 40 "$tb" run 2 mckey -m $g -b "$a2" -C 10 \
			>"$out/mc$lb.rcv" 2>&1 &
		rpid=$!
		if pair_ready=joined pair "$l mckey ${lb:+-l }(node 1 receiver)" 0 0 \
			mckey -m $g -b "$a1" -C 10 -- \
			mckey -m $g -b "$a2" -s $lb -C 10; then
			check "$l mckey ${lb:+-l }node 1 received" \
				"$out/${#summary[@]}.srv" \
				'^receiving data transfers' 1
		fi
		wait "$rpid"
		rrc=$?
		if [ "$rrc" = 0 ] && grep -q '^receiving data transfers' \
			"$out/mc$lb.rcv"; then
			summary+=("$(printf '%-34s %s' \
				"$l mckey ${lb:+-l }node 2 receiver" ok)")
		else
			echo "== mckey: node 2's receiver: exit $rrc"
			tail -20 "$out/mc$lb.rcv"
			nfail=$((nfail + 1))
			summary+=("$(printf '%-34s %s' \
				"$l mckey ${lb:+-l }node 2 receiver" FAIL)")
		fi
	done
}

# finalized: the last pair ended as fi_pingpong's finalize over RxD
# may (see fabric): one side exit 0, the other 0 or killed (137)
finalized() {
	local s=$pair_src c=$pair_crc v=ok
	if ! { [ "$s" = 0 ] && { [ "$c" = 0 ] || [ "$c" = 137 ]; }; } &&
		! { [ "$c" = 0 ] && [ "$s" = 137 ]; }; then
		v="FAIL (exits $s / $c: one 0, the other 0 or 137)"
		nfail=$((nfail + 1))
		summary[-1]="${summary[-1]%% ok*} $v"
		echo "== finalize: $v"
	fi
	[ "$v" = ok ]
}

# fi_try NAME: one fi_pingpong -e $e run (fabric's ws, wc, k, a1): the
# exits, and the client's result line (the 1000 ping-pongs done)
fi_try() {
	pair "$1" "$ws" "$wc" "${k[@]}" fi_pingpong -p verbs -e "$e" -c \
		-I 1000 -S 4096 -- "${k[@]}" fi_pingpong -p verbs -e "$e" -c \
		-I 1000 -S 4096 "$a1" && finalized &&
		check "$1: 1000 x 4k" "$out/${#summary[@]}.cli" \
			'^4k +1k +=1k ' 1
}

# fabric LABEL LOSSY: libfabric's fi_pingpong over the verbs provider
fabric() {
	local l=$1 lossy=$2 a1 e
	a1=$("$tb" addr 1)
	local ws wc k=()
	for e in rdm dgram; do
		# UD does not retry: a datagram lost stalls the ping-pong
		[ "$e" = dgram ] && [ "$lossy" = 1 ] && continue
		ws=0 wc=0 k=()
		# -e rdm is libfabric's RxD over UD QPs. One side may not
		# exit after a complete run (at 1 % loss the client 2 in 75
		# runs here, the server once in CI; at 0 % the server once
		# in CI): results printed, the peer gone with exit 0, the
		# stuck side's main thread spinning in libfabric's progress
		# (gdb). That is fi_pingpong's finalize over RxD: a side
		# exits once its last message is acked and the peer's
		# received, so when the ack of the peer's last message is
		# lost, the peer resends it forever to an endpoint that has
		# gone (RxD has no retry limit). A datagram is lost at 0 %
		# too when it finds no receive posted, as on a NIC. So each
		# side gets 20 s and is then killed; the run still needs one
		# side's exit 0, the other's 0 or the kill (137), and the
		# client's result line (the check below): the 1000
		# ping-pongs done. Rarer (2 in 126 runs at 1 % loss here),
		# both hang: the client, done, blocked reading fi_pingpong's
		# TCP sync, so its RxD makes no progress and never acks the
		# server's last message again, which the server waits for
		# (gdb: the client in read(), the server in RxD's progress;
		# libfabric's manual progress). That run gets a second try,
		# as udaddy's does; so does one (once in CI and 1 in 84 here,
		# at 0 %) where the server exited 0 and the client, killed at
		# 20 s, had printed no result: gdb found it in libfabric's
		# progress, and neither node had dropped a datagram (each one
		# sent was received and delivered, or counted for a QP gone):
		# RxD lost track of its last message inside the client
		# (docs/PROVIDER.md, "libfabric").
		if [ "$e" = rdm ]; then
			ws=any wc=any k=(timeout -s KILL 20)
		fi
		fi_try "$l fi_pingpong -e $e" ||
			{ [ "$e" = rdm ] && unfail "stuck at its end" &&
				fi_try "$l fi_pingpong -e $e, again"; }
	done
	pair "$l fi_pingpong -e msg: refused" 61 any \
		fi_pingpong -p verbs -e msg -I 10 -S 64 -- \
		fi_pingpong -p verbs -e msg -I 10 -S 64 "$a1"
	check "$l fi_pingpong -e msg: -61" "$out/${#summary[@]}.srv" \
		'fi_getinfo.*ret=-61' 1
}

# errors LABEL: the error cases of item 6 (the tables are restored)
# cme_pair NAME PORT MODE CLIENT_PATTERN N SERVER_PATTERN N: cm_errors
# server PORT MODE on node 1 and client MODE on node 2, both exiting 0,
# each output with at least N lines of its pattern
cme_pair() {
	local r
	pair "$1" 0 0 "$cme" server "$2" "$3" -- "$cme" client "$a1" "$2" "$3"
	r=${#summary[@]}
	check "$1: client" "$out/$r.cli" "$4" "$5"
	check "$1: server" "$out/$r.srv" "$6" "$7"
}

errors() {
	local l=$1 a1 t=192.168.100.50
	a1=$("$tb" addr 1)
	# another tenant's vIP on node 1, a listener on it
	"$tb" ctl 1 tenant add 300 >/dev/null 2>&1
	"$tb" ctl 1 vip add 300 $t local >/dev/null 2>&1
	pair "$l other tenant's vIP" 124 255 timeout 8 rping -s -a $t -C 1 -- \
		rping -c -a $t -C 1
	check "$l other tenant: ADDR_ERROR" "$out/${#summary[@]}.cli" \
		'RDMA_CM_EVENT_ADDR_ERROR, error -113' 1
	"$tb" ctl 1 vip del 300 $t >/dev/null 2>&1
	"$tb" ctl 1 tenant del 300 >/dev/null 2>&1
	# node 2's security group lets it reach only itself
	"$tb" ctl 2 sg set 100 "$("$tb" addr 2)/32" >/dev/null
	pair "$l sg on the client's node" 124 255 timeout 8 rping -s -a "$a1" \
		-C 1 -- rping -c -a "$a1" -C 1
	check "$l sg client: ADDR_ERROR" "$out/${#summary[@]}.cli" \
		'RDMA_CM_EVENT_ADDR_ERROR, error -13' 1
	"$tb" ctl 2 sg set 100 192.168.100.0/24 >/dev/null
	# node 1's security group drops node 2's datagrams, the REQ too
	"$tb" ctl 1 sg set 100 "$a1/32" >/dev/null
	pair "$l sg on the server's node" 124 255 timeout 12 rping -s -a "$a1" \
		-C 1 -- rping -c -a "$a1" -C 1
	check "$l sg server: UNREACHABLE" "$out/${#summary[@]}.cli" \
		'RDMA_CM_EVENT_UNREACHABLE, error -110' 1
	"$tb" ctl 1 sg set 100 192.168.100.0/24 >/dev/null
	[ -n "$cme" ] || return 0
	pair "$l private data limits" 0 0 "$cme" server 7300 pdata -- \
		"$cme" client "$a1" 7300 pdata
	local r=${#summary[@]}
	check "$l private data carried" "$out/$r.cli" \
		'^(REP|REJ) private data: [0-9]+ bytes verified' 2
	# an id held after DISCONNECTED gets TIMEWAIT_EXIT, both sides
	check "$l TIMEWAIT_EXIT, active side" "$out/$r.cli" \
		'^TIMEWAIT_EXIT after [0-9]+ ms' 1
	check "$l TIMEWAIT_EXIT, passive side" "$out/$r.srv" \
		'^TIMEWAIT_EXIT after [0-9]+ ms' 1
	cme_pair "$l UD private data limits" 7303 sidr \
		'^SIDR_REP private data: [0-9]+ bytes verified|^UD connect with [0-9]+ bytes: EINVAL' 2 \
		'^SIDR_REQ private data: [0-9]+ bytes verified|^UD accept with [0-9]+ bytes: EINVAL' 2
	# the active side's QP cannot go to RTR at the REP: CONNECT_ERROR;
	# it destroys its id, the passive side is REJECTED 28
	cme_pair "$l QP in ERROR at the REP" 7304 connerr \
		'^CONNECT_ERROR status -[0-9]+' 1 '^REJECTED status 28' 1
	pair "$l listener killed at the REQ" 137 0 "$cme" server 7301 die -- \
		"$cme" client "$a1" 7301 expect REJECTED 10
	check "$l listener killed: REJECTED 28" "$out/${#summary[@]}.cli" \
		'^RDMA_CM_EVENT_REJECTED status 28 after' 1
	# no peer: IPv6 refused (EAFNOSUPPORT), the channel's fd as the
	# kernel's (O_NONBLOCK: EAGAIN; epoll readable when an event waits)
	pair "$l IPv6, O_NONBLOCK, epoll" any 0 sleep 1 -- \
		"$cme" client "$a1" 7470 local
	check "$l IPv6 refused" "$out/${#summary[@]}.cli" \
		'^IPv6: EAFNOSUPPORT|^nothing pending: EAGAIN|^epoll readable: ADDR_RESOLVED' 3
	# no peer: QUERY ADDR / GID / PATH through the ucma ABI
	pair "$l QUERY ADDR, GID, PATH" any 0 sleep 1 -- \
		"$cme" client "$a1" 7471 query
	check "$l QUERY answered" "$out/${#summary[@]}.cli" \
		'^QUERY (ADDR|GID|PATH): ok|^errors: ENOSPC, ENOSYS, ENOENT' 4
	pair "$l peer killed when connected" 137 0 "$cme" server 7302 \
		hold-kill -- "$cme" client "$a1" 7302 expect DISCONNECTED 15
	# the listener's application takes 8 s to accept: the REQ's
	# sender waits (MRA), as with the kernel's rdma_cm, not
	# UNREACHABLE after its 5 s of retries
	pair "$l accept after 8 s" 0 0 "$cme" server 7305 slow -- \
		"$cme" client "$a1" 7305 expect ESTABLISHED 20
	check "$l accept after 8 s: ESTABLISHED" "$out/${#summary[@]}.cli" \
		'^RDMA_CM_EVENT_ESTABLISHED status 0 after' 1
	# the client gives up (exits after 2 s) while the server's
	# application decides: the server's late accept fails (EINVAL, as
	# with the kernel's CM), or is REJECTED - never a connection to
	# nobody
	pair "$l client gone before accept" 0 1 "$cme" server 7307 \
		abandoned -- "$cme" client "$a1" 7307 expect ESTABLISHED 2
	# (at 0 % loss the client's REJ is never lost: the accept fails)
	local refused='^rdma_accept: Invalid argument'
	[ "$lossy" = 1 ] && refused="$refused|^accepted, then REJECTED"
	check "$l client gone: accept refused" "$out/${#summary[@]}.srv" \
		"$refused" 1
	if [ "$lossy" = 0 ]; then
		late_listener
		rej_lost
	fi
}

# rej_lost: an application's REJ (148 bytes of private data) lost on the
# way - node 2's link dropping everything from the request until half a
# second after the reject - and the rejected id destroyed at once: the
# client's next copy of its REQ (resent every second after MRA) gets
# the same REJ from the lingering id - REJECTED 28 with the private
# data - and never reaches the listener as a new request; the
# lingering id is gone 10 s after the test at the latest.
rej_lost() {
	local a1 n=$((${#summary[@]} + 1)) spid cpid crc src verdict=ok
	a1=$("$tb" addr 1)
	timeout -k 5 30 "$tb" run 1 "$cme" server 7306 reject-late \
		>"$out/$n.srv" 2>&1 &
	spid=$!
	sleep 1
	timeout -k 5 30 "$tb" run 2 "$cme" client "$a1" 7306 rejected \
		>"$out/$n.cli" 2>&1 &
	cpid=$!
	wait_line "$out/$n.srv" '^request$' 10 &&
		"$tb" fabric set 1 blackhole=1 >/dev/null
	wait_line "$out/$n.srv" '^rejected$' 10
	sleep 0.5
	"$tb" fabric set 1 blackhole=0 >/dev/null
	wait "$cpid"
	crc=$?
	wait "$spid"
	src=$?
	[ "$src" = 0 ] || verdict="FAIL (server exit $src)"
	[ "$crc" = 0 ] || verdict="FAIL (client exit $crc)"
	# the refusing id lingers 6 s after its destruction, then goes
	ids_gone 1 50 ||
		verdict="FAIL (node 1 still holds $(cm_ids 1) CM ids)"
	report "REJ lost: sent again" "$verdict" "$n" "REJ lost: $verdict"
}

# wait_line FILE REGEX SECONDS: until a line of FILE matches (1: not in
# time)
wait_line() {
	local k
	for k in $(seq $(($3 * 20))); do
		grep -q -E "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# late_listener: a REQ refused for want of a listener, whose copies
# (retransmitted while the REJ travels: delayed 4 s here, on the way to
# node 2) arrive after a listener came up, is refused again - never
# handed to the listener (a connection to an id that gave up: perftest's
# server, accepting one, would wait for it for ever). The client gets
# REJECTED 8; the listener, for 6 s, nothing.
late_listener() {
	local a1 n=$((${#summary[@]} + 1)) spid crc src verdict=ok
	a1=$("$tb" addr 1)
	"$tb" fabric set 1 delay=4s >/dev/null
	timeout -k 5 30 "$tb" run 2 "$cme" client "$a1" 7304 expect REJECTED 12 \
		>"$out/$n.cli" 2>&1 &
	local cpid=$!
	sleep 1
	timeout -k 5 30 "$tb" run 1 "$cme" server 7304 quiet 6 \
		>"$out/$n.srv" 2>&1
	src=$?
	wait "$cpid"
	crc=$?
	"$tb" fabric set 1 delay=0 >/dev/null
	[ "$src" = 0 ] || verdict="FAIL (listener exit $src)"
	[ "$crc" = 0 ] && grep -q 'REJECTED status 8 ' "$out/$n.cli" ||
		verdict="FAIL (client exit $crc)"
	report "late listener: refused again" "$verdict" "$n" \
		"late listener: $verdict"
}

# state NODE: what ovrdmad holds - CM ids, contexts (ovrdmactl's own
# included), the engine's QPs and MRs, its open fds - and its resident
# memory (KiB) last
state() {
	local pid
	pid=$(cat "$OVRDMA_TESTBED_DIR/n$1/ovrdmad.pid")
	"$tb" ctl "$1" show counters 2>/dev/null | awk '
		$1 == "cm_ids" || $1 == "contexts" || $1 == "engine_qps" ||
		$1 == "engine_mrs" { printf "%s=%s ", $1, $2 }'
	printf 'fds=%s ' "$(ls "/proc/$pid/fd" | wc -l)"
	awk '$1 == "VmRSS:" { print $2 }' "/proc/$pid/status"
}

# stress LABEL N: N connect / disconnect cycles, nothing left behind
stress() {
	local l=$1 c=$2 n before=() after=() k rss0 rss1 a1
	a1=$("$tb" addr 1)
	for n in 1 2; do before[$n]=$(state $n); done
	pair_ts=300 pair_tc=280 pair "$l $c connect/disconnect cycles" 0 0 \
		"$cme" server 7310 cycles "$c" -- \
		"$cme" client "$a1" 7310 cycles "$c"
	grep '^cycles' "$out/${#summary[@]}.cli" "$out/${#summary[@]}.srv" |
		sed 's/^/   /'
	for n in 1 2; do
		# closed ids linger while their DREQ / DREP settle (2 s)
		for k in $(seq 50); do
			after[$n]=$(state $n)
			[ "${after[$n]% *}" = "${before[$n]% *}" ] && break
			sleep 0.2
		done
		rss0=${before[$n]##* } rss1=${after[$n]##* }
		echo "   node $n before: ${before[$n]% *} rss=${rss0}K"
		echo "   node $n after:  ${after[$n]% *} rss=${rss1}K"
		if [ "${after[$n]% *}" != "${before[$n]% *}" ] ||
			[ "$rss1" -gt $((rss0 + 2048)) ]; then
			echo "== $l node $n after $c cycles: FAIL (state not back)"
			nfail=$((nfail + 1))
			summary+=("$(printf '%-34s %s' "$l node $n after cycles" FAIL)")
		else
			summary+=("$(printf '%-34s %s' "$l node $n after cycles" ok)")
		fi
	done
}

# ovrdmad_dies LABEL NODE PORT MODE SHOW: a cm_errors server (hold) on
# node 1, its client (MODE) on node 2; once connected, NODE's ovrdmad is
# killed (SIGKILL); the client must exit 0; its lines SHOW are printed
ovrdmad_dies() {
	local l=$1 node=$2 port=$3 mode=$4 show=$5 a1 spid cpid pid
	local n=$((${#summary[@]} + 1)) verdict=ok crc
	a1=$("$tb" addr 1)
	timeout -k 5 60 "$tb" run 1 "$cme" server "$port" hold \
		>"$out/$n.srv" 2>&1 &
	spid=$!
	sleep 1
	timeout -k 5 60 "$tb" run 2 "$cme" client "$a1" "$port" "$mode" \
		>"$out/$n.cli" 2>&1 &
	cpid=$!
	wait_line "$out/$n.cli" '^established' 10
	pid=$(cat "$OVRDMA_TESTBED_DIR/n$node/ovrdmad.pid")
	kill -9 "$pid"
	wait "$cpid"
	crc=$?
	kill "$spid" 2>/dev/null
	wait "$spid"
	[ "$crc" = 0 ] || verdict="FAIL (client exit $crc)"
	echo "== $l: $verdict"
	grep -E "$show" "$out/$n.cli"
	if [ "$verdict" != ok ]; then
		nfail=$((nfail + 1))
		tail -20 "$out/$n.srv" "$out/$n.cli"
	fi
	summary+=("$(printf '%-34s %s' "$l" "$verdict")")
}
# node 1's ovrdmad killed under a connection: node 2's application
# still gets its errors and events
peer_ovrdmad_dies() {
	ovrdmad_dies "peer's ovrdmad killed" 1 7303 peerdead '^(SEND|DISCONNECTED)'
}
# node 2's ovrdmad killed while its application waits for a CM event:
# the channel becomes readable and rdma_get_cm_event fails EIO, no hang
# (docs/PROVIDER.md, events)
own_ovrdmad_dies() {
	ovrdmad_dies "own ovrdmad killed" 2 7309 owndead '^rdma_get_cm_event'
}

t_start=$SECONDS
if ! "$tb" up 2 >/dev/null 2>&1; then
	echo "rdmacm: the testbed did not come up"
	exit 1
fi
mkdir -p "$out"
if [ "${RDMACM_ONLY:-}" = mcast ]; then
	mcast "loss 0 %:"
	printf '  %s\n' "${summary[@]}"
	[ $nfail -eq 0 ] || { echo "rdmacm: $nfail failed"; exit 1; }
	echo "rdmacm: mcast passed"
	exit 0
fi
if [ "${RDMACM_ONLY:-}" = errors ] || [ "${RDMACM_ONLY:-}" = fabric ]; then
	# a developer's shortcut: only the error cases (item 6), or only
	# libfabric's programs, at 0 % and 1 % loss
	[ "$RDMACM_ONLY" = fabric ] && ! command -v fi_pingpong >/dev/null &&
		{ echo "rdmacm: fi_pingpong missing"; exit 77; }
	lossy=0 "$RDMACM_ONLY" "loss 0 %:" 0
	"$tb" fabric set all loss=1% >/dev/null
	lossy=1 "$RDMACM_ONLY" "loss 1 %:" 1
	printf '  %s\n' "${summary[@]}"
	[ $nfail -eq 0 ] || { echo "rdmacm: $nfail failed"; exit 1; }
	echo "rdmacm: $RDMACM_ONLY passed"
	exit 0
fi
run_all "loss 0 %:" 0
mcast "loss 0 %:"
[ -n "$cme" ] && stress "loss 0 %:" 2000
"$tb" fabric set all loss=1% >/dev/null
run_all "loss 1 %:" 1
[ -n "$cme" ] && stress "loss 1 %:" 2000

# every id went with its program (an id destroyed while connected
# lingers while its DREQ is retransmitted: at 1 % loss up to the 10
# sends, about 5 s)
for n in 1 2; do
	ids_gone "$n" 40 && continue
	left=$(cm_ids "$n")
	if [ -n "$left" ]; then
		echo "== node $n: $left CM ids left"
		nfail=$((nfail + 1))
	fi
done
[ -n "$cme" ] && peer_ovrdmad_dies

# the queue in ovrdmad: with the channels' sockets held to 64 KiB
# ([limits] cm_channel_kb; about 60 events), cmtime -c 2000's events
# wait in the queue - some must have, none may be dropped
"$tb" down >/dev/null 2>&1
if "$tb" up 2 --limit cm_channel_kb=64 >/dev/null 2>&1; then
	mkdir -p "$out"
	a1=$("$tb" addr 1)
	pair "queue: cmtime -c 2000, 64 KiB" any 0 timeout 20 cmtime -- \
		cmtime -s "$a1" -c 2000
	check "queue: cmtime every step" "$out/${#summary[@]}.cli" \
		'^(connect|disconnect|destroy) +:' 3
	q=0 d=0
	for n in 1 2; do
		c=$("$tb" ctl "$n" show counters 2>/dev/null)
		q=$((q + $(awk '$1 == "cm_ev_queued" { print $2 }' <<<"$c")))
		d=$((d + $(awk '$1 == "cm_ev_dropped" { print $2 }' <<<"$c")))
	done
	echo "== queue: $q events waited in ovrdmad's queues, $d dropped"
	if [ "$q" -eq 0 ] || [ "$d" -ne 0 ]; then
		nfail=$((nfail + 1))
		summary+=("$(printf '%-34s %s' "queue: $q queued, $d dropped" FAIL)")
	else
		summary+=("$(printf '%-34s %s' "queue: $q queued, $d dropped" ok)")
	fi
	[ -n "$cme" ] && own_ovrdmad_dies
else
	echo "== queue: the testbed did not come up with cm_channel_kb=64"
	nfail=$((nfail + 1))
fi

echo
echo "rdmacm summary ($((SECONDS - t_start))s):"
printf '  %s\n' "${summary[@]}"
[ $nfail -eq 0 ] || { echo "rdmacm: $nfail failed"; exit 1; }
echo "rdmacm: all passed"
