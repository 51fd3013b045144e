"""tests/torch/progs/op_hints.py: one case per operation that may make the host wait (every case
of torch's own test_sync_warning in test/test_torch.py, its no-sync cases too, every row of
docs/TORCH.md, the operations of issue 23), each a function whose one line that syncs carries a
`# case: NAME` marker. Every case runs three times, each from a line of its own (so a site's
stack says which run it was): a warm-up (lazy initialisations out of the way), once plain, and
once with torch.cuda.set_sync_debug_mode("warn"), whose warnings are counted; each pass is a
step (syncspy.step()), the set-up before them start-up. Prints one JSON
line per case: {"case", "torch_warnings", "error"}. The expectations are the test's
(tests/torch/test_op_hints.py)."""
import io
import json
import sys
import warnings

import syncspy
import torch
import torch.nn.functional as F

dev = torch.device("cuda")
size = 4
x = torch.rand(size, device=dev)
y = torch.rand((), device=dev)
ind = torch.randint(size, (3,), device=dev)
ind_cpu = ind.cpu()
repeats = torch.full((1,), 2, device=dev)
mask = torch.randint(2, (size,), device=dev, dtype=torch.bool)
labels = torch.randint(0, 10, (64,), device=dev)
host = torch.randn(1024)
host_value = torch.tensor(1.0)  # a 0-dim CPU tensor
pinned = torch.randn(1024).pin_memory()
pinned_out = torch.empty(size).pin_memory()
lin = torch.nn.Linear(size, size).to(dev)
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
encoder = torch.nn.TransformerEncoder(
    torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True),
    num_layers=1, enable_nested_tensor=False).to(dev).eval()
src = torch.randn(2, 5, 8, device=dev)
causal = torch.nn.Transformer.generate_square_subsequent_mask(5, device=dev)
emb = torch.nn.Embedding(10, 4).to(dev)
log_probs = torch.randn(8, 2, 5, device=dev).log_softmax(2)
targets = torch.randint(1, 5, (2, 3), device=dev)
lengths_in = torch.full((2,), 8, device=dev)
lengths_t = torch.full((2,), 3, device=dev)
saved = io.BytesIO()
torch.save({"x": x}, saved)
lstm = torch.nn.LSTM(size, size, num_layers=2, dropout=0.5).to(dev)  # training mode
seq = torch.randn(3, 2, size, device=dev)
lstm(seq)  # its dropout state made here: every pass then frees the one a reseed replaces
conv = torch.nn.Conv2d(3, 4, 3).to(dev)
heights = iter(range(8, 64))  # a new shape each call: cuDNN's benchmark searches each time


# test_sync_warning's expect_sync
def mask_put():
    x[mask] = y  # case: mask_put
def cpu_index_put():
    x[ind_cpu] = y  # case: cpu_index_put
def index_put_host_value():
    x.index_put_((ind,), host_value)  # case: index_put_host_value
def index_put_scalar():
    x[ind] = 1.0  # case: index_put_scalar
def mask_get():
    return x[mask]  # case: mask_get
def cpu_index_get():
    return x[ind_cpu]  # case: cpu_index_get
def nonzero_method():
    return x.nonzero()  # case: nonzero_method
def cond():
    if y:  # case: cond
        return y
    return 2 * y
def one_hot():
    return F.one_hot(ind)  # case: one_hot
def repeat_interleave():
    return torch.repeat_interleave(x, repeats)  # case: repeat_interleave


# test_sync_warning's expect_no_sync
def mask_put_scalar():
    x[mask] = 1.0  # case: mask_put_scalar
def index_put_device():
    x[ind] = y  # case: index_put_device
def index_get_device():
    return x[ind]  # case: index_get_device
def one_hot_num_classes():
    return F.one_hot(ind, num_classes=size)  # case: one_hot_num_classes
def randperm():
    return torch.randperm(20000, device=dev)  # case: randperm
def repeat_interleave_int():
    return torch.repeat_interleave(x, 2, output_size=2 * size)  # case: repeat_interleave_int
def repeat_interleave_output_size():
    return torch.repeat_interleave(x, repeats, output_size=2 * size)  # case: repeat_interleave_output_size
