#!/bin/bash
# SPDX-License-Identifier: MIT
# NCCL all-reduce bus bandwidth through ovrdma against NCCL's socket
# transport over the same testbed fabric, one run (issue 9's benchmark;
# docs/GPU.md, docs/PERFORMANCE.md). Needs the GPU machine: see
# tests/gpu/nccl.sh for what it runs and what it skips on.
#   bench/nccl-bench.sh [BUILD_DIR]
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export OVRDMA_BUILD=${1:-${OVRDMA_BUILD:-$here/build}}
exec "$here/tests/gpu/nccl.sh" "$here/tools/ovrdma-testbed" \
	"$here/tests/gpu/nccl_allreduce.py" bench
