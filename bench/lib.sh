# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shell helpers the bench/ scripts share; sourced, not run.

median() { # values on stdin -> median (or "-")
	sort -g | awk '{ v[NR] = $1 } END {
		if (!NR) { print "-"; exit }
		print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The calling script's synopsis - its header comment from the line that
# shows how it is run ("#   bench/NAME ...") to the next empty comment
# line - on stderr, and exit 2: what an unknown option gets.
bench_usage() {
	sed -n '/^#   bench\//,/^#$/{/^#$/d;s/^# \{0,1\}//p;}' "$0" >&2
	exit 2
}

# bench_val OPTION ARGS_LEFT: OPTION needs a value (ARGS_LEFT: $# where
# the option is $1), else the synopsis
bench_val() {
	[ "$2" -ge 2 ] && return 0
	echo "$(basename "$0" .sh): $1 needs a value" >&2
	bench_usage
}

# bench_root: exits 1 unless run as root (the testbed's network
# namespaces, DPDK's hugepages)
bench_root() {
	[ "$(id -u)" -eq 0 ] && return 0
	echo "$(basename "$0" .sh): needs root (network namespaces, DPDK)" >&2
	exit 1
}