def any_():
    return torch.any(y)  # case: any


# docs/TORCH.md's rows and issue 23's operations
def nonzero():
    return torch.nonzero(x > 0.5)  # case: nonzero
def nonzero_tuple():
    return torch.nonzero(x > 0.5, as_tuple=True)  # case: nonzero_tuple
def where_cond():
    return torch.where(x > 0.5)  # case: where_cond
def argwhere():
    return torch.argwhere(x)  # case: argwhere
def nonzero_static():
    return torch.nonzero_static(x, size=size)  # case: nonzero_static
def unique():
    return torch.unique(labels)  # case: unique
def unique_consecutive():
    return torch.unique_consecutive(labels)  # case: unique_consecutive
def masked_select():
    return torch.masked_select(x, mask)  # case: masked_select
def item():
    return x.sum().item()  # case: item
def float_():
    return float(y)  # case: float
def int_():
    return int(y)  # case: int
def bool_():
    return bool(y)  # case: bool
def is_nonzero():
    return torch.is_nonzero(y)  # case: is_nonzero
def all_bool():
    return bool((x > 0).all())  # case: all_bool
def tolist():
    return x.tolist()  # case: tolist
def format_():
    return f"{y:.3f}"  # case: format
def print_():
    return str(x)  # case: print
def cpu():
    return x.cpu()  # case: cpu
def to_cpu():
    return x.to("cpu")  # case: to_cpu
def d2h_pinned():
    return pinned_out.copy_(x, non_blocking=True)  # case: d2h_pinned
def pageable_h2d():
    return host.to(dev, non_blocking=True)  # case: pageable_h2d
def blocking_h2d():
    return host.to(dev)  # case: blocking_h2d
def list_index_get():
    return x[[0, 2]]  # case: list_index_get
def range_index_put():
    x[range(2), ] = y  # case: range_index_put
def tensor_ctor():
    return torch.tensor([1.0, 2.0], device=dev)  # case: tensor_ctor
def as_tensor():
    return torch.as_tensor([1.0, 2.0], device=dev)  # case: as_tensor
def pinned_h2d():
    return pinned.to(dev, non_blocking=True)  # case: pinned_h2d
def pinned_blocking_h2d():
    return pinned.to(dev)  # case: pinned_blocking_h2d
def pinned_cuda():
    return pinned.cuda()  # case: pinned_cuda
def cuda_call():
    return host.cuda()  # case: cuda_call
def synchronize():
    return torch.cuda.synchronize()  # case: synchronize
def empty_cache():
    big = torch.empty(64 << 20, device=dev)
    del big
    return torch.cuda.empty_cache()  # case: empty_cache
def event_synchronize():
    e = torch.cuda.Event()
    e.record()
    return e.synchronize()  # case: event_synchronize
def stream_synchronize():
    return torch.cuda.current_stream().synchronize()  # case: stream_synchronize
def model_to():
    return torch.nn.Linear(size, size).to(dev)  # case: model_to
def model_cuda():
    return torch.nn.Linear(size, size).cuda()  # case: model_cuda
def model_cpu():
    return torch.nn.Linear(size, size, device=dev).cpu()  # case: model_cpu
def bincount():
    return torch.bincount(ind)  # case: bincount
def histc():
    return torch.histc(x)  # case: histc
def arange():
    return torch.arange(y * 4)  # case: arange
def slice_by_tensor():
    return x[:ind[0]]  # case: slice_by_tensor
def allclose():
    return torch.allclose(x, x)  # case: allclose
def ctc_loss():
    return F.ctc_loss(log_probs, targets, lengths_in, lengths_t)  # case: ctc_loss
def save():
    return torch.save({"x": x}, io.BytesIO())  # case: save
def load():
    return torch.load(io.BytesIO(saved.getvalue()))  # case: load
def rnn_dropout_state():
    torch.cuda.manual_seed(0)  # a reseed: cuDNN draws its dropout state's seed again
    return lstm(seq)  # case: rnn_dropout_state
def rnn_dropout_state_kept():
    return lstm(seq)  # case: rnn_dropout_state_kept
