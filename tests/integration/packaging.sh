#!/bin/bash
# The Debian packages, from build to purge (docs/OPERATIONS.md):
#   1. packaging/build-debs builds ovrdma, ovrdma-provider and ovrdma-tools
#      with dpkg-buildpackage -b; lintian reports no error;
#   2. dpkg -i installs them: files, conffiles, the ovrdma group, the unit
#      enabled, man pages; systemd-analyze verify accepts the unit; the
#      packaged configuration is a template the unit does not start;
#   3. node A runs the installed ovrdmad exactly as the unit's ExecStart
#      says, on /etc/ovrdma/ovrdmad.conf (edited: host, port, a tenant)
#      with the unit's runtime directory, and tells a stand-in for systemd
#      READY=1 (sd_notify); node B runs the installed ovrdmad on a file of
#      its own; memif joins them back to back;
#   4. the control socket is 0660 root:ovrdma: a member of the group may
#      open the device, not administer (ovrdmactl: EPERM); others get
#      EACCES;
#   5. with nothing but the installed files (no build tree in sight):
#      ovrdma-run ibv_devices / ibv_devinfo see ovrdma0, so does a login
#      shell without ovrdma-run (/etc/profile.d/ovrdma.sh), so does a
#      program with the environment of the systemd drop-in
#      (/usr/share/ovrdma/ovrdma-app.conf; systemd-analyze verify
#      accepts it on a service), and an ibv_rc_pingpong pair (busy
#      polling and -e) runs between A and B, A's side as an ordinary
#      member of the group (its buffers private memory: the process
#      route, docs/SERVICE.md section 4.2);
#   6. with an application connected, upgrading (dpkg -i again) and
#      removing the node service are refused and change nothing; the
#      application still finishes; without it the upgrade goes through and
#      keeps the edited configuration; ovrdma-tools' testbed works from
#      the installed files;
#   7. node A killed -9 (a stale device tree and /dev/infiniband node),
#      B stopped: remove, then purge: nothing of ovrdma is left (dpkg -L,
#      /etc/ovrdma, /run/ovrdma, the provider, the .driver file, the unit
#      and its enablement, the group, the /dev/infiniband node).
# usage: packaging.sh SOURCE_ROOT SD_NOTIFY_SINK [LIBFAKENL]
# With LIBFAKENL (tests/integration/fakenl.c: a kernel with RDMA netlink
# and a device rxe_fake), the login shell and the service drop-in are
# also tried beside that kernel: ibv_devices lists rxe_fake and
# ovrdma0, NCCL_GIN_TYPE comes as 2, SYSFS_PATH stays unset.
# Needs root; installs packages system-wide for its duration: run it under
# the DPDK lock (flock /tmp/ovrdma-dpdk.lock) on a shared machine.
set -u
src=$1 sink=$2 fakenl=${3:-}

