#!/bin/bash
# SPDX-License-Identifier: MIT
#
# cc-sweep.sh: the congestion-control benchmark of issue 4: every
# scenario (S1-S5) with every algorithm in the packet-level simulator,
# tables and plots (docs/CONGESTION.md). From the source tree:
#
#   bench/cc-sweep.sh [--seed N] [--quick] [--scenario LIST] [--alg LIST]
#                     [--out DIR] [--docs]
#
#  1. builds build/tools/ovrdma-ccsim (ninja; OVRDMA_BUILD for another
#     build directory) and runs it: by default
#     ovrdma-ccsim --scenario s1,s2,s3,s4,s5 --alg dcqcn,timely,swift,ovr
#     --seed 1 --out DIR (about a minute on the 2-core sandbox);
#  2. renders the plots from DIR/plots.gp with gnuplot as small palette
#     PNGs (800x480, about 10 KB each): S2 64:1 long-lived queue, S3
#     per-flow rates per algorithm, S4 FCT CDFs of short flows at 70 %;
#  3. prints the comparison tables (Markdown, also in DIR/tables.md);
#  4. with --docs (full sweep only: no --quick, --scenario or --alg),
#     copies the PNGs to docs/cc/ and replaces the generated part of
#     docs/CONGESTION.md's "Results" section (between the cc-sweep
#     markers) with the tables and links to the plots.
# DIR defaults to a new directory under /tmp (printed). Nothing here
# tunes a scenario: the simulator's scenarios are fixed in
# tools/ccsim/scenarios.c and the seed makes every run reproducible.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
build=${OVRDMA_BUILD:-$root/build}
seed=1 quick=() scen=s1,s2,s3,s4,s5 algs=dcqcn,timely,swift,ovr
out='' docs=0 partial=0

while [ $# -gt 0 ]; do
	case "$1" in
	--seed) bench_val --seed $#; seed=$2 && shift ;;
	--quick) quick=(--quick) partial=1 ;;
	--scenario) bench_val --scenario $#; scen=$2 partial=1 && shift ;;
	--alg) bench_val --alg $#; algs=$2 partial=1 && shift ;;
	--out) bench_val --out $#; out=$2 && shift ;;
	--docs) docs=1 ;;
	*) bench_usage ;;
	esac
	shift
done
if [ "$docs" -eq 1 ] && [ "$partial" -eq 1 ]; then
	echo "cc-sweep: --docs writes the full sweep only (no --quick, --scenario, --alg)" >&2
	exit 2
fi
command -v gnuplot >/dev/null || {
	echo "cc-sweep: gnuplot missing (tools/install-deps, or apt-get install gnuplot-nox)" >&2
	exit 1
}
[ -f "$build/build.ninja" ] || {
	echo "cc-sweep: no build in $build (meson setup build && ninja -C build)" >&2
	exit 1
}
ninja -C "$build" tools/ovrdma-ccsim >/dev/null
sim=$build/tools/ovrdma-ccsim

[ -n "$out" ] || out=$(mktemp -d /tmp/ovrdma-ccsweep.XXXXXX)
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/*.png "$out"/*.dat "$out"/plots.gp
cmd=(ovrdma-ccsim --scenario "$scen" --alg "$algs" --seed "$seed"
	"${quick[@]}" --out "$out")
echo "cc-sweep: ${cmd[*]}" >&2
t0=$(date +%s)
"$sim" "${cmd[@]:1}" >"$out/tables.md" || {
	echo "cc-sweep: ovrdma-ccsim failed" >&2
	exit 1
}
secs=$(($(date +%s) - t0))

# ccsim rendered 1000x600 antialiased PNGs (pngcairo); again, smaller:
# libgd's palette PNGs are a fifth of the size and as readable
sed -i '1s/.*/set terminal png size 800,480 noenhanced/' "$out/plots.gp"
(cd "$out" && gnuplot plots.gp)
cat "$out/tables.md"
echo "cc-sweep: $secs s; tables, data and plots in $out" >&2

[ "$docs" -eq 1 ] || exit 0

doc=$root/docs/CONGESTION.md
begin='<!-- cc-sweep begin: written by bench/cc-sweep.sh --docs, do not edit -->'
end='<!-- cc-sweep end -->'
if ! grep -qxF "$begin" "$doc" || ! grep -qxF "$end" "$doc"; then
	echo "cc-sweep: $doc lacks the cc-sweep markers" >&2
	exit 1
fi
mkdir -p "$root/docs/cc"
rm -f "$root"/docs/cc/*.png
cp "$out"/*.png "$root/docs/cc/"
gen=$out/generated.md
{
	echo "Produced by \`bench/cc-sweep.sh --docs\` ($secs s of wall clock" \
		"where it last ran; the simulator is one thread), which ran"
	echo
	echo '```'
	echo "build/tools/${cmd[*]:0:${#cmd[@]}-1} DIR"
	echo '```'
	echo
	# the simulator's headings sit one level below Results here
	tail -n +2 "$out/tables.md" | sed -e '1{/^$/d}' -e 's/^### /#### /'
	echo
	echo "#### Plots"
	echo
	for p in "$root"/docs/cc/*.png; do
		n=$(basename "$p" .png)
		echo "![$n](cc/$n.png)"
	done
} >"$gen"
awk -v b="$begin" -v e="$end" -v g="$gen" '
	$0 == b { print; while ((getline l < g) > 0) print l; skip = 1; next }
	$0 == e { skip = 0 }
	!skip { print }
' "$doc" >"$out/CONGESTION.md"
cp "$out/CONGESTION.md" "$doc"
echo "cc-sweep: wrote docs/cc/*.png and the tables in $doc" >&2
