#!/bin/bash
# SPDX-License-Identifier: MIT
# rdma-core's own tests against an ovrdma device (docs/PROVIDER.md,
# "rdma-core's tests"): Debian's python3-pyverbs ships them gzipped under
# /usr/share/doc/rdma-core/tests; they are unpacked into a scratch
# directory and the MODULEs run unmodified with Debian's /usr/bin/python3
# in testbed node 1's environment (its namespace, through ovrdma-run), as
#   run_tests.py --dev ovrdma0 --gid 0 -v MODULE...
# The tests put client and server in one process on one device (loopback
# through ovrdmad). Each test's verdict, the counts per module and the
# expected skips met are printed. Fails when a test fails or errors, or
# is skipped for a reason the table below does not list for it; and,
# when test_odp runs, when the node saw no on-demand or no implicit
# registration. The huge-page tests need two free 2 MB pages: more are
# reserved for the run and given back after (skipped, 77, when the kernel
# has none to give).
#
# NAME is the meson test: rdma_core_odp (test_odp alone) or compat (every
# module that does not need vendor hardware, tests/integration/meson.build
# lists them).
#
# usage: rdma-core-tests.sh TESTBED NAME MODULE...
#   exit 77 without root, python3-pyverbs or its tests.
set -u
tb=$1 name=$2
shift 2
modules=("$@")
src=/usr/share/doc/rdma-core/tests
py=/usr/bin/python3

