#!/bin/bash
# Discovery beside a kernel's RDMA stack (docs/PROVIDER.md, "Discovery
# beside the kernel's RDMA stack"), with libfakenl.so standing in for a
# kernel that answers RDMA netlink (this machine's kernel has no RDMA):
# two ovrdmad nodes A and B joined by memif, programs run through
# ovrdma-run with the stand-in preloaded after the interposer.
#   0. the stand-in alone (a host without ovrdma): libibverbs 44 lists
#      its device rxe_fake, claimed by rdma-core's rxe provider;
#   1. with a fake kernel device: ibv_devices, ibv_devinfo -l list
#      rxe_fake and ovrdma7; discovery_check shows both found through
#      netlink (rxe_fake with the kernel's index and its files under
#      /sys, ovrdma7 with an index of ovrdma's range and the tree's
#      files under /sys, SYSFS_PATH dropped); ibv_devinfo -v -d ovrdma7
#      as on a host without RDMA; the stand-in answered every request
#      (rdma_cm's included), the GET_CHARDEV of ovrdma7 with -EINVAL;
#      a dump read by hand with 256-byte buffers and with MSG_PEEK
#      comes in whole messages; iproute2's rdma lists both; the login
#      shells' profile script leaves SYSFS_PATH unset (and sets it
#      where the kernel has no device);
#   2. ibv_rc_pingpong -g 0 between A and B (polling and -e) over
#      devices found that way;
#   3. a kernel with RDMA netlink and no device (the GPU server without
#      RDMA hardware): ovrdma7 through netlink, its files where
#      SYSFS_PATH says; librdmacm's rdma_get_devices opens it; rping -V
#      connects A and B through rdma_cm, the kernel having answered
#      librdmacm's GET_CHARDEV "rdma_cm" with a char device number of
#      its own (the interposer's answer replaces it);
#   4. no ovrdma node running: only rxe_fake, nothing fails;
#   5. the device's netdev: a node in a network namespace whose (veth)
#      interface holds its vIP reports it (gid_attrs/ndevs/0,
#      device/net/IF/{ifindex,address}); ls and ibv_query_gid_ex see
#      it there, with and without a kernel's devices; a program in
#      another namespace gets ndev_ifindex 0; the vIP moved to another
#      interface, or removed, is followed.
# usage: discovery.sh OVRDMAD OVRDMACTL OVRDMA_RUN BUILD_DIR LIBFAKENL CHECK
set -u
ovrdmad=$1 ctl=$2 run=$3 build=$4 fakenl=$5 check=$6

if [ "$(id -u)" -ne 0 ]; then
	echo "discovery: needs root (DPDK, memif, /dev/infiniband); skipped"
	exit 77
fi
for p in ibv_devices ibv_devinfo ibv_rc_pingpong; do
	if ! command -v $p >/dev/null; then
		echo "discovery: $p missing (apt-get install ibverbs-utils); skipped"
		exit 77
	fi
done
if [ ! -f /etc/libibverbs.d/rxe.driver ]; then
	echo "discovery: rdma-core's rxe provider missing (apt-get install ibverbs-providers); skipped"
	exit 77
