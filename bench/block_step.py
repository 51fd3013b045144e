"""bench/block_step.py: a transformer block's training loop, for bench/torch_loop.py --loop block
(issue 24 item 1: what backward attribution costs on a transformer block): one
nn.TransformerEncoderLayer (d_model 128, 4 heads, feed-forward 256, batch 8 x 32 tokens), a
linear head, cross-entropy on random labels, AdamW, on the (simulated) CUDA device; no sync of
its own but the loss's .item() every step (as a training loop's logging does).

    python block_step.py [--steps N] [--end-stamp]

Prints "step I MS" for every step (host time, perf_counter; printed after the loop), then
"end <time.time()>" with --end-stamp."""
import argparse
import time

import torch

import step_times


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--end-stamp", action="store_true", help="print 'end <time.time()>' last")
    args = p.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    block = torch.nn.TransformerEncoderLayer(128, 4, 256, dropout=0.1, batch_first=True).to(dev)
    head = torch.nn.Linear(128, 10).to(dev)
    opt = torch.optim.AdamW(list(block.parameters()) + list(head.parameters()), lr=1e-3)
    x = torch.randn(8, 32, 128, device=dev)
    y = torch.randint(0, 10, (8, 32), device=dev)
    times = []
    clock = time.perf_counter
    for _ in range(args.steps):
        t0 = clock()
        logits = head(block(x))
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 10), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
        times.append((clock() - t0) * 1e3)
    step_times.report(times, args.end_stamp)


if __name__ == "__main__":
    main()