skip() {
	echo "packaging: $*; skipped"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (dpkg -i, DPDK, /dev/infiniband)"
for p in dpkg-buildpackage dpkg-checkbuilddeps; do
	command -v $p >/dev/null || skip "$p missing (apt-get install dpkg-dev; tools/install-deps)"
done
[ -x /usr/bin/dh ] || skip "debhelper missing (apt-get install debhelper; tools/install-deps)"
command -v lintian >/dev/null || skip "lintian missing (tools/install-deps)"
command -v systemd-analyze >/dev/null || skip "systemd-analyze missing (apt-get install systemd)"
if ! missing=$(dpkg-checkbuilddeps "$src/packaging/debian/control" 2>&1); then
	skip "build dependencies missing: ${missing#*: } (tools/install-deps)"
fi
for p in ibv_devices ibv_devinfo ibv_rc_pingpong python3 setpriv; do
	command -v $p >/dev/null || skip "$p missing (apt-get install ibverbs-utils python3 util-linux)"
done
for p in ovrdma ovrdma-provider ovrdma-tools; do
	if dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q ' installed$'; then
		skip "package $p is installed on this machine (this test installs and purges its own)"
	fi
done
[ -e /etc/libibverbs.d/ovrdma.driver ] &&
	skip "/etc/libibverbs.d/ovrdma.driver exists (an installed ovrdma outside dpkg)"
[ -e /run/ovrdma ] && skip "/run/ovrdma exists (an ovrdmad on its default paths is running?)"
getent group ovrdma >/dev/null && skip "group ovrdma exists (an earlier installation?)"

unset OVRDMA_BUILD OVRDMA_SOCKET OVRDMA_SYSFS RDMAV_DRIVERS SYSFS_PATH
dir=$(mktemp -d /tmp/ovrdma-pkg.XXXXXX)
chmod 755 "$dir"
pids=()
installed=0
masked=0
# Where systemd runs, the packages' scripts would start and restart the
# unit; the nodes here are started by hand (the same command line), so
# the unit is masked for the test's duration (in /run: nothing persists).
if [ -d /run/systemd/system ]; then
	systemctl mask --runtime ovrdmad.service >/dev/null 2>&1 && masked=1
fi
# The testbed smoke run of ovrdma-tools (section 6)
export OVRDMA_TESTBED_DIR=/run/ovrdma-pkg OVRDMA_TESTBED_PREFIX=ovrk

cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	if command -v ovrdma-testbed >/dev/null; then
		ovrdma-testbed down >/dev/null 2>&1
	fi
	if [ $installed -eq 1 ]; then
		# leave nothing installed, whatever happened
		OVRDMA_FORCE=1 dpkg_do --purge ovrdma-tools ovrdma-provider ovrdma >/dev/null 2>&1
	fi
	[ $masked -eq 1 ] && systemctl unmask --runtime ovrdmad.service >/dev/null 2>&1
	rm -rf "$dir"
}
trap cleanup EXIT

fail() {
	echo "packaging: FAIL: $*"
	for n in a b; do
		[ -f "$dir/$n.log" ] && { echo "--- ovrdmad $n"; tail -20 "$dir/$n.log"; }
	done
	exit 1
}
t0=$SECONDS
step() { echo "== $* (at $((SECONDS - t0)) s)"; }

# dpkg, waiting for its lock while another apt/dpkg runs on the machine
dpkg_do() {
	local out rc
	for _ in $(seq 60); do
		out=$(dpkg "$@" 2>&1) && rc=0 || rc=$?
		if [ $rc -ne 0 ] && grep -q 'lock' <<<"$out" &&
			! grep -q 'refusing' <<<"$out"; then
			sleep 2
			continue
		fi
		break
	done
	printf '%s\n' "$out"
	return $rc
}

step "1. dpkg-buildpackage -b, lintian"
"$src/packaging/build-debs" -o "$dir/debs" --lintian >"$dir/build.out" 2>&1 ||
	{ tail -n 40 "$dir/build.out"; fail "packaging/build-debs"; }
grep -E '^(build-debs: lintian|[EW]: )' "$dir/build.out"
debs=()
for p in ovrdma ovrdma-provider ovrdma-tools; do
	f=$(ls "$dir"/debs/${p}_*.deb 2>/dev/null | head -n 1)
	[ -n "$f" ] || fail "no $p package built"
	debs+=("$f")
done
dpkg-deb -f "${debs[1]}" Depends | grep -Eq 'libibverbs1 \(>= [0-9]+\), libibverbs1 \(<< [0-9]+~\)' ||
	fail "ovrdma-provider does not depend on a libibverbs1 version range: $(dpkg-deb -f "${debs[1]}" Depends)"
echo "ovrdma-provider: Depends: $(dpkg-deb -f "${debs[1]}" Depends)"

step "2. install"
installed=1
dpkg_do -i "${debs[@]}" >"$dir/install.out" || { cat "$dir/install.out"; fail "dpkg -i"; }
for p in ovrdma ovrdma-provider ovrdma-tools; do
	dpkg-query -W -f='${Status}\n' $p | grep -q 'install ok installed' || fail "$p not installed"