def cudnn_benchmark():
    torch.backends.cudnn.benchmark = True
    try:
        return conv(torch.zeros(1, 3, next(heights), 8, device=dev))  # case: cudnn_benchmark
    finally:
        torch.backends.cudnn.benchmark = False
def clip_grad_norm():
    for p in lin.parameters():
        p.grad = torch.ones_like(p)
    return torch.nn.utils.clip_grad_norm_(lin.parameters(), 1.0, error_if_nonfinite=True)  # case: clip_grad_norm
def clip_grad_norm_default():
    for p in lin.parameters():
        p.grad = torch.ones_like(p)
    return torch.nn.utils.clip_grad_norm_(lin.parameters(), 1.0)  # case: clip_grad_norm_default
def distribution():
    try:  # the simulated device reads the check's result back as False: the check then raises
        return torch.distributions.Normal(x, torch.ones_like(x), validate_args=True)  # case: distribution
    except ValueError:
        return None
def distribution_unchecked():
    return torch.distributions.Normal(x, torch.ones_like(x), validate_args=False)  # case: distribution_unchecked
def save_on_cpu():
    w = torch.ones(size, device=dev, requires_grad=True)
    with torch.autograd.graph.save_on_cpu(pin_memory=False):
        return (w * w).sum()  # case: save_on_cpu
def save_on_cpu_pinned():
    w = torch.ones(size, device=dev, requires_grad=True)
    with torch.autograd.graph.save_on_cpu(pin_memory=True):
        return (w * w).sum()  # case: save_on_cpu_pinned
def grad_scaler():
    opt.zero_grad()
    scaler.scale(lin(x).sum()).backward()
    scaler.step(opt)  # case: grad_scaler
    scaler.update()
def grad_scaler_state():
    return scaler.state_dict()  # case: grad_scaler_state
def transformer_mask():
    return encoder(src, mask=causal)  # case: transformer_mask
def transformer_is_causal():
    return encoder(src, mask=causal, is_causal=True)  # case: transformer_is_causal
def mask_backward():
    p = x.clone().requires_grad_()
    loss = p[mask].sum()  # case: mask_backward
    loss.backward()
def anomaly_backward():
    p = x.clone().requires_grad_()
    with torch.autograd.detect_anomaly(check_nan=True):
        loss = (p * p).sum()
        loss.backward()  # case: anomaly_backward
def gather_backward():
    p = x.clone().requires_grad_()
    loss = torch.gather(p, 0, ind).sum()  # case: gather_backward
    loss.backward()
def index_backward():
    p = x.clone().requires_grad_()
    loss = p[ind].sum()  # case: index_backward
    loss.backward()
def embedding_backward():
    loss = emb(ind).sum()  # case: embedding_backward
    loss.backward()


CASES = [f for name, f in list(globals().items())
         if callable(f) and getattr(f, "__module__", None) == "__main__" and name not in ("main",)
         and f.__code__.co_filename == __file__ and not name.startswith("run_")]


def run_warmup(f):
    return f()  # pass: warmup


def run_plain(f):
    return f()  # pass: plain


def run_warn(f):
    return f()  # pass: warn


def main():
    errors = {}
    syncspy.step()  # the set-up above is start-up; each pass is a step of its own
    for f in CASES:
        try:
            run_warmup(f)
        except Exception as e:  # a case that cannot run here is reported, not hidden
            errors[f.__name__] = repr(e)
    syncspy.step()
    for f in CASES:
        try:
            run_plain(f)
        except Exception as e:
            errors.setdefault(f.__name__, repr(e))
    syncspy.step()
    torch.cuda.set_sync_debug_mode("warn")
    counts = {}
    for f in CASES:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                run_warn(f)
            except Exception as e:
                errors.setdefault(f.__name__, repr(e))
        counts[f.__name__] = sum("called a synchronizing CUDA operation" in str(w.message) for w in caught)
    torch.cuda.set_sync_debug_mode("default")
    syncspy.step()
    for f in CASES:
        name = f.__name__.rstrip("_")
        print(json.dumps({"case": name, "torch_warnings": counts[f.__name__],
                          "error": errors.get(f.__name__)}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
