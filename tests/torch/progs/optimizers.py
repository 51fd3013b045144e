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
  critic    a WGAN-style loop: the critic steps twice per generator step
  every4    optimizer A steps every iteration, B every 4th (after A)
  lazy_reg  StyleGAN2's lazy regularization: G steps, D steps, and every 4th iteration D steps
            again (its R1 penalty)
  sequential  forward-forward training (pytorch/examples mnist_forward_forward): each of 3
            layers has its own optimizer and is trained alone, one layer after another
  threads   9 threads, each training its own model with its own optimizer (all kept to the end)"""
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


def every4(iters):
    A, B = models(2)
    opt_a = torch.optim.SGD(A.parameters(), lr=0.1)
    opt_b = torch.optim.SGD(B.parameters(), lr=0.1)
    x = torch.randn(4, 8, device=dev)
    total = 0.0
    for i in range(iters):
        opt_a.zero_grad()
        opt_b.zero_grad()
        loss = A(x).sum() + B(x).sum()
        loss.backward()
        opt_a.step()
        if i % 4 == 3:
            opt_b.step()
        total += loss.item()  # sync: item_every4
    return total


def lazy_reg(iters):
    G, D = models(2)
    opt_g = torch.optim.SGD(G.parameters(), lr=1e-3)
    opt_d = torch.optim.SGD(D.parameters(), lr=1e-3)
    noise = torch.randn(16, 8, device=dev)
    real = torch.randn(16, 8, device=dev)
    total = 0.0
    for i in range(iters):
        opt_g.zero_grad()
        g_loss = -D(G(noise)).mean()
        g_loss.backward()
        opt_g.step()
        opt_d.zero_grad()
        (D(G(noise).detach()).mean() - D(real).mean()).backward()
        opt_d.step()
        if i % 4 == 0:
            opt_d.zero_grad()
            (D(real) ** 2).mean().backward()
            opt_d.step()
        total += g_loss.item()  # sync: item_lazy
    return total


def sequential(iters):
    layers = models(3)
    x = torch.randn(4, 8, device=dev)
    total = 0.0
    per = iters // len(layers)
    for layer in layers:
        opt = torch.optim.SGD(layer.parameters(), lr=0.1)
        layer.opt = opt  # kept, as forward-forward's layers keep theirs
        for i in range(per):
            opt.zero_grad()
            loss = layer(x).pow(2).mean()
            loss.backward()
            opt.step()
            total += loss.item()  # sync: item_sequential
        x = layer(x).detach()
    return total


def threads(iters):
    import threading
    ms = models(9)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in ms]  # kept to the end
    out = [0.0] * len(ms)

    def train(k):
        m, opt = ms[k], opts[k]
        x = torch.randn(4, 8, device=dev)
        for i in range(iters):
            opt.zero_grad()
            loss = m(x).sum()
            loss.backward()
            opt.step()
            out[k] += loss.item()  # sync: item_threads

    ts = [threading.Thread(target=train, args=(k,)) for k in range(len(ms))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(out)


def main():
    case = sys.argv[1]
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    total = {"gan": gan, "three": three, "renew": renew, "critic": critic,
             "renew_kept": lambda n: renew(n, keep=True), "every4": every4, "lazy_reg": lazy_reg,
             "sequential": sequential, "threads": threads}[case](iters)
    print(json.dumps({"case": case, "iters": iters, "total": round(total, 6)}))


if __name__ == "__main__":
    main()