fi
export OVRDMA_BUILD=$build
unset SYSFS_PATH OVRDMA_SYSFS OVRDMA_SOCKET
dir=$(mktemp -d /tmp/ovrdma-disc.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -f /dev/infiniband/uverbs-*-ovrdma7 2>/dev/null
	ip netns del "ovrdisc$$" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

# The fake kernel's files: rxe_fake's sysfs directory and its
# /dev/infiniband node (a plain file: stat() is all libibverbs asks of
# it before ibv_open_device, which cannot work without a kernel).
kroot=$dir/ksys
mkdir -p "$kroot/class/infiniband/rxe_fake/ports/1" "$kroot/dev/infiniband"
echo "rxe_fake of the stand-in kernel" >"$kroot/class/infiniband/rxe_fake/node_desc"
: >"$kroot/dev/infiniband/uverbs_fake3"
export FAKENL_ROOT=$kroot FAKENL_LOG=$dir/nl.log

conf() { # name host role my_vip peer_vip
	cat >"$dir/$1.conf" <<EOC
[service]
socket = $dir/$1.sock
sysfs = $dir/sysfs-$1
host = $2
underlay_mtu = 9000
spin_us = 20
eal = --no-huge -m 256 --no-pci --no-telemetry --file-prefix=ovrdisc$$$1 --vdev=net_memif0,role=$3,socket=$dir/memif.sock,bsize=10240
[tenant]
vni = 100
vip = 192.168.1.$4 local ovrdma7
vip = 192.168.1.$5 host 10.0.0.$5 mac 02:00:00:00:00:0$5
sg = 192.168.1.0/24
EOC
}
conf a 10.0.0.1 server 1 2
conf b 10.0.0.2 client 2 1

start() { # name [network namespace]
	${2:+ip netns exec "$2"} "$ovrdmad" -- -c "$dir/$1.conf" >>"$dir/$1.log" 2>&1 &
	pids+=($!)
	eval "pid_$1=$!"
	for _ in $(seq 100); do
		[ -S "$dir/$1.sock" ] && "$ctl" -s "$dir/$1.sock" show devices \
			>/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "discovery: ovrdmad $1 did not start:"
	cat "$dir/$1.log"
	exit 1
}
fail() {
	echo "discovery: FAIL: $*"
	for n in a b c; do
		[ -f "$dir/$n.log" ] && { echo "--- $n.log"; tail -20 "$dir/$n.log"; }
	done
	[ -f "$dir/nl.log" ] && { echo "--- requests the stand-in saw"; tail -20 "$dir/nl.log"; }
	exit 1
}
counter() { # node name
	"$ctl" -s "$dir/$1.sock" show counters | awk -v k="$2" '$1 == k {print $2}'
}
# Node $1's applications on a host whose kernel has RDMA: the stand-in
# below the interposer (ovrdma-run puts its interposer first).
on() { # node program args...
	local n=$1
	shift
	LD_PRELOAD=$fakenl "$run" --sysfs "$dir/sysfs-$n" "$@"
}

echo "== 0. the stand-in kernel alone"
out=$(LD_PRELOAD=$fakenl ibv_devices 2>&1) || fail "ibv_devices: $out"
grep -Eq '^\s*rxe_fake\s+0011223344550003$' <<<"$out" || fail "the stand-in's device is not listed: $out"
grep -q ovrdma <<<"$out" && fail "an ovrdma device without the interposer: $out"
echo "libibverbs lists the stand-in's rxe_fake (rxe provider, netlink)"

start a
start b
for _ in $(seq 100); do
	[ "$(counter a port_link_up)" = 1 ] && [ "$(counter b port_link_up)" = 1 ] && break
	sleep 0.1
done

echo "== 1. a kernel device and ovrdma7 side by side"
: >"$dir/nl.log"
out=$(on a ibv_devices 2>&1) || fail "ibv_devices: $out"
echo "$out"
grep -Eq '^\s*rxe_fake\s+0011223344550003$' <<<"$out" || fail "ibv_devices does not list rxe_fake"
grep -Eq '^\s*ovrdma7\s+02000064c0a80101$' <<<"$out" || fail "ibv_devices does not list ovrdma7"
out=$(on a ibv_devinfo -l 2>&1) || fail "ibv_devinfo -l: $out"
grep -Eq '^\s*rxe_fake$' <<<"$out" && grep -Eq '^\s*ovrdma7$' <<<"$out" ||
	fail "ibv_devinfo -l: $out"
out=$(on a "$check" list 2>&1) || fail "discovery_check list: $out"
echo "$out"
grep -qx 'dev rxe_fake index 3 guid 0011223344550003 path /sys/class/infiniband/rxe_fake' <<<"$out" ||
	fail "rxe_fake not as the kernel has it"
line=$(grep '^dev ovrdma7 ' <<<"$out") || fail "no ovrdma7"
idx=$(awk '{print $4}' <<<"$line")
[ "$idx" -ge $((0x7f000000)) ] && [ "$idx" -lt $((0x7fffffff)) ] ||
	fail "ovrdma7's index $idx is not of ovrdma's range (found by the sysfs scan?)"
grep -q 'guid 02000064c0a80101 path /sys/class/infiniband/ovrdma7$' <<<"$line" ||
	fail "ovrdma7: $line"
grep -qx 'SYSFS_PATH unset' <<<"$out" || fail "SYSFS_PATH not dropped beside kernel devices"
out=$(on a "$check" read ovrdma7 node_guid) || fail "ovrdma7's node_guid under /sys: $out"
[ "$out" = "0200:0064:c0a8:0101" ] || fail "ovrdma7's node_guid under /sys: $out"
out=$(on a "$check" read rxe_fake node_desc) || fail "rxe_fake's node_desc: $out"
[ "$out" = "rxe_fake of the stand-in kernel" ] || fail "rxe_fake's node_desc is not the kernel's: $out"
echo "rxe_fake: the kernel's index and files; ovrdma7: index $idx, the tree's files under /sys"
# NCCL out of the box (docs/GPU.md): no device path without CUDA, as
# before; with OVRDMA_NCCL_PCI naming a PCI function of this machine
# (the stand-in for a GPU), NCCL's reads find a function beside it, on a
# bus the kernel does not have; NCCL_GIN_TYPE=2 where nothing set it
out=$(on a "$check" pci ovrdma7 2>&1) || fail "pci ovrdma7: $out"
[ "$out" = "pci none errno 2" ] || fail "a device path without CUDA: $out"
gpu=$(ls /sys/bus/pci/devices 2>/dev/null | head -1)
if [ -n "$gpu" ]; then
	real=$(readlink -f "/sys/bus/pci/devices/$gpu")
	dom=${gpu%%:*}
	for b in $(seq 255 -1 1); do
		bus=$(printf '%s:%02x' "$dom" "$b")
		[ -e "/sys/class/pci_bus/$bus" ] || break
	done
	numa=$(cat "$real/numa_node" 2>/dev/null || echo -)
	want="pci ${real%/*}/$bus:00.0 subsystem pci class 0x020000 numa $numa "
	out=$(OVRDMA_NCCL_PCI=$gpu on a "$check" pci ovrdma7 2>&1) ||
		fail "pci ovrdma7 beside $gpu: $out"
	[ "${out#"$want"}" != "$out" ] || fail "pci ovrdma7 beside $gpu: $out, not $want..."
	parent=${real%/*}
	[ "${out##* parent }" = "${parent##*/}" ] || fail "pci ovrdma7: parent of $out"
	echo "NCCL's device path of ovrdma7 beside $gpu: ${out#pci }"
else
	echo "no PCI device here: the device path beside one not checked"
fi
want=2
grep -qs '^NCCL_GIN_TYPE=' /etc/nccl.conf && want=unset
out=$(HOME=$dir on a sh -c 'echo "${NCCL_GIN_TYPE:-unset}"')
[ "$out" = "$want" ] || fail "NCCL_GIN_TYPE through ovrdma-run: $out, not $want"
out=$(HOME=$dir NCCL_GIN_TYPE=3 on a sh -c 'echo "${NCCL_GIN_TYPE:-unset}"')
[ "$out" = 3 ] || fail "the user's NCCL_GIN_TYPE=3 became $out"
echo "ovrdma-run: NCCL_GIN_TYPE=$want where unset, the user's kept"
out=$(on a ibv_devinfo -v -d ovrdma7 2>&1) || fail "ibv_devinfo -v -d ovrdma7: $out"
for want in 'hca_id:\s+ovrdma7' 'transport:\s+InfiniBand' \
	'node_guid:\s+0200:0064:c0a8:0101' 'state:\s+PORT_ACTIVE \(4\)' \
	'link_layer:\s+Ethernet' 'active_mtu:\s+4096' \
	'GID\[\s*0\]:\s+::ffff:192\.168\.1\.1, RoCE v2'; do
	grep -Eq "$want" <<<"$out" || fail "ibv_devinfo -v: no line like '$want'"
done
# one GID, RoCE v2, as NCCL reads it: so no GID index to configure
# (NCCL_IB_GID_INDEX; docs/GPU.md) - it finds the v2 GID at index 0
grep -Eq 'GID\[\s*1\]' <<<"$out" && fail "ibv_devinfo -v: more than one GID: $out"
grep -Eq 'gid_tbl_len:\s+1$' <<<"$out" || fail "ibv_devinfo -v: gid_tbl_len not 1"
out=$(on a cat /sys/class/infiniband/ovrdma7/ports/1/gid_attrs/types/0 2>&1)
[ "$out" = "RoCE v2" ] || fail "ports/1/gid_attrs/types/0 beside the kernel: '$out'"
echo "ibv_devinfo -v -d ovrdma7: ACTIVE, Ethernet, one GID ::ffff:192.168.1.1 RoCE v2 (gid_attrs/types/0 too)"
# every request reached the stand-in: the dumps, rxe_fake's chardev, and
# ovrdma7's (answered -EINVAL there, replaced by the interposer)
grep -q "req op=15 flags=0x1 seq=[0-9]* index=$idx chardev=uverbs" "$dir/nl.log" ||
	fail "ovrdma7's GET_CHARDEV did not reach the kernel"
grep -q 'req op=15 .* index=3 chardev=uverbs' "$dir/nl.log" || fail "rxe_fake's GET_CHARDEV"
grep -q 'req op=1 flags=0x301' "$dir/nl.log" || fail "no GET dump"
# by hand, as libnl with MSG_PEEK or libmnl with a small buffer read:
# whole messages in every datagram, ours among them
for how in "256" "16 peek" "16384"; do
	out=$(on a "$check" nlraw $how 2>&1) || fail "nlraw $how: $out"
	grep -qx 'nl rxe_fake 3' <<<"$out" && grep -qx "nl ovrdma7 $idx" <<<"$out" ||
		fail "nlraw $how: $out"
done
echo "a dump read by hand (256-byte buffers, MSG_PEEK): whole messages, both devices"
if command -v rdma >/dev/null; then
	out=$(on a rdma dev 2>&1) || fail "rdma dev: $out"
	grep -q '^3: rxe_fake: node_type ca' <<<"$out" &&
		grep -q "^$idx: ovrdma7: node_type ca fw ovrdma-0.1.0 node_guid 0200:0064:c0a8:0101" <<<"$out" ||
		fail "rdma dev: $out"
	echo "iproute2's rdma dev lists both"
fi
if [ "$("$check" rdmacm 2>/dev/null; echo $?)" != 77 ]; then
	: >"$dir/nl.log"
	# rxe_fake cannot be opened (no kernel behind it): librdmacm fails
	# the same with or without ovrdma; what matters is its own request
	on a "$check" rdmacm >/dev/null 2>&1
	grep -q 'req op=15 flags=0x1 seq=[0-9]* chardev=rdma_cm' "$dir/nl.log" ||
		fail "librdmacm's GET_CHARDEV rdma_cm did not reach the kernel"
fi

# the profile script of login shells leaves SYSFS_PATH to the kernel's
# devices where there are some (the interposer finds the tree through
# OVRDMA_SYSFS); sets it where there are none
profile() { # fake kernel root
	FAKENL_ROOT=$1 LD_PRELOAD=$fakenl OVRDMA_SYSFS=$dir/sysfs-a \
		sh -c '. "$1"; echo "${SYSFS_PATH:-unset} $OVRDMA_SYSFS"' sh "$build/tools/ovrdma.sh"
}
mkdir -p "$dir/ksys-none/class/infiniband"
out=$(profile "$kroot")
[ "$out" = "unset $dir/sysfs-a" ] || fail "profile.d beside a kernel device: $out"
out=$(profile "$dir/ksys-none")
[ "$out" = "$dir/sysfs-a $dir/sysfs-a" ] || fail "profile.d without kernel devices: $out"
echo "profile.d: SYSFS_PATH left unset beside kernel devices, the tree without"

echo "== 2. ibv_rc_pingpong over devices found through netlink"
port=18650
pingpong() { # extra args...
	local srv="$dir/srv.log" cli="$dir/cli.log" rc_s=0 rc_c=1
	port=$((port + 1))
	on a timeout 60 ibv_rc_pingpong -d ovrdma7 -g 0 -p $port "$@" >"$srv" 2>&1 &
	local sp=$!
	sleep 0.3
	for _ in 1 2 3 4 5; do # the server may not listen yet
		on b timeout 60 ibv_rc_pingpong -d ovrdma7 -g 0 -p $port "$@" \
			127.0.0.1 >"$cli" 2>&1 && { rc_c=0; break; }
		rc_c=$?
		grep -q "Couldn't connect" "$cli" || break
		sleep 0.3
	done
	wait $sp || rc_s=$?
	if [ $rc_s -ne 0 ] || [ $rc_c -ne 0 ]; then
		echo "--- server"; cat "$srv"; echo "--- client"; cat "$cli"
		fail "ibv_rc_pingpong $* (server exit $rc_s, client exit $rc_c)"
	fi
	grep -Eq '^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$' "$cli" ||
		fail "ibv_rc_pingpong $*: no result line"
	echo "ibv_rc_pingpong $*: $(grep Mbit "$cli")"
}
pingpong -s 4096 -n 200
pingpong -s 65536 -n 100 -e
for _ in $(seq 50); do
	[ "$(counter a engine_qps)" = 0 ] && [ "$(counter b engine_qps)" = 0 ] && break
	sleep 0.1
done
[ "$(counter a engine_qps)" = 0 ] && [ "$(counter b engine_qps)" = 0 ] ||
	fail "QPs left after the programs exited"

echo "== 3. RDMA netlink without kernel devices"
nodev() { FAKENL_DEVICES= FAKENL_ROOT=$dir/ksys-none on "$@"; }
out=$(nodev a "$check" list 2>&1) || fail "discovery_check list: $out"
echo "$out"
grep -q rxe_fake <<<"$out" && fail "rxe_fake listed by a kernel without devices"
grep -q "^dev ovrdma7 index $idx guid 02000064c0a80101 path $dir/sysfs-a/class/infiniband/ovrdma7$" <<<"$out" ||
	fail "ovrdma7 not found through netlink with the tree as SYSFS_PATH"
out=$(nodev a "$check" open ovrdma7 2>&1) || fail "open ovrdma7: $out"
grep -q 'opened ovrdma7 state 4 gid0 ::ffff:192.168.1.1' <<<"$out" || fail "open ovrdma7: $out"
if [ "$("$check" rdmacm 2>/dev/null; echo $?)" != 77 ]; then
	out=$(nodev a "$check" rdmacm 2>&1) || fail "rdma_get_devices: $out"
	grep -qx 'rdmacm ovrdma7' <<<"$out" || fail "rdma_get_devices: $out"
	echo "librdmacm's rdma_get_devices opens ovrdma7"
fi
# rdma_cm itself: the kernel answers librdmacm's GET_CHARDEV "rdma_cm"
# with its own char device (10:123 here), the interposer with its own
if command -v rping >/dev/null; then
	: >"$dir/nl.log"
	nodev a timeout 30 rping -s -a 192.168.1.1 -p 7471 -C 20 -V >"$dir/rping-s.log" 2>&1 &
	rs=$!
	rc=1
	for _ in $(seq 20); do # the server may not listen yet
		sleep 0.3
		nodev b timeout 30 rping -c -a 192.168.1.1 -p 7471 -C 20 -V \
			>"$dir/rping-c.log" 2>&1 && { rc=0; break; }
		kill -0 $rs 2>/dev/null || break
	done
	wait $rs || rc=1
	if [ $rc != 0 ]; then
		echo "--- rping server"; cat "$dir/rping-s.log"
		echo "--- rping client"; cat "$dir/rping-c.log"
		fail "rping -V over rdma_cm beside a kernel with RDMA netlink"
	fi
	grep -q 'req op=15 flags=0x[0-9a-f]* seq=[0-9]* chardev=rdma_cm' "$dir/nl.log" ||
		fail "librdmacm's GET_CHARDEV rdma_cm did not reach the kernel"
	echo "rping -C 20 -V between A and B: the kernel asked for rdma_cm, ovrdma's served"
fi

echo "== 4. no ovrdma node running"
kill -TERM "$pid_a" "$pid_b"
wait "$pid_a" || fail "ovrdmad a did not stop cleanly"
wait "$pid_b" || fail "ovrdmad b did not stop cleanly"
out=$(on a ibv_devices 2>&1) || fail "ibv_devices: $out"
grep -Eq '^\s*rxe_fake\s+0011223344550003$' <<<"$out" || fail "rxe_fake not listed: $out"
grep -q ovrdma7 <<<"$out" && fail "ovrdma7 listed without its node: $out"
out=$(on a "$check" list 2>&1) || fail "discovery_check list: $out"
grep -qx 'dev rxe_fake index 3 guid 0011223344550003 path /sys/class/infiniband/rxe_fake' <<<"$out" ||
	fail "rxe_fake without a node: $out"
out=$(on a "$check" read rxe_fake node_desc) || fail "rxe_fake's node_desc: $out"
echo "only rxe_fake, as the kernel has it"

echo "== 5. the device's netdev"
ns=ovrdisc$$
ip netns add $ns || fail "ip netns add $ns"
ip -n $ns link add vipd0 address 02:00:00:00:0d:03 type veth peer name vipd0p &&
	ip -n $ns addr add 192.168.1.3/24 dev vipd0 && ip -n $ns link set vipd0 up ||
	fail "an interface with the vIP"
conf c 10.0.0.3 server 3 1
sed -i "s|$dir/memif.sock|$dir/memif-c.sock|" "$dir/c.conf"
start c $ns
tree=$dir/sysfs-c/class/infiniband/ovrdma7
inns() { ip netns exec $ns "$run" --sysfs "$dir/sysfs-c" "$@"; }
ifx=$(ip netns exec $ns cat /sys/class/net/vipd0/ifindex)
[ "$(cat "$tree/ports/1/gid_attrs/ndevs/0")" = vipd0 ] &&
	[ "$(cat "$tree/device/net/vipd0/ifindex")" = "$ifx" ] &&
	[ "$(cat "$tree/device/net/vipd0/address")" = 02:00:00:00:0d:03 ] ||
	fail "the tree's netdev: $(find "$tree/device" "$tree/ports/1/gid_attrs" -type f 2>&1)"
# rdma-core's tests read /sys/class/infiniband/DEV/device/net/ with ls
# (statx, opendir), then the interface's address with ip
out=$(inns ls /sys/class/infiniband/ovrdma7/device/net/ 2>&1)
[ "$out" = vipd0 ] || fail "ls .../device/net without kernel devices: $out"
out=$(ip netns exec $ns env LD_PRELOAD=$fakenl "$run" --sysfs "$dir/sysfs-c" \
	ls /sys/class/infiniband/ovrdma7/device/net/ 2>&1)
[ "$out" = vipd0 ] || fail "ls .../device/net beside a kernel device: $out"
out=$(inns "$check" open ovrdma7 2>&1) || fail "open ovrdma7 in $ns: $out"
grep -qx "opened ovrdma7 state 4 gid0 ::ffff:192.168.1.3 ndev $ifx" <<<"$out" ||
	fail "ibv_query_gid_ex in $ns: $out, not ndev $ifx"
out=$("$run" --sysfs "$dir/sysfs-c" "$check" open ovrdma7 2>&1) ||
	fail "open ovrdma7 outside $ns: $out"
grep -q ' ndev 0$' <<<"$out" || fail "outside $ns (no vipd0 here): $out"
echo "ovrdma7's netdev vipd0 (ifindex $ifx): ls, ibv_query_gid_ex; ndev 0 outside its namespace"
# followed as the kernel reports addresses (rtnetlink)
until_tree() { # what... (a test of the tree, up to 2 s)
	for _ in $(seq 20); do "$@" && return 0; sleep 0.1; done
	return 1
}
ip -n $ns link add vipd1 type veth peer name vipd1p && ip -n $ns link set vipd1 up &&
	ip -n $ns addr del 192.168.1.3/24 dev vipd0 &&
	ip -n $ns addr add 192.168.1.3/24 dev vipd1 || fail "moving the vIP"
until_tree grep -qx vipd1 "$tree/ports/1/gid_attrs/ndevs/0" ||
	fail "ndevs/0 after the vIP moved to vipd1: $(cat "$tree/ports/1/gid_attrs/ndevs/0" 2>&1)"
[ "$(ls "$tree/device/net")" = vipd1 ] || fail "device/net after the move: $(ls "$tree/device/net")"
ip -n $ns addr del 192.168.1.3/24 dev vipd1 || fail "removing the vIP"
until_tree test ! -e "$tree/ports/1/gid_attrs/ndevs/0" ||
	fail "ndevs/0 with no interface holding the vIP"
[ ! -e "$tree/device" ] || fail "device/ with no interface holding the vIP"
out=$(inns "$check" open ovrdma7 2>&1) || fail "open ovrdma7 without a netdev: $out"
grep -q ' ndev 0$' <<<"$out" || fail "without a netdev: $out"
echo "the vIP moved to vipd1: followed; removed: no netdev, ndev 0"
echo "discovery: OK"
