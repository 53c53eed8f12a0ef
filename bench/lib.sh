# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shell helpers the bench/ scripts share; sourced, not run.

median() { # values on stdin -> median (or "-")
	sort -g | awk '{ v[NR] = $1 } END {
		if (!NR) { print "-"; exit }
		print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
