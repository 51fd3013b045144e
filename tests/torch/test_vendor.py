"""Real PyTorch 2.15 on the simulated cuBLAS, cuBLASLt and cuDNN (sim/vendor/, sim/README.md):
what a user sees. nn.Linear, matmul, bmm, addmm, nn.Conv2d (channels_last, autocast float16 and
bfloat16), BatchNorm2d, LSTM run forward and backward with the right shapes and exit 0; an
operation's device time, read with torch.cuda.Event as a user would, is the documented formula
(launch cost + flops at the rate of its types, or bytes at the device memory speed); cuDNN's
benchmark mode times its candidate plans (syncs) once; the legacy API path runs too. The vision
models (timm's VisionTransformer with patch dropout under deterministic algorithms, torchvision's
ResNet-34) need the vision venv (`make torch-vision-venv`, or TORCH_VISION_PYTHON): without it
those tests fail, never skip. Their forward pass's device time changes between TF32 and FP32 by
exactly the GEMM and convolution flops that torch's FlopCounterMode counts times the rates'
difference."""
import json
import os
import unittest

import harness

VISION_PYTHON = os.environ.get("TORCH_VISION_PYTHON") or os.path.join(
    harness.BUILD, "vision-venv", "bin", "python")

LAUNCH_NS = 1000              # SIMCUDA_KERNEL_NS: the launch cost of every kernel
TFLOPS = {"fp32": 50, "tf32": 400, "fp16": 800}
DEVICE_BYTES_PER_NS = 2000    # SIMCUDA_DEVICE_GBPS default


def gemm_ns(flops, rate):
    return LAUNCH_NS + flops / (TFLOPS[rate] * 1000)


# What every program shares: the device time of a piece of work (queued behind a long kernel,
# so that none of the host's enqueueing time falls inside it), the host's syncs so far (the
# simulator's ground truth), one JSON line of results.
PRELUDE = r'''
import ctypes, json, sys, torch
# the simulator's runtime: libcudart.so.12 under a CUDA 12 torch (build/sim12)
sim = ctypes.CDLL("libcudart.so." + torch.version.cuda.split(".")[0])
for f in ("simcuda_thread_sync_count", "simcuda_now_ns", "simcuda_stream_ready_ns"):
    getattr(sim, f).restype = ctypes.c_ulonglong
sim.simcuda_stream_ready_ns.argtypes = [ctypes.c_void_p]
sim.simcuda_set_default_kernel_ns.argtypes = [ctypes.c_ulonglong]

def syncs():
    return sim.simcuda_thread_sync_count()

def device_ns(fn, hold_ns=1_000_000_000):
    """Device time of fn's work in ns (fn must not sync)."""
    torch.cuda.synchronize()
    sim.simcuda_set_default_kernel_ns(hold_ns)
    torch.cuda._sleep(1)                      # one kernel of hold_ns on the current stream
    sim.simcuda_set_default_kernel_ns(1000)
    held_until = sim.simcuda_stream_ready_ns(None)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s0 = syncs()
    a.record(); out = fn(); b.record()
    assert syncs() == s0, "the measured work synchronized"
    assert sim.simcuda_now_ns() < held_until, "enqueueing outlasted the held stream"
    b.synchronize()
    return a.elapsed_time(b) * 1e6, out

results = {}
def done():
    print(json.dumps(results))
'''


