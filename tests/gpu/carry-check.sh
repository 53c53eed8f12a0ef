#!/bin/bash
# SPDX-License-Identifier: MIT
# Checks the GPU machine's carry (tools/gpu-carry, tests/gpu/device-run.sh;
# docs/GPU.md "The GPU machine") where it must work: on a Debian 12
# system with neither DPDK nor rdma-core nor iproute2 (debootstrap
# minbase, kept in OVRDMA_BARE_ROOT, default /var/tmp/ovrdma-bare-bookworm,
# made once). Inside it, as the GPU machine would, device-run.sh unpacks
# the packages into its prefix and runs:
#   env    every carried program resolves every library;
#   fake   the gdr test (two testbed nodes, WRITE/READ/SEND between
#          fake-GPU buffers byte-exact, the error cases) on the fake
#          CUDA driver;
#   gdr, nccl, copy   skip: no GPU there;
# then again with --deadline 5: env runs, fake is skipped (the deadline).
# usage: carry-check.sh [CARRY_DIR]   (default: a temporary one)
# Needs root, debootstrap and a Debian mirror (OVRDMA_DEBIAN_MIRROR,
# default http://deb.debian.org/debian); skips (77) without them.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
root=${OVRDMA_BARE_ROOT:-/var/tmp/ovrdma-bare-bookworm}
mirror=${OVRDMA_DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ "$(id -u)" -ne 0 ]; then
	echo "carry-check: needs root (debootstrap, chroot, namespaces); skipped"
	exit 77
fi
command -v debootstrap >/dev/null || {
	echo "carry-check: no debootstrap (tools/install-deps installs it); skipped"
	exit 77
}
work=$(mktemp -d /tmp/ovrdma-carry.XXXXXX)
trap 'rm -rf "$work"' EXIT
carry=${1:-$work/carry}

# ---- the bare system -------------------------------------------------------
if [ ! -f "$root/.ovrdma-bare" ]; then
	rm -rf "$root"
	echo "carry-check: debootstrap bookworm into $root (once)"
	debootstrap --variant=minbase bookworm "$root" "$mirror" \
		>"$work/debootstrap.log" 2>&1 || {
		tail -20 "$work/debootstrap.log"
		rm -rf "$root"
		if grep -qiE 'Failed getting release|Could not resolve|Temporary failure' \
			"$work/debootstrap.log"; then
			echo "carry-check: no Debian mirror at $mirror; skipped"
			exit 77
		fi
		echo "carry-check: FAIL: debootstrap"
		exit 1
	}
	touch "$root/.ovrdma-bare"
fi
if chroot "$root" sh -c 'ls /usr/lib/*/librte_eal* /usr/lib/*/libibverbs* \
	/usr/bin/ip /bin/ip' 2>/dev/null | grep -q .; then
	echo "carry-check: FAIL: $root has DPDK, rdma-core or iproute2: not bare"
	exit 1
fi

# ---- the carry -------------------------------------------------------------
t0=$SECONDS
"$here/tools/gpu-carry" "$carry" || {
	echo "carry-check: FAIL: tools/gpu-carry"
	exit 1
}
echo "carry-check: tools/gpu-carry took $((SECONDS - t0)) s"

# the tree as it would travel: tracked and untracked files, no builds
dst=$root/src/ovrdma
rm -rf "$dst" "$root/opt/ovrdma-carry"
mkdir -p "$dst"
if git -C "$here" rev-parse 2>/dev/null; then
	(cd "$here" && git ls-files -co --exclude-standard -z |
		tar --null -cf - -T -) | tar -xf - -C "$dst"
else
	(cd "$here" && tar --exclude='./build*' --exclude=./.carry -cf - .) |
		tar -xf - -C "$dst"
fi
cp -a "$carry" "$dst/.carry"

# the GPU machine's way: root in its own namespaces, nothing installed
unshare -m --propagation private bash -c '
	r=$1
	mount --bind "$r" "$r" &&
	mount -t proc proc "$r/proc" &&
	mount --rbind /sys "$r/sys" &&
	mount --rbind /dev "$r/dev" &&
	mount -t tmpfs tmpfs "$r/run" &&
	mount -t tmpfs tmpfs "$r/tmp" &&
	mkdir -p "$r/run/netns" || exit 1
	exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root OUT=/tmp/out \
		/bin/bash -c "cd /src/ovrdma && tests/gpu/device-run.sh env fake gdr nccl copy;
			tests/gpu/device-run.sh --deadline 5 env fake"
' _ "$root" 2>&1 | tee "$work/run.log"
rm -rf "$dst" "$root/opt/ovrdma-carry"

nfail=0
want() { # pattern what
	grep -qE "$1" "$work/run.log" || {
		echo "carry-check: FAIL: $2"
		nfail=$((nfail + 1))
	}
}
want '^device-run: env: passed; fake: passed; gdr: skipped; nccl: skipped; copy: skipped$' \
	"device-run's summary: env and fake pass, the GPU steps skip"
want '^device-run: env: passed; fake: skipped \(deadline\)$' \
	"device-run --deadline 5: the steps after it skipped"
want '^ip utility, iproute2' "the carried iproute2 runs"
want 'librte_eal.so.23 => /opt/ovrdma-carry/' "ovrdmad loads the carried DPDK"
want '^gdr: ok$' "the gdr test passed on the carried build"
[ $nfail -eq 0 ] || exit 1
echo "carry-check: ok"
