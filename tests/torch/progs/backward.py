"""tests/torch/progs/backward.py CASE [STEPS]: training loops whose backward pass may sync, one per
case, each step ended by optimizer.step() (so syncspy's optimizer hook sees steps and can
attribute backward syncs to their forward lines). Prints one JSON line of what the program
itself computed (so a run with syncspy can be compared with one without). "# sync:" marks the
forward lines whose backward syncs; "# nograd:" a line that creates no autograd node.

Cases:
  gather_det   torch.gather under torch.use_deterministic_algorithms(True) (seed 000's op)
  embedding    an nn.Embedding lookup
  custom       a custom autograd.Function whose backward calls .item()
  no_grad      a boolean-mask index under torch.no_grad, then one that needs grad
  cpu_mix      a CPU model trained in the same steps as a CUDA loss whose backward syncs
  weakref      whether the step's graph is freed after the step (weak references to it)
  exception    a forward op that raises (caught): the traceback the program sees
  strict       a Tensor subclass whose __torch_function__ raises on any call the program does
               not make itself (and counts them): the calls it received
  ctc          F.ctc_loss with mean and with no reduction on two lines: both create
               CtcLossBackward0 inside the composite (under MeanBackward0 / SumBackward0)
  composite    a custom Function called inside a composite of the program's own (two lines)
  checkpoint   the masked loss under torch.utils.checkpoint (recomputed in backward)
  thread       the masked loss computed in a forward thread of its own, the rest on the
               training thread
  thread_each  the forward on a new thread in every step (44 threads by default: more than the
               agent's 16 forward-thread rings, each ended before the next begins): a masked
               index every step, a custom Function every 3rd step (issue 36 item 5)
  thread_crowd CROWD forward threads alive at once in every step (a barrier), each making one
               masked index, on two lines by the thread's parity: more live threads than rings
  ctc_split    CtcLossBackward0 made at three lines through one composite: mean once, none
               once, none twice on one line (so the lines' true shares are 1:1:2)
  compiled     the masked loss on the output of a torch.compile'd function (backend aot_eager:
               no Triton needed); prints Dynamo's counters
  raises       a custom Function whose backward raises, in the last step (caught): the error
               and every warning the program saw (torch's anomaly mode, which syncspy's
               attribution uses, would warn "Error detected in ...")
  double       a gradient taken with create_graph=True, then backpropagated (nodes made in
               backward)
  late         a custom Function made at one line every step whose backward syncs from step 5
               on (the agent keeps a node's stack where nodes were made in the last 4 backward
               calls' time or a node made there synced: that line's first sync has no forward
               line, its later ones do)
  seqnr        the masked loss, and in each step the sequence numbers torch's profiler gives two
               CPU ops (at::sequence_number::peek, which the agent's interposed get_and_increment
               must keep in step) and their nodes'

Every case prints how many steps saw torch.is_anomaly_enabled() (the agent must not turn it on)."""
import gc
import json
import warnings
import sys
import threading
import traceback
import weakref

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

dev = torch.device("cuda")
CROWD = 20  # thread_crowd's threads alive at once (the agent keeps 16 threads' forward stacks)


class ClampGrad(torch.autograd.Function):
    """Identity forward; its backward reads the gradient's norm on the host (a sync)."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        norm = grad.norm().item()  # sync: custom_backward
        return grad if norm < 1e9 else grad * 0


class Strict(torch.Tensor):
    """Refuses (raises on) every __torch_function__ call but those this program makes itself,
    and counts what it received (refusals included)."""
    calls = {}
    EXPECTED = {"__mul__", "__getitem__", "sum", "__add__", "__gt__", "backward"}
    reading = False  # set by the program around its own attribute reads

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        cls.calls[name] = cls.calls.get(name, 0) + 1
        if name not in cls.EXPECTED and not (name == "__get__" and cls.reading):
            cls.calls["refused"] = cls.calls.get("refused", 0) + 1
            raise RuntimeError(f"Strict: unexpected call {name}")
        return super().__torch_function__(func, types, args, kwargs or {})


class Boom(torch.autograd.Function):
    """Identity forward; its backward raises."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("boom in backward")


class LateSync(torch.autograd.Function):
    """Identity forward; its backward reads the gradient's norm on the host once `syncs` is set."""
    syncs = False

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        if LateSync.syncs:
            grad.norm().item()  # sync: late_backward
        return grad


def masked_loss(pred, target):
    mask = target > 0
    return pred[mask].sum()  # sync: mask_pred


def clamped_norm(x):
    """A composite of the program's own around a custom Function."""
    return (ClampGrad.apply(x) * 2).sum()


