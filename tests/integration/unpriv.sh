#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified RDMA applications as an ordinary user (docs/OPERATIONS.md,
# "Who may use the devices"; docs/SERVICE.md section 4), deployed as the
# packages deploy it: ovrdmad runs as root, its socket is 0660 root:GROUP
# (`group =`), and the user is a member of GROUP in /etc/group - the
# groups a login gives (setpriv --init-groups), no capability, the
# programs and the provider root-owned files it may read and run. Here
# GROUP and the user are made for the run (the packages' group is
# `ovrdma`, which tests/integration/packaging.sh wants absent) and
# removed after. Two testbed nodes (docs/TESTBED.md, `up --group`), every
# ovrdmad started under umask 077 (a hardened host's): the socket and
# the sysfs tree must still be what the user needs.
#   1. verbs_mem, every case, server and client as the user: memfd
#      (reached through the descriptor it holds), a 2 MB hugetlb memfd
#      where a page is free, a file (unlinked; and file-path, by its
#      path in a directory the user owns), shared anonymous memory with
#      a child, private memory (thread, dontneed, munmap, fork, 1 GiB,
#      madv); node 1 counted registrations of both routes;
#   2. perftest's ib_write_bw and ib_read_bw, both sides as the user;
#   3. unpriv_probe rights: REG_MR requests the user forges on its own
#      socket (the process route with a file that is not its
#      /proc/self/mem, another user's /proc/PID/mem, a root-owned file
#      it may only read registered for device writes) are refused, each
#      with its error;
#   4. unpriv_probe exec: memory the user registered is not reached once
#      the registering process exec'd a set-user-ID root program (a copy
#      of unpriv_probe made so here), though the context, its QP and its
#      registration live on;
#   5. a user outside GROUP: "Permission denied" on the socket, at once.
# Afterwards no QP is left on either node. Each program runs under a
# timeout, so a hang fails the test.
# usage: unpriv.sh TESTBED VERBS_MEM UNPRIV_PROBE
set -u
tb=$1 verbs_mem=$2 probe=$3
build=${OVRDMA_BUILD:?OVRDMA_BUILD: the build tree}

if [ "$(id -u)" -ne 0 ]; then
	echo "unprivileged: needs root (network namespaces, DPDK, a user to run as); skipped"
	exit 77
fi
for p in setpriv useradd userdel groupadd groupdel ib_write_bw ib_read_bw \
	ibv_devinfo ss; do
	if ! command -v $p >/dev/null; then
		echo "unprivileged: $p missing (apt-get install util-linux passwd perftest ibverbs-utils iproute2); skipped"
		exit 77
	fi
