"""tests/torch/progs/optimizers.py CASE [ITERS]: training loops with more than one optimizer, for
the step tests on real torch: which optimizer step ends a training step. Prints one JSON line of
what the program computed (the same with and without the agent).

Cases:
  gan       a GAN's iteration: the generator's forward (a boolean-mask index: a sync, and one
            in its backward) before the discriminator's step, the generator's backward and step
            after it; loss.item() every iteration
  three     three optimizers stepping in turn (A, B, C), one .item() each iteration
  renew     one optimizer, made anew every 5 iterations (as a loop that rebuilds it per epoch)
  renew_kept  the same, each old optimizer kept alive in a list
  critic    a WGAN-style loop: the critic steps twice per generator step"""
import json
import sys

import torch

dev = "cuda"


def models(n):
    torch.manual_seed(0)
    return [torch.nn.Linear(8, 8).to(dev) for _ in range(n)]


def gan(iters):
    G, D = models(2)
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
    noise = torch.randn(16, 8, device=dev)
    real = torch.randn(16, 8, device=dev)
    total = 0.0
    for i in range(iters):
        opt_d.zero_grad()
        out = G(noise)
        fake = out[out > 0]  # sync: g_forward
        d_loss = D(real).mean() - D(fake.detach().view(-1, 1).expand(-1, 8)).mean()
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = -D(fake.view(-1, 1).expand(-1, 8)).mean()
        g_loss.backward()  # call: g_backward
        opt_g.step()
        total += g_loss.item()  # sync: item_gan
    return total


def three(iters):
    models_ = models(3)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in models_]
    x = torch.randn(4, 8, device=dev)
    total = 0.0
    for i in range(iters):
        loss = sum(m(x).sum() for m in models_)
        for o in opts:
            o.zero_grad()
        loss.backward()
        for o in opts:
            o.step()
        total += loss.item()  # sync: item_three
    return total


def renew(iters, keep=False):
    (m,) = models(1)
    x = torch.randn(4, 8, device=dev)
    total = 0.0
    opt, kept = None, []
    for i in range(iters):
        if i % 5 == 0:
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            if keep:
                kept.append(opt)
        opt.zero_grad()
        loss = m(x).sum()
        loss.backward()
        opt.step()
        total += loss.item()  # sync: item_renew
    return total


def critic(iters):
    G, D = models(2)
    opt_d = torch.optim.SGD(D.parameters(), lr=1e-3)
    opt_g = torch.optim.SGD(G.parameters(), lr=1e-3)
    noise = torch.randn(16, 8, device=dev)
    total = 0.0
    for i in range(iters):
        for _ in range(2):
            opt_d.zero_grad()
            D(G(noise).detach()).mean().backward()
            opt_d.step()
        opt_g.zero_grad()
        g_loss = -D(G(noise)).mean()
        g_loss.backward()
        opt_g.step()
        total += g_loss.item()  # sync: item_critic
    return total


def main():
    case = sys.argv[1]
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    total = {"gan": gan, "three": three, "renew": renew, "critic": critic,
             "renew_kept": lambda n: renew(n, keep=True)}[case](iters)
    print(json.dumps({"case": case, "iters": iters, "total": round(total, 6)}))


if __name__ == "__main__":
    main()