# The skips a run may meet: "MODULE.TEST | MESSAGE | WHY", MODULE.TEST and
# MESSAGE fnmatch patterns (the test's name without its class; the skip
# message as unittest prints it), WHY what docs/PROVIDER.md says. A test
# listed may also pass (the run names those: a line may go, unless the
# test picks what it creates at random, as test_qp's _ex tests do); a
# skip not listed fails the run.
expected='
test_shared_pd.* | Importing a device is not supported | ibv_import_device (another process'"'"'s context by its command fd): ovrdma'"'"'s contexts are control connections, not kernel objects to share
test_tag_matching.* | Tag matching is not supported | tag matching (tm_caps 0): a NIC offload of MPI'"'"'s tag matching into its own SRQ lists; ovrdma'"'"'s SRQs are plain ones (the extended CQ takes IBV_WC_EX_WITH_TM_INFO, never present)
test_*.test_*xrc* | Create XRCD is not supported | XRC refused (docs/PROVIDER.md section 8): shared domains, receive QPs outliving their creator and SRQ numbers on the wire, for no client ovrdma serves
test_qp.test_create_raw_qp*_attr | Create Raw Packet QP with* attrs is not supported | raw packet QPs: frames of the tenant network are the overlay'"'"'s, not an application'"'"'s
test_qp.test_query_raw_qp | Create Raw Packet QP with* attrs is not supported | raw packet QPs: frames of the tenant network are the overlay'"'"'s, not an application'"'"'s
test_flow.* | Create QP type 8 is not supported | raw packet QPs (flow steering needs them)
test_rss_traffic.* | Create QP type 8 is not supported | raw packet QPs (RSS needs them)
test_device.test_*dm* | Device memory is not supported | no device memory: a software device has no memory of its own to offer
test_mr.test_*dm* | Device memory is not supported | no device memory
test_mr.test_dmabuf_* | Allocating dmabuf is not supported by /dev/dri/renderD* | dma-bufs from a DRM render node: none on the test machine (ovrdma registers CUDA dma-bufs, docs/GPU.md)
test_mr.test_dmabuf_* | Device /dev/dri/renderD* is not present | dma-bufs from a DRM render node: none on the test machine
test_mr.test_dmabuf_* | Reg dma-buf MR is not supported by the RDMA driver | dma-bufs of a DRM render node: ovrdma registers CUDA dma-bufs only (docs/GPU.md)
test_device.test_query_gid_ex_bad_flow | All gid indices populated, cannot check bad flow | one GID (::ffff:vIP), always populated
'

skip() {
	echo "$name: $*; skipped"
	exit 77
}
[ ${#modules[@]} -gt 0 ] || {
	echo "usage: rdma-core-tests.sh TESTBED NAME MODULE..." >&2
	exit 2
}
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, DPDK)"
[ -x $py ] && $py -c 'import pyverbs.device' 2>/dev/null ||
	skip "no pyverbs for $py (apt-get install python3-pyverbs: tools/install-deps)"
for m in "${modules[@]}"; do
	[ -e "$src/$m.py" ] || [ -e "$src/$m.py.gz" ] ||
		skip "no $src/$m.py(.gz) (python3-pyverbs ships rdma-core's tests)"
done

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
(cd "$out/rdma-core" && timeout -k 5 600 "$tb" run 1 $py run_tests.py \
	--dev ovrdma0 --gid 0 -v "${modules[@]}") >"$out/run.log" 2>&1
rc=$?
"$tb" ctl 1 show counters >"$out/counters.log" 2>&1
echo "$name: rdma-core's ${modules[*]} against ovrdma0 (testbed node 1), $((SECONDS - t0)) s"

# The verdicts against the table; prints them, the counts, and last a
# line "why: ..." for each reason to fail.
printf '%s' "$expected" >"$out/expected"
$py - "$out/run.log" "$out/expected" "$rc" "$name" "${modules[@]}" \
	>"$out/verdicts" <<'EOF'
import collections, fnmatch, re, sys

log, table, rc, name, modules = (sys.argv[1], sys.argv[2], int(sys.argv[3]),
                                 sys.argv[4], sys.argv[5:])
text = open(log).read()
rows = []
for line in open(table):
    if line.strip():
        t, m, why = (f.strip() for f in line.split('|', 2))
        rows.append((t, m, why))

# "test_x (tests.MOD.Class.test_x)", maybe a docstring line, then
# " ... VERDICT"; a test's own output may come between (test_fork).
head = re.compile(r'^(test_\w+) \(tests\.(\w+)\.\w+\.\w+\)(.*)$')
verdict = re.compile(r"^(ok|FAIL|ERROR|expected failure|unexpected success|"
                     r"skipped (['\"])(.*)\2)$")
results = []  # (module, test, verdict, message)
lines = text.splitlines()
i = 0
while i < len(lines):
    h = head.match(lines[i])
    if not h:
        i += 1
        continue
    test, mod, rest = h.groups()
    found, j = None, i
    while j < len(lines) and j < i + 50:
        tail = rest if j == i else lines[j]
        if j > i and head.match(lines[j]):
            break
        k = tail.rfind(' ... ')
        cands = [tail[k + 5:]] if k >= 0 else []
        cands.append(tail.strip())
        for c in cands:
            v = verdict.match(c)
            if v:
                found = v
                break
        if found:
            break
        j += 1
    if found:
        word = found.group(1)
        kind = 'skip' if word.startswith('skipped') else word
        results.append((mod, test, kind, found.group(3) or ''))
    i = j + 1 if found else i + 1

why = []
count = collections.OrderedDict((m, collections.Counter()) for m in modules)
met = collections.Counter()
passing_listed = []
for mod, test, kind, msg in results:
    key = f'{mod}.{test}'
    count.setdefault(mod, collections.Counter())[kind] += 1
    listed = [r for r in rows if fnmatch.fnmatchcase(key, r[0])]
    if kind == 'skip':
        hit = [r for r in listed if fnmatch.fnmatchcase(msg, r[1])]
        if hit:
            met[hit[0][2]] += 1
            print(f'  {key}: skipped, expected: {msg}')
        else:
            why.append(f'{key} skipped: {msg}')
            print(f'  {key}: skipped, NOT EXPECTED: {msg}')
    elif kind == 'ok':
        print(f'  {key}: ok')
        if listed:
            passing_listed.append(key)
    else:
        why.append(f'{key}: {kind}')
        print(f'  {key}: {kind}')

ran = re.findall(r'^Ran (\d+) tests?', text, re.M)
total = sum(sum(c.values()) for c in count.values())
print(f'{name}: per module (passed / failed / errors / skipped):')
for mod, c in count.items():
    print(f'  {mod:24} {c["ok"]:4} {c["FAIL"]:3} {c["ERROR"]:3} '
          f'{c["skip"]:4}')
agg = collections.Counter()
for c in count.values():
    agg.update(c)
print(f'{name}: {total} tests: {agg["ok"]} passed, {agg["FAIL"]} failed, '
      f'{agg["ERROR"]} errors, {agg["skip"]} skipped, '
      f'{sum(met.values())} of them expected:')
for reason, n in sorted(met.items(), key=lambda x: -x[1]):
    print(f'  {n:3}  {reason}')
if passing_listed:
    print(f'{name}: passed although listed as expected skips (some pick '
          f'what they create at random): {" ".join(passing_listed)}')
if not ran or int(ran[-1]) != total:
    why.append(f'unittest ran {ran[-1] if ran else "no"} tests, '
               f'{total} verdicts read')
for m in modules:
    if not sum(count[m].values()):
        why.append(f'{m}: no test ran')
if rc != 0 and not why:
    why.append(f'run_tests.py exited {rc}')
for w in why:
    print(f'why: {w}')
EOF
prc=$?
grep -v '^why: ' "$out/verdicts"
mapfile -t why < <(sed -n 's/^why: //p' "$out/verdicts")
[ $prc -eq 0 ] || why+=("the verdict reader failed ($prc)")
if [[ " ${modules[*]} " == *" test_odp "* ]]; then
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