done
export OVRDMA_TESTBED_DIR=/run/ovrdma-up-test.$$
export OVRDMA_TESTBED_PREFIX=ovrup$$
grp=ovrupg$$ usr=ovrupu$$
tmp=$(mktemp -d /tmp/ovrdma-unpriv.XXXXXX)
hp=/proc/sys/vm/nr_hugepages
hp_added=0
cleanup() {
	"$tb" down >/dev/null 2>&1
	[ $hp_added = 0 ] || echo $(($(cat $hp) - 1)) >$hp
	userdel "$usr" >/dev/null 2>&1
	groupdel "$grp" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
t_start=$SECONDS
nfail=0
summary=()

groupadd --system "$grp" || exit 1
useradd --system --no-create-home --home-dir /nonexistent \
	--shell /usr/sbin/nologin --gid nogroup --groups "$grp" "$usr" || exit 1
as_user=(setpriv --reuid="$usr" --regid=nogroup --init-groups)

# What the user runs, as an installation has it: root-owned, readable,
# outside any build tree the user may not enter; the set-user-ID helper
# of step 4; a directory of the user's own for files (TMPDIR).
chmod 0755 "$tmp"
mkdir -p "$tmp/build/provider" "$tmp/build/tools" "$tmp/suid" "$tmp/home"
cp "$build"/provider/libovrdma-rdmav*.so "$build/provider/libovrdma-preload.so" \
	"$tmp/build/provider/"
cp "$build/tools/ovrdma-run" "$tmp/build/tools/"
cp "$verbs_mem" "$probe" "$tmp/build/"
cp "$probe" "$tmp/suid/unpriv_probe"
chmod -R a+rX "$tmp/build"
chmod 4755 "$tmp/suid/unpriv_probe"
chown "$usr" "$tmp/home"
chmod 0700 "$tmp/home"

# user NODE LIMIT CMD...: CMD as the user in node NODE, through ovrdma-run
user() {
	local n=$1 limit=$2
	shift 2
	timeout -k 5 "$limit" "$tb" exec "$n" "${as_user[@]}" \
		env OVRDMA_BUILD="$tmp/build" TMPDIR="$tmp/home" \
		"$tmp/build/tools/ovrdma-run" "$@"
}

counter() { # node name
	"$tb" ctl "$1" show counters | awk -v k="$2" '$1 == k {print $2}'
}

# step LABEL VERDICT DETAIL
step() {
	summary+=("$(printf '%-22s %-5s %s' "$1" "$2" "$3")")
	echo "--- $1: $2 $3"
	[ "$2" != FAIL ] || nfail=$((nfail + 1))
}

(umask 077 && "$tb" up 2 --group "$grp") >"$tmp/up.log" 2>&1 || {
	cat "$tmp/up.log"
	echo "unprivileged: FAIL: testbed did not come up"
	exit 1
}
sock1=$("$tb" sock 1)
mode=$(stat -c '%a %U %G' "$sock1")
echo "unprivileged: socket $sock1: $mode; the user:" \
	"$("${as_user[@]}" id)," \
	"$("${as_user[@]}" awk '$1 == "CapEff:" {print "CapEff " $2}' /proc/self/status)"
if [ "$mode" != "660 root $grp" ]; then
	step socket FAIL "mode $mode, want 660 root $grp"
fi
# one 2 MB page more for verbs_mem's hugetlb case, where the kernel has
# one (the testbed's DPDK processes take every free page)
if [ -w $hp ]; then
	hp0=$(cat $hp)
	echo $((hp0 + 1)) >$hp 2>/dev/null
	[ "$(cat $hp)" -gt "$hp0" ] && hp_added=1
fi

# ---- 1. verbs_mem ------------------------------------------------------------
t0=$SECONDS
user 1 300 "$tmp/build/verbs_mem" server -p 18900 >"$tmp/mem.srv" 2>&1 &
spid=$!
user 2 300 "$tmp/build/verbs_mem" client "$("$tb" addr 1)" -p 18900 \
	>"$tmp/mem.cli" 2>&1
crc=$?
wait $spid
src=$?
obj=$(counter 1 mr_route_obj) proc=$(counter 1 mr_route_proc)
line=$(grep -m1 'verbs_mem: PASS: [0-9]' "$tmp/mem.srv" | sed 's/^verbs_mem: PASS: //')
if [ $src -ne 0 ] || [ $crc -ne 0 ] || ! grep -q ': PASS' "$tmp/mem.cli" ||
	[ -z "$line" ]; then
	step verbs_mem FAIL "exit: server $src, client $crc"
	cat "$tmp/mem.srv" "$tmp/mem.cli"
elif [ "${obj:-0}" -lt 1 ] || [ "${proc:-0}" -lt 1 ]; then
	step verbs_mem FAIL "node 1 registered ${obj:-no} object-route, ${proc:-no} process-route regions"
	cat "$tmp/mem.srv"
else
	grep -E 'verbs_mem: [a-z0-9-]+: (PASS|SKIP)' "$tmp/mem.srv"
	step verbs_mem ok "$line; routes: object $obj, process $proc ($((SECONDS - t0)) s)"
fi

# ---- 2. perftest -------------------------------------------------------------
for prog in ib_write_bw ib_read_bw; do
	t0=$SECONDS
	user 1 60 $prog -x 0 -n 300 >"$tmp/$prog.srv" 2>&1 &
	spid=$!
	for _ in $(seq 150); do
		"$tb" exec 1 ss -ltn 2>/dev/null | grep -q ':18515 ' && break
		sleep 0.1
	done
	user 2 60 $prog -x 0 -n 300 "$("$tb" addr 1)" >"$tmp/$prog.cli" 2>&1
	crc=$?
	wait $spid
	src=$?
	# the last line of the table: #bytes #iterations peak average rate
	bw=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5 {v = $4}
		END {print v}' "$tmp/$prog.cli")
	if [ $src -ne 0 ] || [ $crc -ne 0 ] || [ -z "$bw" ]; then
		step $prog FAIL "exit: server $src, client $crc"
		cat "$tmp/$prog.srv" "$tmp/$prog.cli"
	else
		step $prog ok "$bw MB/s average, 64 KB ($((SECONDS - t0)) s)"
	fi
done

# ---- 3, 4. what the user must not reach --------------------------------------
for m in rights exec; do
	args=("$sock1" ovrdma0)
	[ $m = rights ] || args+=("$tmp/suid/unpriv_probe")
	timeout -k 5 60 "$tb" exec 1 "${as_user[@]}" "$tmp/build/unpriv_probe" \
		$m "${args[@]}" >"$tmp/$m.log" 2>&1
	rc=$?
	cat "$tmp/$m.log"
	line=$(grep -m1 -E "unpriv_probe: $m: (PASS|FAIL|SKIP)" "$tmp/$m.log" |
		sed "s/^unpriv_probe: $m: //")
	case $rc in
	0) step "probe $m" ok "${line#PASS: }" ;;
	77) step "probe $m" SKIP "${line#SKIP: }" ;;
	*) step "probe $m" FAIL "exit $rc: ${line:-no verdict}" ;;
	esac
done

# ---- 5. outside the group ----------------------------------------------------
out=$(timeout -k 5 20 "$tb" exec 1 setpriv --reuid=nobody --regid=nogroup \
	--clear-groups "$tmp/build/tools/ovrdma-run" ibv_devinfo 2>&1)
rc=$?
if [ $rc -eq 0 ] || [ $rc -ge 124 ] ||
	! grep -q 'cannot reach ovrdmad at .*: Permission denied' <<<"$out"; then
	step "not in the group" FAIL "exit $rc: $out"
else
	step "not in the group" ok "$(grep -m1 'Permission denied' <<<"$out")"
fi

# nothing left behind on either node
for n in 1 2; do
	for _ in $(seq 50); do
		[ "$(counter $n engine_qps)" = 0 ] && break
		sleep 0.1
	done
	if [ "$(counter $n engine_qps)" != 0 ]; then
		step "node $n QPs" FAIL "QPs left after the programs exited"
		"$tb" ctl $n show qps
	fi
done

echo
echo "unprivileged: as user $usr (group $grp), through the testbed"
printf '%s\n' "${summary[@]}"
echo "unprivileged: ${#summary[@]} steps, $nfail failed, $((SECONDS - t_start)) s"
[ $nfail -eq 0 ]
