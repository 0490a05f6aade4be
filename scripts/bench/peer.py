"""PyTorch 2.x peer runs of `scripts/bench.sh --peers`, one thread each.

  peer.py eager KIND MODEL --out FILE [options]
      trains the model in one process (eager autograd, torch.optim.AdamW):
      each step runs the microbatches' forward and backward, accumulating
      the gradients, then the optimizer. After the timed steps, one more
      step under torch.utils.flop_counter.FlopCounterMode counts the
      matmul FLOPs of a step's forwards and backwards.
  peer.py pipeline KIND MODEL --out FILE --schedule 1f1b|gpipe [options]
      one rank of a 2-stage torch.distributed.pipelining job (gloo; RANK,
      WORLD_SIZE, MASTER_ADDR and MASTER_PORT from the environment), cut
      at the middle layer or, with --split flops, FLOP-balanced (hf models
      only). The ranks sum the gradients of a tied weight both hold.
  peer.py sgemm [--size N]
      the best rate of torch.mm on N x N x N (float32) as a JSON line in
      pp-gemm-rate's format.

KIND is mlp6, gpt or hf (scripts/bench/peer_models.py); --threads N
(default 1) is torch.set_num_threads. A run writes one JSON
object to --out: each step's seconds and the process's peak resident set
size (getrusage) and that after the imports, plus the matmul FLOPs per step for eager runs.
"""
import argparse
import json
import resource
import time

import torch
import torch.distributed as dist

import peer_models


def train_steps(args, step):
    """Times args.steps calls of step(inputs, target), each on a fresh
    global batch drawn outside the timed region."""
    generator = torch.Generator().manual_seed(args.seed)
    rows = args.microbatch_size * args.microbatches
    seconds = []
    for _ in range(args.steps):
        inputs, target = args.model.make_batch(rows, generator)
        start = time.perf_counter()
        step(inputs, target)
        seconds.append(time.perf_counter() - start)
    return seconds


def eager(args):
    module = args.model.build_stage(0, 1)
    optimizer = torch.optim.AdamW(module.parameters(), lr=args.lr, weight_decay=0.0)

    def forward_backward(inputs, target):
        for chunk, chunk_target in zip(
                zip(*(i.chunk(args.microbatches) for i in inputs)),
                target.chunk(args.microbatches)):
            loss = args.model.loss(module(*chunk), chunk_target)
            (loss / args.microbatches).backward()

    def step(inputs, target):
        forward_backward(inputs, target)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    result = {"step_seconds": train_steps(args, step)}
    from torch.utils.flop_counter import FlopCounterMode
    counter = FlopCounterMode(display=False)
    inputs, target = args.model.make_batch(
        args.microbatch_size * args.microbatches, torch.Generator().manual_seed(0))
    with counter:
        forward_backward(inputs, target)
    result["matmul_flops_per_step"] = counter.get_total_flops()
    return result


def pipeline(args):
    from torch.distributed.pipelining import (PipelineStage, Schedule1F1B,
                                              ScheduleGPipe)
    dist.init_process_group("gloo")
    rank, count = dist.get_rank(), dist.get_world_size()
    module = args.model.build_stage(rank, count)
    stage = PipelineStage(module, rank, count, torch.device("cpu"))
    kind = {"1f1b": Schedule1F1B, "gpipe": ScheduleGPipe}[args.schedule]
    schedule = kind(stage, args.microbatches, loss_fn=args.model.loss)
    optimizer = torch.optim.AdamW(module.parameters(), lr=args.lr, weight_decay=0.0)

    def step(inputs, target):
        if rank == 0:
            schedule.step(*inputs)
        elif rank == count - 1:
            schedule.step(target=target)
        else:
            schedule.step()
        for parameter in args.model.tied(module):
            dist.all_reduce(parameter.grad)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    result = {"rank": rank, "step_seconds": train_steps(args, step)}
    dist.destroy_process_group()
    return result


def sgemm(args):
    n = args.size
    a, b = torch.randn(n, n), torch.randn(n, n)
    best = float("inf")
    for _ in range(args.repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    print(json.dumps({"engine": "torch.mm " + torch.__version__, "trans": "NN",
                      "shape": f"{n}x{n}x{n}", "threads": torch.get_num_threads(),
                      "gflops": 2 * n ** 3 / best / 1e9, "seconds": best}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["eager", "pipeline", "sgemm"])
    parser.add_argument("kind", nargs="?")
    parser.add_argument("model_path", nargs="?")
    parser.add_argument("--out")
    parser.add_argument("--schedule", choices=["1f1b", "gpipe"], default="1f1b")
    parser.add_argument("--split", choices=["half", "flops"], default="half")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--microbatch-size", type=int, default=16)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    imported_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    if args.mode == "sgemm":
        return sgemm(args)
    if not (args.kind and args.model_path and args.out):
        parser.error(f"{args.mode} needs KIND, MODEL and --out")
    args.model = peer_models.load(args.kind, args.model_path, args.split)
    result = eager(args) if args.mode == "eager" else pipeline(args)
    result["max_rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result["import_rss_kb"] = imported_kb
    with open(args.out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
