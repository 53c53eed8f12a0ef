#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One rank of two: PyTorch torch.distributed collectives over NCCL, for
the gpu suite (tests/gpu/nccl.sh, docs/GPU.md).

For each size from --min-bytes to --max-bytes (times 64), float32 on the
GPU, every value checked on both ranks (exact in float32):
  all_reduce      rank r gives base * (r + 1): the sum base * 3;
  broadcast       from rank 0 (base + 7) and from rank 1 (base * 5);
  all_gather      rank r gives base + r: slot k holds base + k;
  reduce_scatter  rank r gives chunks c_k = base_k * (r + 1): rank k
                  gets base_k * 3;
  all_to_all      rank r's chunk k is base_k + 10 r + k: rank k gets
                  from rank r base_k + 10 r + k.
Rank 0 prints one line per collective and size:
  collective  bytes  time_us  ok|WRONG
Exit 0 when every collective was right on both ranks, 1 otherwise.
"""
import argparse
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--master", required=True, help="rank 0's address")
    ap.add_argument("--port", type=int, default=29541)
    ap.add_argument("--min-bytes", type=int, default=8)
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    ap.add_argument("--iters", type=int, default=1, help="(ignored)")
    ap.add_argument("--device", type=int, default=0)
    a = ap.parse_args()

    import torch
    import torch.distributed as dist

    world = 2
    r = a.rank
    dev = torch.device("cuda", a.device)
    torch.cuda.set_device(dev)
    dist.init_process_group(
        "nccl",
        init_method=f"tcp://{a.master}:{a.port}",
        rank=r,
        world_size=world,
        device_id=dev,
    )

    def base(n, off=0):
        return ((torch.arange(n, device=dev, dtype=torch.int64) + off) % 251
                + 1).to(torch.float32)

    def all_reduce(n):
        x = base(n) * (r + 1)
        dist.all_reduce(x)
        return torch.equal(x, base(n) * 3)

    def broadcast(n):
        ok = True
        for src, want in ((0, base(n) + 7), (1, base(n) * 5)):
            x = want.clone() if r == src else torch.zeros(n, device=dev)
            dist.broadcast(x, src=src)
            ok = ok and torch.equal(x, want)
        return ok

    def all_gather(n):
        out = [torch.zeros(n, device=dev) for _ in range(world)]
        dist.all_gather(out, base(n) + r)
        return all(torch.equal(out[k], base(n) + k) for k in range(world))

    def reduce_scatter(n):
        m = max(1, n // world)
        ins = [base(m, k * m) * (r + 1) for k in range(world)]
        out = torch.zeros(m, device=dev)
        dist.reduce_scatter(out, ins)
        return torch.equal(out, base(m, r * m) * 3)

    def all_to_all(n):
        m = max(1, n // world)
        ins = [base(m, k * m) + 10 * r + k for k in range(world)]
        outs = [torch.zeros(m, device=dev) for _ in range(world)]
        dist.all_to_all(outs, ins)
        return all(torch.equal(outs[s], base(m, r * m) + 10 * s + r)
                   for s in range(world))

    tests = (("all_reduce", all_reduce), ("broadcast", broadcast),
             ("all_gather", all_gather), ("reduce_scatter", reduce_scatter),
             ("all_to_all", all_to_all))
    if r == 0:
        print(f"{'collective':>15} {'bytes':>12} {'time_us':>11} result",
              flush=True)
    bad = 0
    size = max(8, a.min_bytes)
    while size <= a.max_bytes:
        n = size // 4
        for name, fn in tests:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            ok = fn(n)
            torch.cuda.synchronize()
            t = time.perf_counter() - t0
            wrong = torch.tensor([0 if ok else 1], device=dev,
                                 dtype=torch.int32)
            dist.all_reduce(wrong)  # either rank wrong: both say so
            ok = int(wrong.item()) == 0
            bad += 0 if ok else 1
            if r == 0:
                print(f"{name:>15} {size:>12} {t * 1e6:>11.1f} "
                      f"{'ok' if ok else 'WRONG'}", flush=True)
        size *= 64
    dist.barrier()
    dist.destroy_process_group()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