def run_program(body, python=None, env=None, timeout=600):
    """Runs PRELUDE + body on real torch over the simulator; returns its JSON results (an
    AssertionError with the program's output when it fails)."""
    r = harness.python_code(PRELUDE + body + "\ndone()\n", env=env, preload=False,
                            python=python, timeout=timeout)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0 or not lines:
        raise AssertionError(f"exit status {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    return json.loads(lines[-1])


GEMMS = r'''
dev = "cuda"
lin = torch.nn.Linear(1024, 512).to(dev)
x = torch.randn(64, 1024, device=dev, requires_grad=True)
y = lin(x); y.sum().backward()
results["linear"] = [list(y.shape), list(x.grad.shape), list(lin.weight.grad.shape), list(lin.bias.grad.shape)]
a = torch.randn(8, 128, 64, device=dev, requires_grad=True); b = torch.randn(8, 64, 32, device=dev, requires_grad=True)
z = torch.bmm(a, b); (a @ b).sum().backward()
results["bmm"] = [list(z.shape), list(a.grad.shape), list(b.grad.shape)]
results["addmm"] = list(torch.addmm(torch.zeros(3, 5, device=dev), torch.ones(3, 4, device=dev), torch.ones(4, 5, device=dev)).shape)
results["matmul_1d"] = list((torch.randn(7, 5, device=dev) @ torch.randn(5, device=dev)).shape)
m = torch.randn(4096, 4096, device=dev); h = m.half()
w = torch.nn.Linear(4096, 2048, bias=False).to(dev); xs = torch.randn(512, 4096, device=dev)
a3 = torch.randn(16, 512, 256, device=dev); b3 = torch.randn(16, 256, 1024, device=dev)
m @ m; h @ h; w(xs); torch.bmm(a3, b3)                  # first calls make the handles
torch.backends.cuda.matmul.allow_tf32 = False
results["mm_fp32"] = device_ns(lambda: m @ m)[0]
results["linear_fp32"] = device_ns(lambda: w(xs))[0]
results["bmm_fp32"] = device_ns(lambda: torch.bmm(a3, b3))[0]
results["mm_fp16"] = device_ns(lambda: h @ h)[0]
torch.backends.cuda.matmul.allow_tf32 = True
results["mm_tf32"] = device_ns(lambda: m @ m)[0]
'''


class Gemms(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = run_program(GEMMS)

    def test_shapes_forward_and_backward(self):
        self.assertEqual(self.r["linear"], [[64, 512], [64, 1024], [512, 1024], [512]])
        self.assertEqual(self.r["bmm"], [[8, 128, 32], [8, 128, 64], [8, 64, 32]])
        self.assertEqual(self.r["addmm"], [3, 5])
        self.assertEqual(self.r["matmul_1d"], [7])

    def test_device_time_is_the_formula(self):
        n = 4096
        cases = {"mm_fp32": gemm_ns(2 * n ** 3, "fp32"), "mm_tf32": gemm_ns(2 * n ** 3, "tf32"),
                 "mm_fp16": gemm_ns(2 * n ** 3, "fp16"),
                 "linear_fp32": gemm_ns(2 * 512 * 4096 * 2048, "fp32"),
                 "bmm_fp32": gemm_ns(2 * 16 * 512 * 256 * 1024, "fp32")}
        for name, want in cases.items():
            with self.subTest(name):
                self.assertAlmostEqual(self.r[name], want, delta=2, msg=name)


CONVS = r'''
dev = "cuda"
conv = torch.nn.Conv2d(3, 16, 3, padding=1).to(dev)
x = torch.randn(8, 3, 32, 32, device=dev, requires_grad=True)
y = conv(x); y.sum().backward()
results["conv"] = [list(y.shape), list(x.grad.shape), list(conv.weight.grad.shape)]
cl = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1).to(dev).to(memory_format=torch.channels_last)
xc = torch.randn(4, 16, 32, 32, device=dev).to(memory_format=torch.channels_last).requires_grad_()
yc = cl(xc); yc.sum().backward()
results["channels_last"] = [list(yc.shape), yc.is_contiguous(memory_format=torch.channels_last),
                            xc.grad.is_contiguous(memory_format=torch.channels_last)]
for dt in (torch.float16, torch.bfloat16):
    with torch.autocast("cuda", dtype=dt):
        ya = cl(xc)
    ya.float().sum().backward()
    results[str(dt)] = [str(ya.dtype), list(ya.shape), str(cl.weight.grad.dtype)]
bn = torch.nn.BatchNorm2d(16).to(dev).train()
xb = torch.randn(8, 16, 20, 20, device=dev, requires_grad=True)
yb = bn(xb); yb.sum().backward()
results["batchnorm"] = [list(yb.shape), list(xb.grad.shape), list(bn.weight.grad.shape)]
lstm = torch.nn.LSTM(32, 64, num_layers=2, bidirectional=True).to(dev)
xl = torch.randn(10, 4, 32, device=dev, requires_grad=True)
yl, (hl, cl_) = lstm(xl); yl.sum().backward()
results["lstm"] = [list(yl.shape), list(hl.shape), list(xl.grad.shape)]
c = torch.nn.Conv2d(64, 128, 3, padding=1, bias=False).to(dev); xt = torch.randn(16, 64, 56, 56, device=dev)
c(xt)
results["conv_tf32"] = device_ns(lambda: c(xt))[0]
torch.backends.cudnn.allow_tf32 = False
c(xt)
results["conv_fp32"] = device_ns(lambda: c(xt))[0]
ch, xh = c.half(), xt.half(); ch(xh)
results["conv_fp16"] = device_ns(lambda: ch(xh))[0]
b2 = torch.nn.BatchNorm2d(64).to(dev).train(); xt = xt.float(); b2(xt)
results["bn"] = device_ns(lambda: b2(xt))[0]
'''


class ConvolutionsAndNormalization(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = run_program(CONVS)

    def test_shapes_forward_and_backward(self):
        self.assertEqual(self.r["conv"], [[8, 16, 32, 32], [8, 3, 32, 32], [16, 3, 3, 3]])
        self.assertEqual(self.r["channels_last"], [[4, 32, 16, 16], True, True])
        self.assertEqual(self.r["torch.float16"], ["torch.float16", [4, 32, 16, 16], "torch.float32"])
        self.assertEqual(self.r["torch.bfloat16"], ["torch.bfloat16", [4, 32, 16, 16], "torch.float32"])
        self.assertEqual(self.r["batchnorm"], [[8, 16, 20, 20], [8, 16, 20, 20], [16]])
        self.assertEqual(self.r["lstm"], [[10, 4, 128], [4, 4, 64], [10, 4, 32]])

    def test_device_time_is_the_formula(self):
        flops = 2 * 16 * 128 * 56 * 56 * 64 * 9  # the implied GEMM: 2 N K out C taps
        for name, rate in (("conv_tf32", "tf32"), ("conv_fp32", "fp32"), ("conv_fp16", "fp16")):
            with self.subTest(name):
                self.assertAlmostEqual(self.r[name], gemm_ns(flops, rate), delta=2)
        # Training batch norm reads x twice and writes y at the device memory speed; torch adds
        # one small kernel of its own (num_batches_tracked += 1).
        bn = LAUNCH_NS + 3 * 16 * 64 * 56 * 56 * 4 / DEVICE_BYTES_PER_NS
        self.assertAlmostEqual(self.r["bn"], bn + LAUNCH_NS, delta=2)


BENCHMARK = r'''
torch.backends.cudnn.benchmark = True
conv = torch.nn.Conv2d(32, 64, 3, padding=1).cuda()
x = torch.randn(8, 32, 28, 28, device="cuda", requires_grad=True)
s0 = syncs(); y = conv(x); s1 = syncs(); y2 = conv(x); s2 = syncs()
y2.sum().backward()
results["shape"] = list(y.shape)
results["first_call_syncs"] = s1 - s0
results["second_call_syncs"] = s2 - s1
'''


ATTENTION = r'''
import torch.nn.functional as F
q = torch.randn(4, 8, 128, 64, device="cuda", dtype=torch.float16, requires_grad=True)
o = F.scaled_dot_product_attention(q, q, q, is_causal=True); o.sum().backward()
results["shapes"] = [list(o.shape), str(o.dtype), list(q.grad.shape)]
with torch.no_grad():
    F.scaled_dot_product_attention(q, q, q)
    results["forward"] = device_ns(lambda: F.scaled_dot_product_attention(q, q, q))[0]
'''


class CudnnAttention(unittest.TestCase):
    def test_sdpa_on_cudnn_graphs(self):
        """torch 2.15 runs float16 attention on cuDNN's backend graphs by default (its frontend,
        built for cuDNN 9.26, uses descriptor and attribute types newer than the 9.19 headers):
        forward and backward run; the forward is one kernel of 4 B H S S D flops."""
        r = run_program(ATTENTION)
        self.assertEqual(r["shapes"], [[4, 8, 128, 64], "torch.float16", [4, 8, 128, 64]])
        self.assertAlmostEqual(r["forward"], gemm_ns(4 * 4 * 8 * 128 * 128 * 64, "fp16"), delta=2)


class CudnnBenchmark(unittest.TestCase):
    def test_plans_are_timed_once(self):
        r = run_program(BENCHMARK)
        self.assertEqual(r["shape"], [8, 64, 28, 28])
        # The frontend runs each candidate plan between device synchronizations and event
        # waits; the chosen plan is cached for the second call.
        self.assertGreater(r["first_call_syncs"], 0)
        self.assertEqual(r["second_call_syncs"], 0)


LEGACY = r'''
conv = torch.nn.Conv2d(64, 128, 3, padding=1, bias=False).cuda()
x = torch.randn(16, 64, 56, 56, device="cuda", requires_grad=True)
y = conv(x); y.sum().backward()
results["shapes"] = [list(y.shape), list(x.grad.shape), list(conv.weight.grad.shape)]
results["conv_tf32"] = device_ns(lambda: conv(x.detach()))[0]
torch.backends.cudnn.benchmark = True
results["benchmark_shape"] = list(conv(x.detach()).shape)
'''


class CudnnLegacyApi(unittest.TestCase):
    def test_v7_path(self):
        """TORCH_CUDNN_V8_API_DISABLED=1: torch's cudnnConvolutionForward path (algorithm
        heuristics, Find*Ex in benchmark mode) on the legacy descriptors."""
        r = run_program(LEGACY, env={"TORCH_CUDNN_V8_API_DISABLED": "1"})
        self.assertEqual(r["shapes"], [[16, 128, 56, 56], [16, 64, 56, 56], [128, 64, 3, 3]])
        self.assertEqual(r["benchmark_shape"], [16, 128, 56, 56])
        self.assertAlmostEqual(r["conv_tf32"], gemm_ns(2 * 16 * 128 * 56 * 56 * 64 * 9, "tf32"), delta=2)


# The vendor libraries' flops of fn (what the simulator times by flops; attention and the rest
# run as torch's own kernels).
VISION_PRELUDE = r'''
import math, time
from torch.utils.flop_counter import FlopCounterMode
VENDOR_OPS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.convolution",
              "aten.convolution_backward")

def vendor_flops(fn):
    with FlopCounterMode(display=False) as fc:
        fn()
    return {str(k): v for k, v in fc.get_flop_counts()["Global"].items() if str(k) in VENDOR_OPS}

def train_steps(model, x, target, steps):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(model(x), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e9)
    return loss, times

def forward_times(model, x):
    """Device time of a forward pass with TF32 on and off (cuBLAS and cuDNN)."""
    out = {}
    for tf32 in (True, False):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        model(x)
        out["tf32" if tf32 else "fp32"] = device_ns(lambda: model(x))[0]
    return out
'''

VIT = r'''
import timm
torch.use_deterministic_algorithms(True)
model = timm.models.VisionTransformer(img_size=64, patch_size=8, embed_dim=384, depth=4,
                                      num_heads=6, num_classes=10, patch_drop_rate=0.5).cuda()
x = torch.randn(32, 3, 64, 64, device="cuda"); target = torch.randint(0, 10, (32,), device="cuda")
torch.manual_seed(0)
results["flops"] = vendor_flops(lambda: torch.nn.functional.cross_entropy(model(x), target).backward())
loss, times = train_steps(model, x, target, 3)
results["loss"] = [list(loss.shape), math.isfinite(loss.item())]
results["logits"] = list(model(x).shape)
results["step_ns"] = times
results["forward_flops"] = vendor_flops(lambda: model(x))
results["forward"] = forward_times(model, x)
'''

RESNET = r'''
import torchvision
model = torchvision.models.resnet34(num_classes=10).cuda()
x = torch.randn(8, 3, 64, 64, device="cuda"); target = torch.randint(0, 10, (8,), device="cuda")
results["flops"] = vendor_flops(lambda: torch.nn.functional.cross_entropy(model(x), target).backward())
loss, times = train_steps(model, x, target, 3)
results["loss"] = [list(loss.shape), math.isfinite(loss.item())]
results["logits"] = list(model(x).shape)
results["step_ns"] = times
model = model.to(memory_format=torch.channels_last); xc = x.to(memory_format=torch.channels_last)
with torch.autocast("cuda", dtype=torch.float16):
    results["amp_logits"] = [list(model(xc).shape), str(model(xc).dtype)]
results["forward_flops"] = vendor_flops(lambda: model(x))
results["forward"] = forward_times(model, x)
'''


def rate_difference_ns(flops):
    """How much longer flops take at FP32 than at TF32, in ns."""
    return flops / (TFLOPS["fp32"] * 1000) - flops / (TFLOPS["tf32"] * 1000)


class VisionModels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(VISION_PYTHON, os.X_OK):
            raise AssertionError(f"no vision venv at {VISION_PYTHON}: run `make torch-vision-venv` "
                                 "(or set TORCH_VISION_PYTHON to a python with torch 2.15, "
                                 "torchvision 0.29.2 and timm 1.0.31)")

    def run_model(self, body, env=None):
        return run_program(VISION_PRELUDE + body, python=VISION_PYTHON, env=env, timeout=900)

    def check_model(self, r, classes):
        self.assertEqual(r["logits"][1], classes)
        self.assertEqual(r["loss"], [[], True])
        # A step takes at least its GEMMs' and convolutions' device time at torch's default
        # precisions (cuBLAS FP32: matmul TF32 is off; cuDNN TF32: on): the formula's floor.
        conv = sum(v for k, v in r["flops"].items() if "convolution" in k)
        gemm = sum(r["flops"].values()) - conv
        floor = gemm / (TFLOPS["fp32"] * 1000) + conv / (TFLOPS["tf32"] * 1000)
        for ns in r["step_ns"]:
            self.assertGreaterEqual(ns, floor)
        # The forward pass's device time: TF32 saves exactly its vendor flops' rate difference.
        saved = r["forward"]["fp32"] - r["forward"]["tf32"]
        want = rate_difference_ns(sum(r["forward_flops"].values()))
        self.assertAlmostEqual(saved, want, delta=max(200, want * 1e-5), msg=r["forward"])

    def test_vit_patch_dropout_deterministic_training_step(self):
        r = self.run_model(VIT, env={"CUBLAS_WORKSPACE_CONFIG": ":4096:8"})
        self.assertEqual(r["logits"], [32, 10])
        self.assertGreater(r["flops"]["aten.addmm"], 0)
        self.check_model(r, 10)

    def test_resnet34_training_step(self):
        r = self.run_model(RESNET)
        self.assertEqual(r["logits"], [8, 10])
        self.assertEqual(r["amp_logits"], [[8, 10], "torch.float16"])
        self.assertGreater(r["flops"]["aten.convolution"], 0)
        self.check_model(r, 10)


if __name__ == "__main__":
    unittest.main()