done
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
# the private ABI of the libibverbs installed (IBVERBS_PRIVATE_<PABI>)
pabi=$(objdump -T /usr/lib/$multiarch/libibverbs.so.1 |
	sed -n 's/.*IBVERBS_PRIVATE_\([0-9][0-9]*\).*/\1/p' | head -n 1)
for f in /usr/sbin/ovrdmad /usr/bin/ovrdmactl /usr/bin/ovrdma-run /usr/bin/ovrdma-fabric \
	/usr/bin/ovrdma-testbed /usr/libexec/ovrdma/ovrdmad-prepare \
	/usr/lib/$multiarch/libibverbs/libovrdma-rdmav"$pabi".so \
	/usr/lib/$multiarch/ovrdma/libovrdma-preload.so \
	/etc/libibverbs.d/ovrdma.driver /etc/ovrdma/ovrdmad.conf \
	/lib/systemd/system/ovrdmad.service /usr/share/ovrdma/ovrdma-app.conf; do
	[ -e "$f" ] || fail "$f not installed"
done
[ "$(cat /etc/libibverbs.d/ovrdma.driver)" = "driver ovrdma" ] || fail "ovrdma.driver: $(cat /etc/libibverbs.d/ovrdma.driver)"
dpkg-query -W -f='${Conffiles}\n' ovrdma | grep -q ' /etc/ovrdma/ovrdmad.conf ' ||
	fail "/etc/ovrdma/ovrdmad.conf is not a conffile"
