#!/bin/bash
# SPDX-License-Identifier: MIT
# rdma-core's own tests against an ovrdma device (docs/PROVIDER.md section
# 6): Debian's python3-pyverbs ships them gzipped under
# /usr/share/doc/rdma-core/tests; they are unpacked into a scratch
# directory and MODULE (test_odp: on-demand paging) runs unmodified with
# Debian's /usr/bin/python3 in testbed node 1's environment (its
# namespace, through ovrdma-run), as
#   run_tests.py --dev ovrdma0 --gid 0 -v MODULE
# Each test's verdict and a summary are printed. Fails when a test fails
# or errors, or is skipped for a reason not listed below as expected
# (what ovrdma does not offer: XRC), and for test_odp when the node saw
# no on-demand or no implicit registration. The huge-page tests need two
# free 2 MB pages: one more than the testbed's are reserved for the run
# and given back after (skipped, 77, when the kernel has none to give).
# usage: rdma-core-tests.sh TESTBED MODULE
#   exit 77 without root, python3-pyverbs or its tests.
set -u
tb=$1 module=$2
name=rdma_core_${module#test_}
src=/usr/share/doc/rdma-core/tests
py=/usr/bin/python3

# expected skips of each module: "test_name|reason" (exact)
declare -A expected=(
	[test_odp]="test_odp_xrc_traffic|Create XRCD is not supported"
	# no ATOMIC_WRITE on the wire (create_qp_ex: EOPNOTSUPP), no memory
	# windows (MW_BIND access: EOPNOTSUPP), no XRC (docs/PROVIDER.md,
	# "The extended QP API")
	[test_qpex]="test_qp_ex_rc_atomic_write|Extended QP is not supported on this device
test_qp_ex_rc_bind_mw|Create custom mr with additional access flags 18 is not supported
test_qp_ex_xrc_send|Create XRCD is not supported
test_qp_ex_xrc_send_imm|Create XRCD is not supported"
)

skip() {
	echo "$name: $*; skipped"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, DPDK)"
[ -x $py ] && $py -c 'import pyverbs.device' 2>/dev/null ||
	skip "no pyverbs for $py (apt-get install python3-pyverbs: tools/install-deps)"
[ -e "$src/$module.py" ] || [ -e "$src/$module.py.gz" ] ||
	skip "no $src/$module.py(.gz) (python3-pyverbs ships rdma-core's tests)"

export OVRDMA_TESTBED_DIR=${OVRDMA_TESTBED_DIR:-/run/ovrdma-rc-test.$$}
export OVRDMA_TESTBED_PREFIX=${OVRDMA_TESTBED_PREFIX:-ovrrc$$}
out=$OVRDMA_TESTBED_DIR.logs
hp=/proc/sys/vm/nr_hugepages
hp_added=0
cleanup() {
	"$tb" down >/dev/null 2>&1
	[ $hp_added -gt 0 ] && echo $(($(cat $hp) - hp_added)) >$hp
}
trap cleanup EXIT
rm -rf "$out"
mkdir -p "$out"
cp -r "$src" "$out/rdma-core" && gunzip -fq "$out"/rdma-core/*.gz ||
	{
		echo "$name: FAIL: cannot unpack $src"
		exit 1
	}

"$tb" up 2 >"$out/up.log" 2>&1 || {
	cat "$out/up.log"
	echo "$name: FAIL: testbed did not come up"
	exit 1
}

# the testbed's DPDK processes took every free 2 MB page: add some,
# relative to what is there now, as verbs-apps.sh does
free_huge() { awk '$1 == "HugePages_Free:" { print $2 }' /proc/meminfo; }
if [ -w $hp ]; then
	hp0=$(cat $hp)
	echo $((hp0 + 4)) >$hp 2>/dev/null
	hp_added=$(($(cat $hp) - hp0))
fi
[ "$(free_huge)" -ge 2 ] ||
	skip "$(free_huge) free 2 MB pages (2 needed by the huge-page tests), the kernel gave $hp_added more"

t0=$SECONDS
(cd "$out/rdma-core" && timeout -k 5 240 "$tb" run 1 $py run_tests.py \
	--dev ovrdma0 --gid 0 -v "$module") >"$out/run.log" 2>&1
rc=$?
"$tb" ctl 1 show counters >"$out/counters.log" 2>&1

# verdicts: "test_x (tests.MODULE.Class.test_x) ... ok | skipped 'why' | ...";
# a test with a docstring has its first line on a line of its own,
# before " ... verdict": dropped, the verdict joined to the test's line
verdicts() {
	awk '/^test_[A-Za-z0-9_]+ \(.*\)$/ { held = $0; next }
	     held != "" && match($0, / \.\.\. (ok|skipped|FAIL|ERROR|expected failure|unexpected success)/) {
		$0 = held substr($0, RSTART)
	     }
	     { held = ""; print }' "$out/run.log" |
		grep -E '^test_[A-Za-z0-9_]+ \(.*\) \.\.\. '
}
echo "$name: rdma-core's $module.py against ovrdma0 (testbed node 1), $((SECONDS - t0)) s"
verdicts |
	sed -E 's/^(test_[A-Za-z0-9_]+) \([^)]*\) \.\.\. /  \1: /'
ran=$(sed -nE 's/^Ran ([0-9]+) tests? .*/\1/p' "$out/run.log")
last=$(grep -E '^(OK|FAILED)( \(.*\))?$' "$out/run.log" | tail -1)
num() { echo "$last" | sed -nE "s/.*[(, ]$1=([0-9]+).*/\\1/p"; }
nfail=$(num failures) nerr=$(num errors) nskip=$(num skipped)
nfail=${nfail:-0} nerr=${nerr:-0} nskip=${nskip:-0}
verdict=ok why=()
if [ -z "$ran" ] || [ -z "$last" ]; then
	why+=("no unittest summary (exit $rc)")
else
	npass=$((ran - nfail - nerr - nskip))
	echo "$name: $ran ran: $npass passed, $nfail failed, $nerr errors, $nskip skipped"
	[ $((nfail + nerr)) -eq 0 ] || why+=("$nfail failed, $nerr errors")
fi
[ $rc -eq 0 ] || why+=("run_tests.py exited $rc")
# every skip must be an expected one
nexp=0
while IFS= read -r line; do
	t=${line%% *}
	r=$(echo "$line" | sed -nE "s/.* \.\.\. skipped '(.*)'\$/\\1/p")
	if [[ $'\n'"${expected[$module]:-}"$'\n' == *$'\n'"$t|$r"$'\n'* ]]; then
		nexp=$((nexp + 1))
		echo "$name: skipped as expected: $t ($r)"
	else
		why+=("$t skipped: $r")
	fi
done < <(verdicts | grep -E '^test_[A-Za-z0-9_]+ \(.*\) \.\.\. skipped ')
[ "$nexp" -eq "$nskip" ] || [ ${#why[@]} -gt 0 ] ||
	why+=("$nskip skipped, $nexp of them seen as expected")
if [ "$module" = test_odp ]; then
	c() { awk -v k="$1" '$1 == k { print $2 }' "$out/counters.log"; }
	echo "$name: node 1 registered $(c mr_odp) on-demand regions, $(c mr_odp_implicit) implicit"
	[ "$(c mr_odp)" -gt 0 ] 2>/dev/null || why+=("no on-demand registration reached the node")
	[ "$(c mr_odp_implicit)" -gt 0 ] 2>/dev/null || why+=("no implicit registration reached the node")
fi
if [ ${#why[@]} -gt 0 ]; then
	echo "--- run_tests.py output"
	cat "$out/run.log"
	echo "--- ovrdmad 1 (last lines)"
	tail -n 20 "$OVRDMA_TESTBED_DIR/n1/ovrdmad.log" 2>/dev/null
	printf "$name: FAIL: %s\n" "${why[@]}"
	exit 1
fi
echo "$name: PASS"
rm -rf "$out"
