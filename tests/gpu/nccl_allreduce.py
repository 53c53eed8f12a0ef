#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One rank of a two-rank NCCL all-reduce (PyTorch's NCCL), for the gpu
suite and the NCCL benchmark (tests/gpu/nccl.sh, docs/GPU.md).

For each size from --min-bytes to --max-bytes (doubling), float32:
  1. correctness: rank r contributes base * (r + 1), base[i] = i % 251 + 1
     (exact in float32), the result must equal base * 3 on both ranks;
  2. timing: --iters all-reduces of one buffer (fewer above 64 MB), the
     mean time, algorithm bandwidth size / t and bus bandwidth
     algbw * 2 (n - 1) / n, as nccl-tests reports them.
Rank 0 prints one line per size:
  bytes  elements  time_us  algbw_GBps  busbw_GBps  ok|WRONG
Exit 0 when every size was right on both ranks, 1 otherwise.
"""
import argparse
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--master", required=True, help="rank 0's address")
    ap.add_argument("--port", type=int, default=29531)
    ap.add_argument("--min-bytes", type=int, default=8)
    ap.add_argument("--max-bytes", type=int, default=1 << 30)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--device", type=int, default=0)
    a = ap.parse_args()

    import torch
    import torch.distributed as dist

    world = 2
    dev = torch.device("cuda", a.device)
    torch.cuda.set_device(dev)
    dist.init_process_group(
        "nccl",
        init_method=f"tcp://{a.master}:{a.port}",
        rank=a.rank,
        world_size=world,
        device_id=dev,
    )
    if a.rank == 0:
        print(f"{'bytes':>12} {'elements':>11} {'time_us':>11} "
              f"{'algbw_GBps':>10} {'busbw_GBps':>10} result", flush=True)
    bad = 0
    size = max(4, a.min_bytes)
    while size <= a.max_bytes:
        n = size // 4
        base = (torch.arange(n, device=dev, dtype=torch.int64) % 251 + 1).to(
            torch.float32)
        x = base * (a.rank + 1)
        dist.all_reduce(x)
        wrong = torch.tensor([0 if torch.equal(x, base * 3) else 1],
                             device=dev, dtype=torch.int32)
        del x
        iters = a.iters if size <= (64 << 20) else max(
            3, a.iters * (64 << 20) // size)
        y = base.clone()  # both ranks equal: y doubles, exact in float32
        dist.all_reduce(y)
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(y)
        torch.cuda.synchronize()
        t = (time.perf_counter() - t0) / iters
        dist.all_reduce(wrong)  # either rank wrong: both say so
        ok = int(wrong.item()) == 0
        bad += 0 if ok else 1
        algbw = size / t / 1e9
        busbw = algbw * 2 * (world - 1) / world
        if a.rank == 0:
            print(f"{size:>12} {n:>11} {t * 1e6:>11.1f} {algbw:>10.3f} "
                  f"{busbw:>10.3f} {'ok' if ok else 'WRONG'}", flush=True)
        del y, base
        size *= 2
    dist.destroy_process_group()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