getent group ovrdma >/dev/null || fail "no group ovrdma"
[ -L /etc/systemd/system/multi-user.target.wants/ovrdmad.service ] || fail "the unit is not enabled"
[ "$(sed -n 's/^Type=//p' /lib/systemd/system/ovrdmad.service)" = notify ] || fail "the unit is not Type=notify"
for m in ovrdmad.8 ovrdmad.conf.5 ovrdmactl.1 ovrdma-run.1 ovrdma-fabric.1 ovrdma-testbed.1 \
	ovrdma-wire.1 ovrdma-ccsim.1; do
	man -w "${m%.*}" >/dev/null 2>&1 || [ -e /usr/share/man/man${m##*.}/$m.gz ] ||
		fail "no manual page $m"
done
out=$(systemd-analyze verify /lib/systemd/system/ovrdmad.service 2>&1) ||
	fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify complains: $out"
# the drop-in for services, on a service of its own
mkdir -p "$dir/units/app.service.d"
printf '[Unit]\nDescription=an RDMA program\n[Service]\nExecStart=/usr/bin/ibv_devinfo\n' \
	>"$dir/units/app.service"
ln -s /usr/share/ovrdma/ovrdma-app.conf "$dir/units/app.service.d/ovrdma.conf"
out=$(systemd-analyze verify "$dir/units/app.service" 2>&1 | grep -v 'ovrdmad.service') ||
	true
[ -z "$out" ] || fail "systemd-analyze verify, the drop-in: $out"
echo "systemd-analyze verify ovrdmad.service: OK"
if [ -d /run/systemd/system ]; then
	echo "(systemd runs here: the unit may have been started; it stays inactive unconfigured)"
fi
# the packaged file is a template: the unit's condition keeps it inactive
unit=/lib/systemd/system/ovrdmad.service
cond=$(sed -n 's/^ExecCondition=//p' $unit)
$cond 2>"$dir/cond.err" && fail "ExecCondition passes on the packaged template"
grep -q "sets no 'host ='" "$dir/cond.err" || fail "ExecCondition: $(cat "$dir/cond.err")"
/usr/sbin/ovrdmad -- --check 2>&1 | grep -q 'no underlay address' ||
	fail "ovrdmad --check on the template does not say what is missing"
/usr/libexec/ovrdma/ovrdmad-prepare hugepages 0 || fail "ovrdmad-prepare hugepages 0"
/usr/libexec/ovrdma/ovrdmad-prepare hugepages lots 2>/dev/null && fail "ovrdmad-prepare hugepages lots"
echo "installed: $(dpkg -L ovrdma ovrdma-provider ovrdma-tools | grep -c .) paths; template not started"

step "3. nodes A (the packaged configuration) and B, from the installed files"
# A: /etc/ovrdma/ovrdmad.conf, edited as an operator would
python3 - "$dir" <<'PY' || fail "editing /etc/ovrdma/ovrdmad.conf"
import re, sys
d = sys.argv[1]
p = "/etc/ovrdma/ovrdmad.conf"
s = open(p).read()
s = s.replace(";host = 10.0.0.1", "host = 10.0.0.1", 1)
s = s.replace(";underlay_mtu = 1500", "underlay_mtu = 9000", 1)
s = s.replace(";spin_us = 50", "spin_us = 20", 1)
s = re.sub(r"(?m)^\[limits\]", "eal = --no-huge -m 256 --no-pci --no-telemetry --file-prefix=ovrkpa\n"
           f"eal = --vdev=net_memif0,role=server,socket={d}/memif.sock,bsize=10240\n\n[limits]", s, count=1)
s += """
[tenant]
vni = 100
vip = 192.168.1.1 local ovrdma0
vip = 192.168.1.2 host 10.0.0.2 mac 02:00:00:00:00:02
sg = 192.168.1.0/24
"""
open(p, "w").write(s)
PY
$cond || fail "ExecCondition fails on the edited configuration"
/usr/sbin/ovrdmad -- --check >/dev/null || fail "ovrdmad --check on the edited configuration"
cat >"$dir/b.conf" <<EOC
[service]
socket = $dir/b.sock
sysfs = $dir/sysfs-b
host = 10.0.0.2
underlay_mtu = 9000
spin_us = 20
eal = --no-huge -m 256 --no-pci --no-telemetry --file-prefix=ovrkpb --vdev=net_memif0,role=client,socket=$dir/memif.sock,bsize=10240
[tenant]
vni = 100
vip = 192.168.1.2 local ovrdma0
vip = 192.168.1.1 host 10.0.0.1 mac 02:00:00:00:00:01
sg = 192.168.1.0/24
EOC
# A as the unit runs it: RuntimeDirectory=ovrdma (0755), LimitMEMLOCK,
# ExecStart, and $NOTIFY_SOCKET for Type=notify
start_cmd=$(sed -n 's/^ExecStart=//p' $unit)
[ "$(sed -n 's/^RuntimeDirectory=//p' $unit)" = ovrdma ] || fail "RuntimeDirectory is not ovrdma"
mkdir -m 0755 /run/ovrdma
python3 "$sink" "$dir/notify.sock" "$dir/notify.log" &
pids+=($!)
for _ in $(seq 50); do [ -S "$dir/notify.sock" ] && break; sleep 0.1; done
(
	# LimitMEMLOCK=infinity, where this container lets root raise it
	ulimit -l unlimited 2>/dev/null ||
		echo "(memlock limit stays $(ulimit -l) KB: no CAP_SYS_RESOURCE here)" >&2
	NOTIFY_SOCKET=$dir/notify.sock exec $start_cmd
) >"$dir/a.log" 2>&1 &
pid_a=$!
pids+=($pid_a)
/usr/sbin/ovrdmad -- -c "$dir/b.conf" >"$dir/b.log" 2>&1 &
pid_b=$!
pids+=($pid_b)
for _ in $(seq 300); do
	grep -q '^READY=1$' "$dir/notify.log" 2>/dev/null && break
	kill -0 $pid_a 2>/dev/null || fail "node A exited"
	sleep 0.1
done
grep -q '^READY=1$' "$dir/notify.log" || fail "node A sent no READY=1"
echo "node A (pid $pid_a) told systemd: $(grep -m1 '^STATUS=' "$dir/notify.log")"
for _ in $(seq 100); do
	[ -S "$dir/b.sock" ] && ovrdmactl -s "$dir/b.sock" show devices >/dev/null 2>&1 && break
	sleep 0.1
done
counter() { # socket name
	ovrdmactl -s "$1" show counters 2>/dev/null | awk -v k="$2" '$1 == k {print $2}'
}
for _ in $(seq 150); do
	[ "$(counter /run/ovrdma/ovrdmad.sock port_link_up)" = 1 ] &&
		[ "$(counter "$dir/b.sock" port_link_up)" = 1 ] && break
	sleep 0.1
done
[ "$(counter /run/ovrdma/ovrdmad.sock port_link_up)" = 1 ] || fail "node A: link down"
[ "$(counter "$dir/b.sock" port_link_up)" = 1 ] || fail "node B: link down"
for _ in $(seq 60); do # STATUS= comes every 5 s when it changed
	grep -q '^STATUS=serving 1 devices, 0 contexts, 0 QPs; port up$' "$dir/notify.log" && break
	sleep 0.2
done
grep -q '^STATUS=serving 1 devices' "$dir/notify.log" || fail "no STATUS= with the devices"

step "4. the control socket's group"
perm=$(stat -c '%a %U %G' /run/ovrdma/ovrdmad.sock)
[ "$perm" = "660 root ovrdma" ] || fail "socket is $perm, not 660 root ovrdma"
as_member() { setpriv --reuid=nobody --regid=nogroup --groups="$(getent group ovrdma | cut -d: -f3)" "$@"; }
as_other() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
out=$(as_member ovrdma-run ibv_devinfo -d ovrdma0 2>&1) || fail "ibv_devinfo as a member of ovrdma: $out"
grep -q PORT_ACTIVE <<<"$out" || fail "ibv_devinfo as a member of ovrdma: $out"
out=$(as_member ovrdmactl tenant add 300 2>&1) && fail "a member of ovrdma may add a tenant"
grep -q 'Operation not permitted' <<<"$out" || fail "tenant add as a member: $out"
out=$(as_other ovrdmactl show devices 2>&1) && fail "a non-member reached the socket"
grep -q 'Permission denied' <<<"$out" || fail "non-member: $out"
out=$(as_other ovrdma-run ibv_devinfo -d ovrdma0 2>&1) && fail "ibv_devinfo as a non-member succeeded"
grep -q "cannot reach ovrdmad at /run/ovrdma/ovrdmad.sock: Permission denied" <<<"$out" ||
	fail "ibv_devinfo as a non-member does not say why: $out"
echo "socket 0660 root:ovrdma: members use the devices, ovrdmactl needs root; others refused"

step "5. ibv_devinfo and ibv_rc_pingpong with the installed files only"
env_out=$(ovrdma-run env)
grep -q '^RDMAV_DRIVERS=' <<<"$env_out" &&
	fail "ovrdma-run set RDMAV_DRIVERS (not the installed .driver): $(grep RDMAV_DRIVERS <<<"$env_out")"
grep -qx "LD_PRELOAD=/usr/lib/$multiarch/ovrdma/libovrdma-preload.so" <<<"$env_out" ||
	fail "ovrdma-run: $(grep LD_PRELOAD <<<"$env_out")"
grep -qx 'SYSFS_PATH=/run/ovrdma/sysfs' <<<"$env_out" || fail "ovrdma-run: $(grep SYSFS_PATH <<<"$env_out")"
grep -qx 'OVRDMA_SYSFS=/run/ovrdma/sysfs' <<<"$env_out" || fail "ovrdma-run: $(grep OVRDMA_SYSFS <<<"$env_out")"
out=$(ovrdma-run ibv_devices 2>&1) || fail "ibv_devices: $out"
grep -Eq '^\s*ovrdma0\s+02000064c0a80101$' <<<"$out" || fail "ibv_devices: $out"
out=$(ovrdma-run ibv_devinfo -d ovrdma0 2>&1) || fail "ibv_devinfo: $out"
for want in 'hca_id:\s+ovrdma0' 'state:\s+PORT_ACTIVE' 'link_layer:\s+Ethernet' 'active_mtu:\s+4096'; do
	grep -Eq "$want" <<<"$out" || fail "ibv_devinfo: no line like '$want': $out"
done
echo "ibv_devinfo: ovrdma0, PORT_ACTIVE, Ethernet, MTU 4096"
# a login shell of a member, without ovrdma-run: /etc/profile.d/ovrdma.sh
login() { as_member env -i HOME=/ PATH=/usr/bin:/bin "$@"; }
out=$(login bash -l -c 'ibv_devinfo -d ovrdma0' 2>&1) || fail "ibv_devinfo in a login shell: $out"
grep -q PORT_ACTIVE <<<"$out" || fail "ibv_devinfo in a login shell: $out"
out=$(login OVRDMA_PROFILE=0 bash -l -c 'echo "${SYSFS_PATH:-unset}"' 2>&1)
[ "$out" = unset ] || fail "OVRDMA_PROFILE=0: the profile still set SYSFS_PATH=$out"
echo "login shell (profile.d/ovrdma.sh): ibv_devinfo sees ovrdma0; OVRDMA_PROFILE=0 turns it off"
# a service with the drop-in: its environment and nothing else
dropin_env=$(sed -n 's/^Environment=//p' /usr/share/ovrdma/ovrdma-app.conf)
[ "$(wc -l <<<"$dropin_env")" = 3 ] || fail "the drop-in's environment: $dropin_env"
# shellcheck disable=SC2086 # one VAR=value per word, as systemd splits them
out=$(as_member env -i PATH=/usr/bin:/bin $dropin_env ibv_devinfo -d ovrdma0 2>&1) ||
	fail "ibv_devinfo with the drop-in's environment: $out"
grep -q PORT_ACTIVE <<<"$out" || fail "ibv_devinfo with the drop-in's environment: $out"
echo "a service with /usr/share/ovrdma/ovrdma-app.conf: ibv_devinfo sees ovrdma0"
# beside a kernel with RDMA (the stand-in after the interposer, as the
# profile and the drop-in put it): both devices, the kernel's files
# under /sys (SYSFS_PATH unset), NCCL's GIN type set for the process
if [ -n "$fakenl" ]; then
	install -m 755 "$fakenl" "$dir/libfakenl.so"
	kroot=$dir/ksys
	mkdir -p "$kroot/class/infiniband/rxe_fake/ports/1" "$kroot/dev/infiniband"
	echo "rxe_fake of the stand-in kernel" >"$kroot/class/infiniband/rxe_fake/node_desc"
	: >"$kroot/dev/infiniband/uverbs_fake3"
	chmod -R a+rX "$kroot"
	# shellcheck disable=SC2016 # expanded by the login shell
	probe='ibv_devices; echo "SYSFS_PATH=${SYSFS_PATH:-unset}"; env | grep "^NCCL_GIN_TYPE=" || echo NCCL_GIN_TYPE=unset'
	beside() { # how out
		grep -Eq '^\s*rxe_fake\s+0011223344550003$' <<<"$2" &&
			grep -Eq '^\s*ovrdma0\s+02000064c0a80101$' <<<"$2" &&
			grep -qx 'SYSFS_PATH=unset' <<<"$2" &&
			grep -qx 'NCCL_GIN_TYPE=2' <<<"$2" ||
			fail "$1 beside a kernel with RDMA: $2"
	}
	out=$(login FAKENL_ROOT="$kroot" LD_PRELOAD="$dir/libfakenl.so" \
		bash -l -c "$probe" 2>&1)
	beside "a login shell" "$out"
	# shellcheck disable=SC2086 # one VAR=value per word, as systemd splits them
	out=$(as_member env -i PATH=/usr/bin:/bin FAKENL_ROOT="$kroot" \
		$(sed "s|^LD_PRELOAD=.*|&:$dir/libfakenl.so|" <<<"$dropin_env") \
		sh -c "$probe" 2>&1)
	beside "a service with the drop-in" "$out"
	echo "beside a kernel with RDMA (stand-in): the login shell and a service list rxe_fake and ovrdma0, NCCL_GIN_TYPE=2"
fi
port=18700
pingpong() { # args...: A's side as a member of ovrdma, B's as root
	port=$((port + 1))
	as_member ovrdma-run timeout 60 ibv_rc_pingpong -d ovrdma0 -g 0 -p $port "$@" \
		>"$dir/srv.log" 2>&1 &
	local sp=$! rc_c=1
	sleep 0.3
	for _ in 1 2 3 4 5; do
		ovrdma-run --sysfs "$dir/sysfs-b" timeout 60 ibv_rc_pingpong -d ovrdma0 -g 0 \
			-p $port "$@" 127.0.0.1 >"$dir/cli.log" 2>&1 && { rc_c=0; break; }
		grep -q "Couldn't connect" "$dir/cli.log" || break
		sleep 0.3
	done
	wait $sp || { cat "$dir/srv.log" "$dir/cli.log"; fail "ibv_rc_pingpong $* (server)"; }
	[ $rc_c -eq 0 ] || { cat "$dir/srv.log" "$dir/cli.log"; fail "ibv_rc_pingpong $* (client)"; }
	grep -Eq '^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$' "$dir/cli.log" ||
		fail "ibv_rc_pingpong $*: no result line"
	echo "ibv_rc_pingpong $* (A's side as a member of ovrdma): $(grep Mbit "$dir/cli.log")"
}
pingpong -s 4096 -n 200
pingpong -s 65536 -n 100 -e

step "6. upgrade and removal under a running application, then without"
port=$((port + 1))
ovrdma-run timeout 120 ibv_rc_pingpong -d ovrdma0 -g 0 -p $port -s 4096 -n 50 >"$dir/srv.log" 2>&1 &
sp=$!
for _ in $(seq 100); do
	ovrdmactl show contexts | grep -q ibv_rc_pingpong && break
	sleep 0.1
done
ovrdmactl show contexts | grep -q ibv_rc_pingpong || fail "the waiting server has no context"
out=$(dpkg_do -i "${debs[0]}") && fail "the upgrade went through with an application connected"
grep -q 'refusing the upgrade' <<<"$out" || fail "upgrade refusal: $out"
echo "dpkg -i: $(grep -m1 'refusing' <<<"$out")"
# --force-depends: ovrdma-tools depends on it; what is tested is ovrdma's prerm
out=$(dpkg_do --force-depends -r ovrdma) && fail "removal went through with an application connected"
grep -q 'refusing the removal' <<<"$out" || fail "removal refusal: $out"
dpkg-query -W -f='${Status}\n' ovrdma | grep -q 'install ok installed' || fail "ovrdma is no longer installed and configured"
kill -0 $pid_a 2>/dev/null || fail "node A died in the refused upgrade"
grep -q '^host = 10.0.0.1' /etc/ovrdma/ovrdmad.conf || fail "the configuration changed"
ovrdma-run --sysfs "$dir/sysfs-b" timeout 60 ibv_rc_pingpong -d ovrdma0 -g 0 -p $port -s 4096 \
	-n 50 127.0.0.1 >"$dir/cli.log" 2>&1 || { cat "$dir/cli.log"; fail "the client of the waiting server"; }
wait $sp || { cat "$dir/srv.log"; fail "the application connected during the refused upgrade failed"; }
echo "the application connected during both refusals finished: $(grep Mbit "$dir/srv.log")"
for _ in $(seq 50); do
	[ -z "$(ovrdmactl show contexts | awk 'NR > 1 && $4 != "ovrdmactl"')" ] && break
	sleep 0.1
done
dpkg_do -i "${debs[@]}" >"$dir/upgrade.out" || { cat "$dir/upgrade.out"; fail "the upgrade without applications"; }
grep -q '^host = 10.0.0.1' /etc/ovrdma/ovrdmad.conf || fail "the upgrade replaced the edited configuration"
echo "upgrade without applications: done, edited configuration kept"
ovrdma-wire selftest >/dev/null || fail "ovrdma-wire selftest"
ovrdma-testbed up 2 --no-hugepages >"$dir/testbed.log" 2>&1 || { tail -20 "$dir/testbed.log"; fail "ovrdma-testbed up"; }
out=$(ovrdma-testbed run 1 ibv_devinfo -d ovrdma0 2>&1) || fail "testbed: ibv_devinfo: $out"
grep -q 'PORT_ACTIVE' <<<"$out" || fail "testbed: $out"
exes=$(for ns in $OVRDMA_TESTBED_PREFIX-hub $OVRDMA_TESTBED_PREFIX-n1 $OVRDMA_TESTBED_PREFIX-n2; do
	for p in $(ip netns pids $ns 2>/dev/null); do
		echo "$ns $(readlink "/proc/$p/exe" 2>/dev/null)"
	done
done | sort -u)
for want in "hub /usr/bin/ovrdma-fabric" "n1 /usr/sbin/ovrdmad" "n2 /usr/sbin/ovrdmad"; do
	grep -q -- "-$want\$" <<<"$exes" || fail "testbed: no '$want' (it runs: $exes)"
done
ovrdma-testbed down >/dev/null 2>&1 || fail "ovrdma-testbed down"
echo "ovrdma-tools: ovrdma-wire selftest, ovrdma-testbed up 2 / run ibv_devinfo / down: OK"

step "7. remove and purge"
kill -9 $pid_a
wait $pid_a 2>/dev/null
stale=$(ls /dev/infiniband/ 2>/dev/null | grep -E "^uverbs-$(printf '%s' /run/ovrdma/sysfs/ovrdma0 | python3 -c '
import sys
h = 2166136261
for b in sys.stdin.buffer.read():
    h = ((h ^ b) * 16777619) & 0xffffffff
print("%08x" % h)')-ovrdma0$")
[ -n "$stale" ] || fail "kill -9 left no /dev/infiniband node (expected a stale one)"
[ -d /run/ovrdma/sysfs/class/infiniband/ovrdma0 ] || fail "kill -9 left no device tree"
kill -TERM $pid_b
wait $pid_b || fail "node B did not stop cleanly"
dpkg_do -r ovrdma-tools ovrdma-provider ovrdma >"$dir/remove.out" || { cat "$dir/remove.out"; fail "dpkg -r"; }
[ -e /usr/sbin/ovrdmad ] && fail "ovrdmad still there after remove"
[ -e /etc/ovrdma/ovrdmad.conf ] || fail "remove (not purge) took the configuration"
dpkg_do -P ovrdma-tools ovrdma-provider ovrdma >"$dir/purge.out" || { cat "$dir/purge.out"; fail "dpkg -P"; }
installed=0
for p in ovrdma ovrdma-provider ovrdma-tools; do
	dpkg -L $p >/dev/null 2>&1 && fail "dpkg -L $p still lists files"
done
left=$(ls -d /etc/ovrdma /run/ovrdma /usr/lib/$multiarch/libibverbs/libovrdma* \
	/usr/lib/$multiarch/ovrdma /etc/libibverbs.d/ovrdma.driver /etc/profile.d/ovrdma.sh /usr/libexec/ovrdma \
	/usr/share/ovrdma \
	/usr/sbin/ovrdmad /usr/bin/ovrdmactl /usr/bin/ovrdma-* /lib/systemd/system/ovrdmad.service \
	/etc/systemd/system/multi-user.target.wants/ovrdmad.service /usr/share/doc/ovrdma* \
	"/dev/infiniband/$stale" 2>/dev/null)
[ -z "$left" ] || fail "left after purge: $left"
getent group ovrdma >/dev/null && fail "group ovrdma left after purge"
echo "purged: no file, directory, unit, group or device node of ovrdma left"
echo "packaging: OK ($((SECONDS - t0)) s)"