def run(case, steps):
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(256, device=dev))
    params = [w]
    emb = cpu = None
    if case == "embedding":
        emb = torch.nn.Embedding(100, 8).to(dev)
        params = list(emb.parameters())
    if case == "cpu_mix":
        cpu = torch.nn.Linear(8, 4)
        params = params + list(cpu.parameters())
    opt = torch.optim.SGD(params, lr=0.01)
    out = {"case": case}
    refs = []
    compiled = None
    out["anomaly_steps"] = 0
    for step in range(steps):
        out["anomaly_steps"] += torch.is_anomaly_enabled()
        target = torch.randint(-1, 3, (256,), device=dev)
        if case == "gather_det":
            torch.use_deterministic_algorithms(True)
            idx = torch.randperm(256, device=dev)
            loss = torch.gather(w, 0, idx).sum()  # sync: gather
        elif case == "embedding":
            idx = torch.randint(0, 100, (64,), device=dev)
            loss = emb(idx).sum()  # sync: embedding
        elif case == "custom":
            loss = ClampGrad.apply(w * 2).sum()  # sync: custom
        elif case == "no_grad":
            with torch.no_grad():
                seen = w[target > 1]  # nograd: masked
            loss = masked_loss(w, target) + seen.sum()
        elif case == "cpu_mix":
            g = torch.Generator().manual_seed(step)
            x, y = torch.randn(16, 8, generator=g), torch.randn(16, 4, generator=g)
            loss = masked_loss(w, target) + ((cpu(x) - y) ** 2).mean().to(dev)
        elif case == "weakref":
            pred = w * 3
            refs.append(weakref.ref(pred))
            loss = masked_loss(pred, target)
            del pred
        elif case == "strict":
            x = (w * 1).as_subclass(Strict)
            loss = masked_loss(x, target)  # sync: strict
            if step == 0:
                Strict.reading = True
                out["grad_fn"] = type(x.grad_fn).__name__  # the program's own read
                Strict.reading = False
        elif case == "ctc":
            lp = w.view(16, 2, 8).log_softmax(2)
            tgt = torch.randint(1, 8, (2, 5), device=dev)
            il = torch.full((2,), 16, dtype=torch.long, device=dev)
            tl = torch.full((2,), 5, dtype=torch.long, device=dev)
            loss = F.ctc_loss(lp, tgt, il, tl)  # sync: ctc_mean
            loss = loss + F.ctc_loss(lp, tgt, il, tl, reduction="none").sum()  # sync: ctc_none
        elif case == "ctc_split":
            lp = w.view(16, 2, 8).log_softmax(2)
            tgt = torch.randint(1, 8, (2, 5), device=dev)
            il = torch.full((2,), 16, dtype=torch.long, device=dev)
            tl = torch.full((2,), 5, dtype=torch.long, device=dev)
            loss = F.ctc_loss(lp, tgt, il, tl)  # sync: split_mean
            loss = loss + F.ctc_loss(lp, tgt, il, tl, reduction="none").sum()  # sync: split_none
            loss = loss + F.ctc_loss(lp, tgt, il, tl, reduction="none").sum() + F.ctc_loss(lp, tgt, il, tl, reduction="none").sum()  # sync: split_twice
        elif case == "compiled":
            if compiled is None:
                compiled = torch.compile(lambda x: (x * 2).sin(), backend="aot_eager")
            loss = masked_loss(compiled(w), target)  # sync: compiled
        elif case == "composite":
            loss = clamped_norm(w) + clamped_norm(w * 3)  # sync: composite
            loss = loss + clamped_norm(w * 2)  # sync: composite2
        elif case == "checkpoint":
            ckpt = torch.utils.checkpoint.checkpoint
            loss = ckpt(masked_loss, w * 1, target, use_reentrant=False)  # sync: checkpoint
        elif case == "thread":
            box = {}
            t = threading.Thread(target=lambda: box.update(l=masked_loss(w * 1, target)))  # sync: thread
            t.start()
            t.join()
            loss = box["l"] + (w * 2).sum()  # sync: thread_join
        elif case == "thread_each":
            box = {}

            def forward():
                x = w[target > 0].sum()  # sync: each_mask
                if step % 3 == 0:
                    x = x + ClampGrad.apply(w * 2).sum()  # sync: each_custom
                box["l"] = x
            t = threading.Thread(target=forward, name=f"forward-{step}")
            t.start()
            t.join()
            loss = box["l"]
        elif case == "thread_crowd":
            barrier = threading.Barrier(CROWD)
            parts = [None] * CROWD

            def forward(i):
                barrier.wait()  # every thread alive before any makes a node
                if i % 2 == 0:
                    parts[i] = w[target > 0].sum()  # sync: crowd_even
                else:
                    parts[i] = (w * 2)[target > 1].sum()  # sync: crowd_odd
            ts = [threading.Thread(target=forward, args=(i,)) for i in range(CROWD)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            loss = sum(parts)
        elif case == "raises":
            loss = masked_loss(w, target)
            if step == steps - 1:
                bad = (Boom.apply(w * 1) * 2).sum()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        bad.backward()
                    except ValueError as e:
                        out["error"] = str(e)
                out["warnings"] = [str(c.message) for c in caught]
        elif case == "double":
            g, = torch.autograd.grad((w * w).sum(), w, create_graph=True)
            loss = masked_loss(w, target) + (g * g).sum()
        elif case == "late":
            LateSync.syncs = step >= 5
            loss = LateSync.apply(w * 2).sum()  # sync: late
        elif case == "seqnr":
            loss = masked_loss(w, target)
            c = torch.ones(4, requires_grad=True)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                a = c * 2
                b = a * 3
            seq = [e.sequence_nr for e in prof.events() if e.name == "aten::mul"]
            out.setdefault("seq", []).append([seq, a.grad_fn._sequence_nr(), b.grad_fn._sequence_nr()])
        elif case == "exception":
            loss = masked_loss(w, target)
            try:
                torch.cat([w.view(16, 16), w.view(8, 32)])  # shapes do not match: raises
            except RuntimeError:
                out["traceback"] = [line.strip() for line in traceback.format_exc().splitlines()]
        opt.zero_grad()
        loss.backward()  # call: backward
        opt.step()
    if case == "compiled":  # what Dynamo did: the same with and without the agent
        from torch._dynamo.utils import counters
        out["dynamo"] = {k: dict(sorted(counters[k].items()))
                         for k in ("frames", "graph_break", "recompiles", "unimplemented", "stats")}
    if case == "cpu_mix":
        out["cpu_weights"] = [round(v, 6) for v in cpu.weight.detach().flatten().tolist()]
    if case == "strict":
        out["calls"] = dict(sorted(Strict.calls.items()))
    if case == "weakref":
        del loss
        gc.collect()
        out["alive"] = sum(r() is not None for r in refs)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 6)
