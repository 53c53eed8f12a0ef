#!/bin/sh
# Bounded libFuzzer run for the test suite: explores from the seed corpus
# for RUNS iterations with a fixed seed (reproducible), writing new inputs
# to a scratch directory so the source tree is never modified.
# Usage: run-fuzz.sh FUZZER CORPUS_DIR RUNS
set -eu
fuzzer=$1 corpus=$2 runs=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
exec "$fuzzer" -runs="$runs" -seed=1 -max_len=9100 -timeout=10 \
	-rss_limit_mb=2048 -print_final_stats=1 "$scratch" "$corpus"
