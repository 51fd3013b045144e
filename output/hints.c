/* output/hints.c: the rules that read a site's stack (see hints.h): which frames belong to the
 * runtime and frameworks (CUDA, PyTorch, CPython, the C/C++ runtime, syncspy) and which to the
 * user, and the hint table. Pure: no state, no I/O; unit-tested in tests/unit/test_hints.c. */
#include "output/hints.h"
#include "output/backward.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/compiler.h"
#include "common/gencode.h"

/* ---- the operator a sync belongs to, and what to do about it -------------------------------
 * One table keyed by exact names (shared/STYLE.md, "Rules as data"): a Python function of torch
 * (or of a training framework) by module and qualified name, a native function of torch's Python
 * bindings by its name, an ATen operator by its schema name (aten::name.overload; the stack shows
 * the dispatcher's at::_ops::name_overload::call), or a CUDA API. hints_op() tries, in this
 * order, the Python frames from the user frame inwards, the native frames likewise, the ATen
 * operators from the outermost (the one the user called) inwards, then the API; an ATen rule may
 * also require the innermost operator (the one that made the wait: nonzero for a boolean mask,
 * copy_ for a CPU index copied to the device). Each row has a test in tests/unit/test_hints.c
 * and a case on real torch in tests/torch/progs/op_hints.py. */
enum key_kind { KEY_PYTHON, KEY_NATIVE, KEY_ATEN, KEY_API };

struct op_rule {
    enum key_kind kind;
    const char *key;   /* exact: "torch.serialization.save", "torch::autograd::THPVariable_item",
                        * "aten::index.Tensor", "cudaFree" */
    const char *inner; /* KEY_ATEN: the innermost operator must be this one; KEY_NATIVE: the
                        * function the keyed frame called; KEY_PYTHON: the native function (past
                        * the interpreter's) the keyed frame called (NULL: any) */
    const char *op;    /* what the report calls it */
    const char *hint;
    bool cause; /* KEY_NATIVE: the wait's own cause wherever it runs (a backward pass
                        * too), looked up before anything else */
};

#define PAGEABLE_COPY_HINT                                                                \
    "a synchronous (or pageable-memory) copy blocks the host: copy into a pinned buffer " \
    "(pin_memory()) with non_blocking=True and read the result a step later"
#define NONZERO_HINT(what)                                                                         \
    what " syncs to size its output: use torch.nonzero_static(x, size=n) (a fixed size, padded), " \
         "or keep the full tensor and select with torch.where(cond, a, b) / a mask"
#define UNIQUE_HINT(what)                                                                        \
    what " syncs to size its output: when the values are bounded (class ids below C), count on " \
         "the device (torch.zeros(C).scatter_add_(0, t, ones), or F.one_hot(t, num_classes=C)"   \
         ".sum(0)) and keep the result there"
#define ITEM_HINT                                                                                \
    ".item() copies a scalar to the host: keep the value on the device (accumulate losses in a " \
    "tensor) and read it every N steps for logging"
#define FREE_HINT                                                                               \
    "cudaFree synchronizes the device: caching allocator churn (empty_cache, changing shapes, " \
    "memory pressure): keep shapes stable, do not empty the cache in the loop"
#define EVENT_HINT                                                                              \
    "Event.synchronize blocks the host until the event completes: poll with event.query(), or " \
    "order the work on the device with stream.wait_event(event)"
#define BOOL_HINT                                                                                  \
    "if t: / bool(t) / assert t reads a CUDA tensor on the host: keep the decision on the device " \
    "(torch.where(t, a, b)), check with torch._assert_async(t), or test once outside the step"
#define VALIDATE_HINT                                                                            \
    "distribution argument validation checks every parameter (and sample) on the host: pass "    \
    "validate_args=False, or torch.distributions.Distribution.set_default_validate_args(False) " \
    "for training"
#define LIGHTNING_BATCH_HINT                                                                   \
    "Lightning's batch transfer (move_data_to_device) copies each batch from pageable memory " \
    "because the DataLoader has pin_memory=False: pass pin_memory=True to your DataLoader"
#define LIGHTNING_LOG_HINT                                                                      \
    "self.log(name, value) moves the name's metric state to the value's device the first time " \
    "it is logged, a copy from pageable memory that waits (once per name, not per step): log "  \
    "fewer names, or a Python number where you have one"
#define LIGHTNING_TEARDOWN_HINT                                                                 \
    "at the end of fit Lightning moves the logged metrics to the CPU and waits for each: once " \
    "per run, outside the training steps; nothing to change for speed"
#define LIGHTNING_MOVE_HINT                                                                       \
    "Lightning's move_data_to_device copied tensors between host and device and waited: a host "  \
    "tensor from pageable memory or a copy to the CPU; pin host tensors (pin_memory()) and keep " \
    "values on the device"
#define MASK_PUT_HINT                                                                          \
    "x[mask] = v with a tensor v sizes its index on the host: use x.masked_fill_(mask, v) or " \
    "torch.where(mask, v, x) (a Python number v does not sync)"
#define CPU_INDEX_HINT(what)                                                                      \
    what " with a CPU index copies the index to the device from pageable memory and waits: "      \
         "create the index on the device (device=... where it is built, or move it once outside " \
         "the loop)"

static const struct op_rule op_rules[] = {
    /* torch's own Python: the API the user called, found by its frames */
    {KEY_PYTHON, "torch.amp.grad_scaler.GradScaler._maybe_opt_step", NULL, "GradScaler.step",
     "GradScaler.step reads found_inf on the host every step (to skip steps with inf/NaN "
     "gradients): autocast to bfloat16 needs no GradScaler; with float16 this is its price"},
    {KEY_PYTHON, "torch.amp.grad_scaler.GradScaler.state_dict", NULL, "GradScaler.state_dict",
     "GradScaler.state_dict() reads the scale and the growth tracker on the host (an .item() "
     "each): call it only when you checkpoint, not every step"},
    {KEY_PYTHON, "torch.nn.utils.clip_grad.clip_grad_norm_", NULL,
     "clip_grad_norm_(error_if_nonfinite=True)",
     "clip_grad_norm_(error_if_nonfinite=True) reads the total norm on the host every step: leave "
     "error_if_nonfinite=False and test torch.isfinite(norm) on the device (or every N steps)"},
    {KEY_PYTHON, "torch.distributions.distribution.Distribution.__init__", NULL,
     "Distribution(validate_args)", VALIDATE_HINT},
    {KEY_PYTHON, "torch.distributions.distribution.Distribution._validate_sample", NULL,
     "Distribution._validate_sample", VALIDATE_HINT},
    {KEY_PYTHON, "torch.distributions.distribution.Distribution._validate_args", NULL,
     "Distribution._validate_args", VALIDATE_HINT},
    {KEY_PYTHON, "torch._tensor.Tensor.__format__", NULL, "Tensor.__format__",
     "f\"{t:.3f}\" of a CUDA tensor reads it on the host (.item()): format a value read every N "
     "steps, or accumulate on the device and format once"},
    {KEY_PYTHON, "torch._tensor.Tensor.__repr__", NULL, "Tensor.__repr__",
     "printing a CUDA tensor (print(t), str(t), repr(t)) copies it to the host: print less "
     "often, or print values gathered on the device over many steps"},
    {KEY_PYTHON, "torch.serialization.save", NULL, "torch.save",
     "torch.save copies each CUDA storage to the host and waits: checkpoint less often, or copy "
     "the state into pinned CPU tensors with non_blocking=True and save those (or "
     "torch.distributed.checkpoint.async_save)"},
    {KEY_PYTHON, "torch.serialization.load", NULL, "torch.load",
     "torch.load puts each storage saved from CUDA back on the device with a copy from pageable "
     "memory and waits for each: load with map_location=\"cpu\" and move the state over once "
     "(or load_state_dict into a model already on the device), out of the training loop"},
    {KEY_PYTHON, "torchvision.utils.save_image", NULL, "torchvision.utils.save_image",
     "save_image copies the image grid to the host and waits (.to(\"cpu\")): save images every N "
     "steps or after the loop, or copy them into pinned memory with non_blocking=True and save "
     "from there a step later"},
    {KEY_PYTHON, "torch.cuda.streams.Event.synchronize", NULL, "Event.synchronize", EVENT_HINT},
    {KEY_PYTHON, "torch.cuda.streams.Stream.synchronize", NULL, "Stream.synchronize",
     "Stream.synchronize blocks the host until the stream's work is done: order streams on the "
     "device (other.wait_stream(stream)) and keep the host wait out of the step"},
    {KEY_PYTHON, "torch.cuda.synchronize", NULL, "torch.cuda.synchronize",
     "explicit torch.cuda.synchronize: remove it or move it out of the step"},
    {KEY_PYTHON, "torch.cuda.memory.empty_cache", NULL, "torch.cuda.empty_cache",
     "torch.cuda.empty_cache() returns cached blocks with cudaFree, and cudaFree synchronizes the "
     "device: do not call it in the loop (the caching allocator reuses its blocks)"},
    /* torch 2.10 and before: pin_memory=True still copied with a blocking copy_ (made
     * non-blocking by pytorch#175421: 2.12 makes no sync there) */
    {KEY_PYTHON, "torch.autograd.graph.save_on_cpu.__init__.<locals>.pack_to_cpu",
     "torch::autograd::THPVariable_copy_", "save_on_cpu(pin_memory=True)",
     "save_on_cpu(pin_memory=True) of torch before 2.12 copies every tensor saved for backward "
     "into pinned memory with a blocking copy_ and waits for each: upgrade torch (2.12 copies "
     "them with non_blocking=True), or offload with your own "
     "torch.autograd.graph.saved_tensors_hooks whose pack hook copies into pinned memory with "
     "copy_(t, non_blocking=True)"},
    {KEY_PYTHON, "torch.autograd.graph.save_on_cpu.__init__.<locals>.pack_to_cpu", NULL,
     "save_on_cpu",
     "save_on_cpu(pin_memory=False) copies every tensor saved for backward to pageable memory "
     "and waits for each: pass pin_memory=True (pinned, non-blocking copies)"},
    {KEY_PYTHON, "torch.nn.modules.module.Module.to", NULL, "Module.to",
     "model.to(device) copies every parameter from pageable memory and waits for each: do it "
     "once before the loop; in the loop move only the batch, pinned, with non_blocking=True"},
    {KEY_PYTHON, "torch.nn.modules.module.Module.cuda", NULL, "Module.cuda",
     "model.cuda() copies every parameter from pageable memory and waits for each: do it once "
     "before the loop; in the loop move only the batch, pinned, with non_blocking=True"},
    {KEY_PYTHON, "torch.nn.modules.module.Module.cpu", NULL, "Module.cpu",
     "model.cpu() copies every parameter and buffer to pageable host memory and waits for each: "
     "keep the model on the device in the loop; for a checkpoint, save the state_dict a few "
     "steps apart (or copy it into pinned buffers with non_blocking=True)"},
    {KEY_PYTHON, "torch.nn.functional.ctc_loss", NULL, "F.ctc_loss",
     "ctc_loss copies input_lengths and target_lengths to the host (the kernel sizes its work "
     "from them): build the lengths on the host (CPU tensors or lists from the data loader), "
     "not on the device"},
    {KEY_PYTHON, "torch.nn.modules.transformer._detect_is_causal_mask", NULL,
     "nn.Transformer causal-mask check",
     "nn.TransformerEncoder compares the mask with a causal one on the host "
     "(bool((mask == causal).all())) every call: pass is_causal=True with a causal mask"},
    /* training frameworks: the action and the user's setting behind it */
    /* Lightning moves more than batches with move_data_to_device (issue 35 item 3): the batch
     * (Strategy.batch_to_device), a logged value's metric state (self.log: _ResultMetric.to),
     * the logged metrics back to the CPU at teardown. The outermost of these frames names it;
     * move_data_to_device alone says no more than that */
    {KEY_PYTHON, "lightning.pytorch.strategies.strategy.Strategy.batch_to_device", NULL,
     "Lightning batch transfer", LIGHTNING_BATCH_HINT},
    {KEY_PYTHON, "pytorch_lightning.strategies.strategy.Strategy.batch_to_device", NULL,
     "Lightning batch transfer", LIGHTNING_BATCH_HINT},
    {KEY_PYTHON,
     "lightning.pytorch.trainer.connectors.logger_connector.result._ResultCollection.cpu", NULL,
     "Lightning teardown: logged metrics to the CPU", LIGHTNING_TEARDOWN_HINT},
    {KEY_PYTHON,
     "lightning.pytorch.trainer.connectors.logger_connector.logger_connector._LoggerConnector.teardown",
     NULL, "Lightning teardown: logged metrics to the CPU", LIGHTNING_TEARDOWN_HINT},
    {KEY_PYTHON, "lightning.pytorch.trainer.connectors.logger_connector.result._ResultMetric.to",
     NULL, "self.log metric state", LIGHTNING_LOG_HINT},
    {KEY_PYTHON, "pytorch_lightning.trainer.connectors.logger_connector.result._ResultMetric.to",
     NULL, "self.log metric state", LIGHTNING_LOG_HINT},
    {KEY_PYTHON, "lightning.fabric.utilities.apply_func.move_data_to_device.<locals>.batch_to",
     NULL, "Lightning move_data_to_device", LIGHTNING_MOVE_HINT},
    {KEY_PYTHON, "lightning_fabric.utilities.apply_func.move_data_to_device.<locals>.batch_to",
     NULL, "Lightning move_data_to_device", LIGHTNING_MOVE_HINT},
    {KEY_PYTHON, "transformers.trainer.Trainer._prepare_input", NULL,
     "Hugging Face Trainer batch transfer",
     "the Trainer copies each batch to the device from pageable memory: keep "
     "dataloader_pin_memory=True (the default) in TrainingArguments"},
    {KEY_PYTHON, "accelerate.utils.operations.send_to_device", NULL, "Accelerate batch transfer",
     "Accelerate copies each batch to the device from pageable memory: pass pin_memory=True to "
     "the DataLoader you give accelerator.prepare()"},
    /* torch's Python bindings: what Python called */
    {KEY_NATIVE, "torch::autograd::THPVariable_is_nonzero(_object*, _object*)", NULL,
     "Tensor.__bool__", BOOL_HINT},
    {KEY_NATIVE, "torch::autograd::THPVariable_item", NULL, "Tensor.item", ITEM_HINT},
    {KEY_NATIVE, "torch::autograd::THPVariable_float_scalar", NULL, "Tensor.__float__",
     "float(t) copies a scalar to the host (as .item() does): keep the value on the device and "
     "read it every N steps"},
    {KEY_NATIVE, "torch::autograd::THPVariable_integral_scalar", NULL, "Tensor.__int__",
     "int(t) reads a CUDA scalar on the host: keep sizes and counts as Python ints known on the "
     "host, or keep the value on the device"},
    {KEY_NATIVE, "torch::autograd::THPVariable_index_scalar", NULL, "Tensor.__index__",
     "a CUDA tensor used as an index or a size (x[:n], range(n), torch.zeros(n)) is read on the "
     "host: keep n a Python int, or use a fixed size with a mask"},
    {KEY_NATIVE, "torch::autograd::THPVariable_tolist", NULL, "Tensor.tolist",
     ".tolist() copies the tensor to the host and waits: keep the values on the device, or copy "
     "into a pinned buffer with non_blocking=True and read it a step later"},
    {KEY_NATIVE, "torch::autograd::THPVariable_cpu", NULL, "Tensor.cpu",
     "x.cpu() copies to pageable host memory and waits: copy into a pinned buffer "
     "(torch.empty(..., pin_memory=True).copy_(x, non_blocking=True)) and read it after an event "
     "or a step later"},
    {KEY_NATIVE, "torch::autograd::THPVariable_cuda", NULL, "Tensor.cuda",
     "x.cuda() copies from pageable host memory and waits: pin the host tensor (pin_memory(), "
     "or DataLoader(pin_memory=True)) and call .cuda(non_blocking=True)"},
    {KEY_NATIVE, "torch::autograd::THPVariable_to", NULL, "Tensor.to",
     "x.to(...) between host and device waits when the host tensor is pageable (pin_memory() "
     "it, or DataLoader(pin_memory=True)) or non_blocking is False: pin the host side and pass "
     "non_blocking=True"},
    /* a Python list or range index (x[:, [-1]], x[range(n), y] = v): torch makes it a tensor on
     * the host and copies it to the device at each use; torch.tensor(data, device=...) and
     * torch.as_tensor of host data likewise (issue 35 item 3: not a pinnable x.to()) */
    {KEY_NATIVE, "torch::utils::indexing_tensor_from_data", NULL, "x[list index]",
     "a Python list or range used as an index is made a tensor on the host and copied to the "
     "device at every use, and the copy waits: make it a device tensor once, outside the loop "
     "(idx = torch.tensor([...], device=dev), then x[:, idx]), or use a slice (x[:, -1:])"},
    {KEY_NATIVE, "torch::utils::tensor_ctor", NULL, "torch.tensor(host data, device)",
     "torch.tensor(data, device=...) builds the tensor on the host and copies it to the device, "
     "and the copy waits: make it once, outside the loop, or build it on the device "
     "(torch.full((), v, device=dev), torch.arange(n, device=dev)), or pass a Python number "
     "where the op takes one"},
    {KEY_NATIVE, "torch::utils::as_tensor", NULL, "torch.as_tensor(host data, device)",
     "torch.as_tensor(data, device=...) of host data copies it to the device, and the copy "
     "waits: make it once, outside the loop, or build it on the device, or pin it and copy "
     "with non_blocking=True"},
    {KEY_NATIVE, "torch::autograd::THPVariable_copy_", NULL, "Tensor.copy_",
     "copy_ between a CUDA tensor and pageable host memory waits: pin the host tensor "
     "(pin_memory()) and pass non_blocking=True"},
    {KEY_NATIVE, "torch::autograd::THPVariable_arange", NULL, "torch.arange",
     "torch.arange with a CUDA tensor bound reads it on the host: pass a Python int (a size you "
     "know), or build the range once at full size and mask it"},
    /* x[idx] = v where v is on the host: index_put_ copies the value to the device itself
     * (value.to(self.device()) in _index_put_impl_), where a CPU index is copied in make_info.
     * A Python number v is such a value before torch 2.15 (a 0-dim CPU tensor) */
    {KEY_NATIVE, "at::native::_index_put_impl_", "at::Tensor::to", "x[idx] = host value",
     "x[idx] = v with v on the host (a CPU tensor, or a Python number before torch 2.15) copies v "
     "to the device from pageable memory and waits: make v on the device once, outside the loop "
     "(torch.full((), v, device=x.device)), or fill on the device: x.index_fill_(dim, idx, v), "
     "x.masked_fill_(mask, v)"},
    /* cuDNN's RNNs with dropout draw their dropout state's seed on the host (item<int64_t>)
     * the first time they train on a device, and again after each reseed of the CUDA generator
     * (torch.manual_seed, torch.cuda.manual_seed, set_rng_state: reset_rnn_state) */
    {KEY_NATIVE,
     "at::native::(anonymous namespace)::get_dropout_state(double, bool, c10::TensorOptions)", NULL,
     "cuDNN RNN dropout state",
     "nn.LSTM/GRU/RNN with dropout on cuDNN draws its dropout state's seed on the host the first "
     "time it trains, and again after every torch.manual_seed / torch.cuda.manual_seed / "
     "set_rng_state: once is start-up; do not reseed inside the training loop",
     true},
    /* torch.backends.cudnn.benchmark: each new convolution shape times cuDNN's candidate plans
     * (cudnn_frontend's time_sorted_plan: a device and an event synchronize per plan), in the
     * forward and in the backward alike. Keyed on the frontend's template, which torch 2.6 to
     * 2.15 all instantiate (torch's own get_plans_from_find is a symbol of 2.14's and later's
     * only: before, it is inlined into run_single_conv) */
    {KEY_NATIVE,
     "std::vector<cudnn_frontend::ExecutionPlan_v8, std::allocator<cudnn_frontend::ExecutionPlan_v8> > "
     "cudnn_frontend::time_sorted_plan<(cudnn_frontend::CudnnFindSamplingTechnique)0>",
     NULL, "cudnn.benchmark plan search",
     "torch.backends.cudnn.benchmark=True times cuDNN's candidate plans for every new "
     "convolution shape, each timing a device synchronize: a one-time cost while shapes stay "
     "fixed; shapes that change (variable image sizes, a last smaller batch) pay it again: keep "
     "them fixed (drop_last=True, a few padded sizes) or leave benchmark off",
     true},
    {KEY_NATIVE, "at::native::run_single_conv",
     "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::emptyCache",
     "cudnn.benchmark plan search",
     "torch.backends.cudnn.benchmark=True empties the CUDA caching allocator after each search "
     "for a new convolution shape, and cudaFree synchronizes the device: keep shapes fixed so "
     "that it searches once (or keep the cache: the private "
     "torch._C._cudnn_set_conv_benchmark_empty_cache(False))",
     true},
    /* the engine checks each node's outputs for NaN (item<bool>) after the node ran, outside
     * any node: only with anomaly detection on */
    {KEY_NATIVE, "torch::autograd::Engine::evaluate_function", NULL, "anomaly detection",
     "autograd anomaly detection (torch.autograd.set_detect_anomaly(True) or detect_anomaly()) "
     "checks every backward output for NaN with a sync: switch it off outside debugging"},
    /* ATen operators, by the one the user called; the argument kind from the innermost */
    {KEY_ATEN, "aten::index.Tensor", "nonzero", "x[bool_mask]",
     "x[bool_mask] syncs to size its output: use torch.where(mask, x, 0) / a fixed-size mask, or "
     "the loss's ignore_index"},
    {KEY_ATEN, "aten::index.Tensor", "copy_", "x[cpu_index]", CPU_INDEX_HINT("x[idx]")},
    {KEY_ATEN, "aten::index_put_", "nonzero", "x[bool_mask] = v", MASK_PUT_HINT},
    {KEY_ATEN, "aten::index_put_", "copy_", "x[cpu_index] = v", CPU_INDEX_HINT("x[idx] = v")},
    /* the functional form (torch.index_put; what compiled graphs call, torch.ops.aten) */
    {KEY_ATEN, "aten::index_put", "nonzero", "x[bool_mask] = v", MASK_PUT_HINT},
    {KEY_ATEN, "aten::index_put", "copy_", "x[cpu_index] = v", CPU_INDEX_HINT("x[idx] = v")},
    {KEY_ATEN, "aten::_index_put_impl_", "nonzero", "x[bool_mask] = v", MASK_PUT_HINT},
    {KEY_ATEN, "aten::_index_put_impl_", "copy_", "x[cpu_index] = v", CPU_INDEX_HINT("x[idx] = v")},
    {KEY_ATEN, "aten::masked_select", NULL, "torch.masked_select",
     "masked_select has a data-dependent size: keep the full tensor and multiply by the mask "
     "(or use the loss's ignore_index)"},
    {KEY_ATEN, "aten::nonzero", NULL, "torch.nonzero", NONZERO_HINT("torch.nonzero")},
    {KEY_ATEN, "aten::nonzero_numpy", NULL, "torch.nonzero(as_tuple=True)",
     NONZERO_HINT("torch.nonzero(as_tuple=True)")},
    {KEY_ATEN, "aten::where", NULL, "torch.where(cond)",
     NONZERO_HINT("torch.where(cond) (one argument: nonzero(cond, as_tuple=True))")},
    {KEY_ATEN, "aten::argwhere", NULL, "torch.argwhere", NONZERO_HINT("torch.argwhere")},
    {KEY_ATEN, "aten::_unique2", NULL, "torch.unique", UNIQUE_HINT("torch.unique")},
    {KEY_ATEN, "aten::_unique", NULL, "torch.unique", UNIQUE_HINT("torch.unique")},
    {KEY_ATEN, "aten::unique_dim", NULL, "torch.unique(dim=)", UNIQUE_HINT("torch.unique")},
    {KEY_ATEN, "aten::unique_consecutive", NULL, "torch.unique_consecutive",
     UNIQUE_HINT("torch.unique_consecutive")},
    {KEY_ATEN, "aten::one_hot", NULL, "F.one_hot",
     "one_hot without num_classes reads t.max() on the host: pass num_classes=C"},
    {KEY_ATEN, "aten::repeat_interleave.self_Tensor", NULL, "torch.repeat_interleave",
     "repeat_interleave with tensor repeats reads their sum on the host to size its output: pass "
     "output_size= (known from the shapes), or repeat by a Python int"},
    {KEY_ATEN, "aten::repeat_interleave.Tensor", NULL, "torch.repeat_interleave",
     "repeat_interleave with tensor repeats reads their sum on the host to size its output: pass "
     "output_size= (known from the shapes)"},
    {KEY_ATEN, "aten::bincount", NULL, "torch.bincount",
     "bincount reads the input's min and max on the host to size its output (minlength does not "
     "spare it): count into a known size with torch.zeros(n).scatter_add_(0, t, ones) or "
     "index_add_"},
    {KEY_ATEN, "aten::histc", NULL, "torch.histc",
     "histc reads the input's min and max on the host (and its result's size): with known bins "
     "count on the device (torch.bucketize(t, edges) then scatter_add_ into zeros(bins))"},
    {KEY_ATEN, "aten::allclose", NULL, "torch.allclose",
     "torch.allclose returns a Python bool, read on the host: keep torch.isclose(a, b).all() on "
     "the device, or check outside the step"},
    {KEY_ATEN, "aten::equal", NULL, "torch.equal",
     "torch.equal returns a Python bool, read on the host: keep (a == b).all() on the device, or "
     "check outside the step"},
    {KEY_ATEN, "aten::is_nonzero", NULL, "torch.is_nonzero", BOOL_HINT},
    {KEY_ATEN, "aten::item", NULL, "Tensor.item", ITEM_HINT},
    {KEY_ATEN, "aten::_local_scalar_dense", NULL, "Tensor.item", ITEM_HINT},
    {KEY_ATEN, "aten::copy_", NULL, "Tensor.copy_", PAGEABLE_COPY_HINT},
    {KEY_ATEN, "aten::to.dtype_layout", NULL, "Tensor.to", PAGEABLE_COPY_HINT},
    {KEY_ATEN, "aten::to.device", NULL, "Tensor.to", PAGEABLE_COPY_HINT},
    {KEY_ATEN, "aten::to.dtype", NULL, "Tensor.to", PAGEABLE_COPY_HINT},
    {KEY_ATEN, "aten::to.other", NULL, "Tensor.to", PAGEABLE_COPY_HINT},
    {KEY_ATEN, "aten::_to_copy", NULL, "Tensor.to", PAGEABLE_COPY_HINT},
    /* the API, when no operator says more */
    {KEY_API, "cudaDeviceSynchronize", NULL, "cudaDeviceSynchronize",
     "explicit torch.cuda.synchronize: remove it or move it out of the step"},
    {KEY_API, "cudaEventSynchronize", NULL, "cudaEventSynchronize", EVENT_HINT},
    {KEY_API, "cudaFree", NULL, "cudaFree", FREE_HINT},
    {KEY_API, "cudaFreeHost", NULL, "cudaFreeHost", FREE_HINT},
    {KEY_API, "cudaFreeAsync", NULL, "cudaFreeAsync", FREE_HINT},
    {KEY_API, "cudaFreeArray", NULL, "cudaFreeArray", FREE_HINT},
    {KEY_API, "cudaMemcpy", NULL, "cudaMemcpy", PAGEABLE_COPY_HINT},
    {KEY_API, "cudaMemcpyAsync", NULL, "cudaMemcpyAsync", PAGEABLE_COPY_HINT},
    {KEY_API, "cudaMemcpy2D", NULL, "cudaMemcpy2D", PAGEABLE_COPY_HINT},
    {KEY_API, "cudaMemcpy2DAsync", NULL, "cudaMemcpy2DAsync", PAGEABLE_COPY_HINT},
    {KEY_API, "cudaMemcpy3D", NULL, "cudaMemcpy3D", PAGEABLE_COPY_HINT},
    {KEY_API, "cudaMemcpy3DAsync", NULL, "cudaMemcpy3DAsync", PAGEABLE_COPY_HINT},
    {KEY_API, "cudaMemcpyFromSymbol", NULL, "cudaMemcpyFromSymbol", PAGEABLE_COPY_HINT},
    {KEY_API, "cudaMemcpyFromSymbolAsync", NULL, "cudaMemcpyFromSymbolAsync", PAGEABLE_COPY_HINT},
    {KEY_API, "cudaMemcpyToSymbol", NULL, "cudaMemcpyToSymbol", PAGEABLE_COPY_HINT},
    {KEY_API, "cudaMemcpyToSymbolAsync", NULL, "cudaMemcpyToSymbolAsync", PAGEABLE_COPY_HINT},
};

static const char *str(const char *s)
{
    return s ? s : "";
}

/* "torch/serialization.py" (below site-packages, or the standard library's folder) ->
 * "torch.serialization"; a package's __init__.py is the package. */
static void python_module(const char *file, char *buf, size_t cap)
{
    const char *f = str(file), *at = NULL;
    static const char *const roots[] = {"/site-packages/", "/dist-packages/"};
    for (size_t i = 0; i < 2 && !at; i++) {
        const char *r = strstr(f, roots[i]);
        if (r)
            at = r + strlen(roots[i]);
    }
    if (!at) {
        const char *lib = strstr(f, "/lib/python3");
        const char *slash = lib ? strchr(lib + 12, '/') : NULL;
        at = slash ? slash + 1 : rep_base_name(f);
    }
    size_t n = 0;
    for (; *at && n + 1 < cap; at++)
        buf[n++] = *at == '/' ? '.' : *at;
    buf[n] = '\0';
    if (n > 3 && !strcmp(buf + n - 3, ".py"))
        buf[n -= 3] = '\0';
    if (n > 9 && !strcmp(buf + n - 9, ".__init__"))
        buf[n - 9] = '\0';
}

static bool python_key_is(const struct rep_frame *f, const char *key)
{
    char mod[256];
    python_module(f->file, mod, sizeof mod);
    size_t m = strlen(mod);
    return m && !strncmp(key, mod, m) && key[m] == '.' && !strcmp(key + m + 1, str(f->function));
}

/* Whether a demangled name has a parameter list: a '(' outside its template arguments
 * ("f<(E)0>" has none, "f<(E)0>(int)" has one). */
static bool has_parameters(const char *name)
{
    int depth = 0;
    for (const char *p = name; *p; p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>' && depth > 0)
            depth--;
        else if (*p == '(' && depth == 0)
            return true;
    }
    return false;
}

/* A native key names the function (its name before the parameters), or, when it has
 * parameters of its own, the exact overload. */
static bool native_key_is(const char *function, const char *key)
{
    const char *fn = str(function);
    if (has_parameters(key))
        return !strcmp(fn, key);
    size_t k = strlen(key);
    return !strncmp(fn, key, k) && fn[k] == '(';
}

/* The dispatcher's entry of an operator: "at::_ops::index_Tensor::call(...)" -> its struct's
 * name into buf ("index_Tensor"); false for any other frame. A boxed call (torch.ops.aten.X
 * from Python: the code torch.compile generates) enters through ::redispatch(...) instead. */
static bool aten_struct(const char *function, char *buf, size_t cap)
{
    static const char prefix[] = "at::_ops::";
    const char *fn = str(function);
    if (strncmp(fn, prefix, sizeof prefix - 1))
        return false;
    const char *name = fn + sizeof prefix - 1, *end = strstr(name, "::call(");
    if (!end)
        end = strstr(name, "::redispatch(");
    if (!end || end == name || (size_t)(end - name) >= cap)
        return false;
    for (const char *c = name; c < end; c++)
        if (*c == ':' || *c == '<')
            return false;
    memcpy(buf, name, (size_t)(end - name));
    buf[end - name] = '\0';
    return true;
}

/* "aten::index.Tensor" names the struct "index_Tensor"; "aten::nonzero" names "nonzero". */
static bool aten_key_is(const char *key, const char *op_struct)
{
    static const char ns[] = "aten::";
    if (strncmp(key, ns, sizeof ns - 1))
        return false;
    const char *name = key + sizeof ns - 1, *dot = strchr(name, '.');
    if (!dot)
        return !strcmp(name, op_struct);
    size_t n = (size_t)(dot - name);
    return !strncmp(name, op_struct, n) && op_struct[n] == '_' &&
           !strcmp(dot + 1, op_struct + n + 1);
}

/* The schema name of an operator struct when the table knows it, else "aten::" + the struct. */
static void aten_display(const char *op_struct, char *buf, size_t cap)
{
    for (size_t r = 0; r < sizeof op_rules / sizeof op_rules[0]; r++) {
        if (op_rules[r].kind == KEY_ATEN && aten_key_is(op_rules[r].key, op_struct)) {
            snprintf(buf, cap, "%s", op_rules[r].key);
            return;
        }
    }
    snprintf(buf, cap, "aten::%s", op_struct);
}

/* The API's name without the per-thread-stream suffix (cudaMemcpyAsync_ptsz -> cudaMemcpyAsync). */
static bool api_key_is(const char *api, const char *key)
{
    const char *a = str(api);
    size_t k = strlen(key);
    return !strncmp(a, key, k) && (!a[k] || !strcmp(a + k, "_ptsz") || !strcmp(a + k, "_ptds"));
}

/* ---- which frames are the user's ---------------------------------------------------------- */

/* The installed packages whose frames are never the user's line: torch and its own domain
 * libraries (torchvision, torchaudio: a sync in save_image is the user's call of it), and the
 * training frameworks that drive the user's code (Lightning, Hugging Face's Trainer and
 * Accelerate, DeepSpeed); by the path below site-packages. A model library (timm, transformers'
 * models) stays the user's: its line is where the sync is written. */
static const char *const framework_packages[] = {"torch/",
                                                 "torchvision/",
                                                 "torchaudio/",
                                                 "lightning/",
                                                 "pytorch_lightning/",
                                                 "lightning_fabric/",
                                                 "lightning_utilities/",
                                                 "accelerate/",
                                                 "deepspeed/",
                                                 "transformers/trainer.py",
                                                 "transformers/trainer_pt_utils.py",
                                                 "transformers/trainer_utils.py",
                                                 "transformers/trainer_callback.py",
                                                 "transformers/trainer_seq2seq.py"};

/* Whether path is a file of an installed package, by its path below site-packages (or Debian's
 * dist-packages) starting with one of pkgs[0..n). */
static bool installed_package_in(const char *path, const char *const *pkgs, size_t n)
{
    static const char *const roots[] = {"/site-packages/", "/dist-packages/"};
    for (size_t r = 0; r < ARRAY_SIZE(roots); r++) {
        const char *at = strstr(path, roots[r]);
        if (!at)
            continue;
        at += strlen(roots[r]);
        for (size_t i = 0; i < n; i++)
            if (!strncmp(at, pkgs[i], strlen(pkgs[i])))
                return true;
    }
    return false;
}

static bool framework_path(const char *path)
{
    return installed_package_in(path, framework_packages, ARRAY_SIZE(framework_packages));
}

static bool base_name_starts(const char *module, const char *const *prefixes, size_t n)
{
    const char *b = rep_base_name(module);
    for (size_t i = 0; i < n; i++)
        if (strncmp(b, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

/* The interpreter's own objects: libpython, or the executable of a CPython linked statically. */
static const char *const interpreter_prefixes[] = {"libpython", "python3"};

static bool interpreter_module(const char *module)
{
    return base_name_starts(module, interpreter_prefixes, ARRAY_SIZE(interpreter_prefixes));
}

/* Runtime and framework objects: the CUDA stack, PyTorch, CPython, the C/C++ runtime, us. */
static bool runtime_module(const char *module)
{
    static const char *const prefixes[] = {
        "libcudart", "libcuda.",   "libcupti", "libcublas", "libcudnn",  "libnccl",
        "libtorch",  "libc10",     "libc.so",  "libc-",     "libstdc++", "libpthread",
        "ld-linux",  "libsyncspy", "libgcc_s", "libffi",    "_ctypes"};
    /* what pip installs with torch (its lib folder, the nvidia wheels) and CPython's own modules */
    static const char *const folders[] = {"/site-packages/nvidia/", "/dist-packages/nvidia/",
                                          "/lib-dynload/"};
    const char *m = str(module);
    if (framework_path(m))
        return true;
    for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++)
        if (strstr(m, folders[i]))
            return true;
    return interpreter_module(module) || base_name_starts(module, prefixes, ARRAY_SIZE(prefixes));
}

/* Python's standard library, torch's and the training frameworks' Python code (by the path). */
static bool runtime_python_file(const char *file)
{
    const char *f = str(file);
    if (framework_path(f))
        return true;
    if (strncmp(f, "<frozen ", 8) == 0)
        return true;
    /* torch.compile's generated code that no user line was found for (agent/record/compiled.h): the
     * compiler's, never shown as the user's line; so is the rest of Inductor's cache folder
     * (/tmp/torchinductor_USER by default: its Triton kernels' launchers) */
    if (gencode_file(f) || strstr(f, "/torchinductor_"))
        return true;
    /* the interpreter's own code objects (CPython 3.12+'s shim frame of a type's __init__:
     * file "__init__", line 0): no source file */
    size_t n = strlen(f);
    if (n && !strchr(f, '/') && !(n > 3 && !strcmp(f + n - 3, ".py")) && f[0] != '<')
        return true;
    return strstr(f, "/lib/python3") && !strstr(f, "-packages/");
}

bool hints_frame_is_runtime(const struct rep_frame *f)
{
    if (f->python)
        return runtime_python_file(f->file);
    return runtime_module(f->module);
}

/* The innermost user frame of frames[begin, end); *found false (and begin) when there is none. */
static uint32_t user_frame_in(const struct rep_frame *f, uint32_t begin, uint32_t end, bool *found)
{
    for (uint32_t i = begin; i < end; i++) {
        if (!hints_frame_is_runtime(&f[i])) {
            *found = true;
            return i;
        }
    }
    *found = false;
    return begin;
}

/* In the sync's own frames (a backward-pass sync's sections after them do not count). */
static uint32_t user_frame(const struct rep_site *s, bool *found)
{
    struct rep_sections sec = rep_site_sections(s->frames, s->frames ? s->nframes : 0);
    return user_frame_in(s->frames, 0, sec.own, found);
}

/* torch's own packages: their frames are the op, not a framework's feature */
static bool torch_package_path(const char *path)
{
    static const char *const torch_pkgs[] = {"torch/", "torchvision/", "torchaudio/"};
    return installed_package_in(path, torch_pkgs, ARRAY_SIZE(torch_pkgs));
}

const struct rep_frame *hints_framework_frame(const struct rep_site *site, uint32_t user)
{
    struct rep_sections sec = rep_site_sections(site->frames, site->frames ? site->nframes : 0);
    for (uint32_t i = 0; i < user && i < sec.own; i++) {
        const struct rep_frame *f = &site->frames[i];
        if (f->python && !*str(f->module) && framework_path(str(f->file)) &&
            !torch_package_path(str(f->file)))
            return f;
    }
    return NULL;
}

uint32_t hints_user_frame(const struct rep_site *site)
{
    bool found;
    return user_frame(site, &found);
}

uint32_t hints_forward_user_frame(const struct rep_site *site, bool *found)
{
    struct rep_sections sec = rep_site_sections(site->frames, site->frames ? site->nframes : 0);
    *found = false;
    if (!sec.node || !sec.nforward)
        return 0;
    return user_frame_in(site->frames, sec.forward, sec.forward + sec.nforward, found);
}

/* torch.compile's own work: a Python frame of the sync's own stack in one of its files
 * (common/gencode.h gencode_compile_work_file). */
bool hints_compile_work(const struct rep_site *site)
{
    struct rep_sections sec = rep_site_sections(site->frames, site->frames ? site->nframes : 0);
    for (uint32_t i = 0; i < sec.own; i++) {
        const struct rep_frame *f = &site->frames[i];
        if (!f->python)
            continue;
        if (gencode_compile_work_file(str(f->file)))
            return true;
    }
    return false;
}

uint32_t hints_compiled_backward_frame(const struct rep_site *site, bool *found)
{
    struct rep_sections sec = rep_site_sections(site->frames, site->frames ? site->nframes : 0);
    *found = false;
    if (!sec.node || strncmp(sec.node, "CompiledFunctionBackward", 24) != 0)
        return 0;
    for (uint32_t i = 0; i < sec.own; i++) {
        const struct rep_frame *f = &site->frames[i];
        if (f->python && *str(f->module) && !hints_frame_is_runtime(f)) {
            *found = true;
            return i;
        }
    }
    return 0;
}

const struct rep_frame *hints_unnamed_generated(const struct rep_site *site)
{
    struct rep_sections sec = rep_site_sections(site->frames, site->frames ? site->nframes : 0);
    for (uint32_t i = 0; i < sec.own; i++) {
        const struct rep_frame *f = &site->frames[i];
        if (f->python && !*str(f->module) && gencode_file(str(f->file)))
            return f;
    }
    return NULL;
}

uint32_t hints_backward_line_frame(const struct rep_site *site, bool *found)
{
    uint32_t g = hints_compiled_backward_frame(site, found);
    return *found ? g : hints_forward_user_frame(site, found);
}

uint32_t hints_caller_user_frame(const struct rep_site *site, bool *found)
{
    struct rep_sections sec = rep_site_sections(site->frames, site->frames ? site->nframes : 0);
    *found = false;
    if (!sec.ncaller)
        return 0;
    return user_frame_in(site->frames, sec.caller, sec.caller + sec.ncaller, found);
}

/* ---- backward-pass syncs: the hint follows the forward op that made the node --------------- */

struct backward_rule {
    const char *node; /* the node type's name, without its version digits (IndexBackward0) */
    const char *op;
    const char *hint;
};

static const struct backward_rule backward_rules[] = {
    {"IndexBackward", "backward of x[bool_mask]",
     "the backward of a boolean-mask index (x[mask] of a tensor that needs grad) syncs in "
     "index_put_ -> nonzero: select with torch.where(mask, x, 0) or x.masked_fill(~mask, 0), or "
     "let the loss skip entries (ignore_index) instead of indexing them out"},
    {"GatherBackward", "backward of torch.gather",
     "the backward of torch.gather syncs (deterministic scatter_add): index with advanced "
     "indexing (x[idx]) instead, or relax determinism for this op"},
    {"EmbeddingBackward", "backward of nn.Embedding",
     "the backward of an embedding lookup syncs: keep the indices on the device and avoid "
     "padding_idx / scale_grad_by_freq, which count indices on the host"},
    {"MaskedSelectBackward", "backward of torch.masked_select",
     "the backward of masked_select syncs: multiply by the mask instead of selecting"},
};

/* Whether node is rule's name followed only by digits (its version: IndexBackward0). */
static bool node_is(const char *node, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(node, name, n))
        return false;
    for (const char *c = node + n; *c; c++)
        if (*c < '0' || *c > '9')
            return false;
    return true;
}

static void backward_op(const char *node, bool custom, struct site_op *out)
{
    static const char custom_hint[] =
        "a custom autograd.Function's backward syncs (its Python backward, in autograd's thread): "
        "keep its values on the device (no .item(), .cpu(), printing or data-dependent shapes)";
    static const char generic_hint[] =
        "this sync runs in the backward of the op on the forward line above: rewrite that op "
        "(a fixed-size or masked form), or its backward";
    const char *hint = custom ? custom_hint : generic_hint;
    snprintf(out->op, sizeof out->op, "backward of %s", node);
    for (size_t r = 0; !custom && r < sizeof backward_rules / sizeof backward_rules[0]; r++) {
        if (node_is(node, backward_rules[r].node)) {
            snprintf(out->op, sizeof out->op, "%s", backward_rules[r].op);
            hint = backward_rules[r].hint;
            break;
        }
    }
    snprintf(out->hint, sizeof out->hint, "%s", hint);
}

/* The node whose backward the site ran in: from its marker when attributed, else from its own
 * frames (output/backward.c); *custom when it is a custom autograd.Function, *matched the marker's
 * or the frame's name. */
static bool site_node(const struct rep_site *s, char *buf, size_t cap, bool *custom,
                      const char **matched)
{
    struct rep_sections sec = rep_site_sections(s->frames, s->frames ? s->nframes : 0);
    uint32_t at = 0;
    bool found = s->frames && backward_node_of(s->frames, sec.own, buf, cap, &at);
    *custom = found && native_key_is(s->frames[at].function, "torch::autograd::PyNode::apply");
    *matched = found ? s->frames[at].function : NULL;
    if (sec.node && *sec.node) {
        snprintf(buf, cap, "%s", sec.node);
        *matched = sec.node;
        return true;
    }
    return found;
}

bool hints_backward_node(const struct rep_site *site, char *buf, size_t cap)
{
    bool custom;
    const char *matched;
    return site_node(site, buf, cap, &custom, &matched);
}

/* ---- the lookup ---------------------------------------------------------------------------- */

static void take_rule(const struct op_rule *r, const char *matched, struct site_op *out)
{
    snprintf(out->op, sizeof out->op, "%s", r->op);
    snprintf(out->hint, sizeof out->hint, "%s", r->hint);
    snprintf(out->matched, sizeof out->matched, "%s", matched);
}

/* The first rule of kind for the frame f (ATen: for the operator struct op_struct, with inner the
 * innermost operator; f unused; native: inner the function f called, NULL when none). */
static const struct op_rule *rule_for(enum key_kind kind, const struct rep_frame *f,
                                      const char *op_struct, const char *inner)
{
    for (size_t r = 0; r < sizeof op_rules / sizeof op_rules[0]; r++) {
        const struct op_rule *h = &op_rules[r];
        if (h->kind != kind)
            continue;
        bool hit = kind == KEY_PYTHON   ? f->python && python_key_is(f, h->key)
                   : kind == KEY_NATIVE ? !f->python && native_key_is(f->function, h->key)
                                        : aten_key_is(h->key, op_struct);
        bool in = !h->inner || (inner && (kind == KEY_ATEN ? !strcmp(h->inner, inner)
                                                           : native_key_is(inner, h->inner)));
        if (hit && in)
            return h;
    }
    return NULL;
}

/* What the frame at i called, NULL at the innermost: a native frame, the frame inside it; a
 * Python frame, the first native function inside it that is not the interpreter's own (the
 * binding it called: torch::autograd::THPVariable_copy_), NULL when Python code comes first. */
static const char *called(const struct rep_frame *f, uint32_t i)
{
    if (!f[i].python)
        return i && !f[i - 1].python ? f[i - 1].function : NULL;
    for (uint32_t j = i; j-- > 0;) {
        if (f[j].python)
            return NULL;
        if (!interpreter_module(f[j].module))
            return f[j].function;
    }
    return NULL;
}

/* The cause rule of a native frame among the site's own frames (innermost first), or NULL. */
static const struct op_rule *cause_rule(const struct rep_site *site)
{
    struct rep_sections sec = rep_site_sections(site->frames, site->frames ? site->nframes : 0);
    for (uint32_t i = 0; i < sec.own; i++) {
        const struct op_rule *r = site->frames[i].python ? NULL
                                                         : rule_for(KEY_NATIVE, &site->frames[i],
                                                                    NULL, called(site->frames, i));
        if (r && r->cause)
            return r;
    }
    return NULL;
}

/* The backward-pass sync's node (output/backward.c), when the site is one. */
struct node_seen {
    bool backward;
    char name[96];
    bool custom;
    const char *matched;
};

static void op_of(const struct rep_site *site, const struct node_seen *n, struct site_op *out);
static void graph_break_advice(const struct rep_site *site, struct site_op *out);

size_t hints_op_sum_add(struct hints_op_sum *sum, size_t n, size_t cap, const struct site_op *op,
                        uint64_t count, uint64_t ns, size_t *more)
{
    size_t k = 0;
    while (k < n && strcmp(sum[k].op.op, op->op))
        k++;
    if (k == n) {
        if (n == cap) {
            (*more)++;
            return n;
        }
        sum[n++] = (struct hints_op_sum){.op = *op};
    }
    sum[k].count += count;
    sum[k].ns += ns;
    return n;
}

void hints_op_sums_sort(struct hints_op_sum *sum, size_t n)
{
    for (size_t a = 0; a < n; a++) /* a handful of ops: a selection sort */
        for (size_t b = a + 1; b < n; b++)
            if (sum[b].ns > sum[a].ns) {
                struct hints_op_sum t = sum[a];
                sum[a] = sum[b];
                sum[b] = t;
            }
}

/* A copy between the device and pinned host memory that waited: non_blocking was False (the
 * host side needs no pinning). By the op the copy's rule named; the agent tells the memory apart
 * (entry/runtime.c: most of the site's syncs came right after a copy from or to pinned memory). */
static const struct {
    const char *op, *hint;
} pinned_hints[] = {
    {"Tensor.to", "the host tensor is already pinned: x.to(...) waits only because non_blocking "
                  "is False: pass non_blocking=True (the stream orders the copy before its use)"},
    {"Tensor.cuda", "the host tensor is already pinned: x.cuda() waits only because non_blocking "
                    "is False: call .cuda(non_blocking=True)"},
    {"Tensor.copy_", "the host tensor is already pinned: copy_ waits only because non_blocking is "
                     "False: pass non_blocking=True"},
    {"Accelerate batch transfer",
     "Accelerate copies each batch from pinned memory and waits, because non_blocking is False: "
     "pass Accelerator(dataloader_config=DataLoaderConfiguration(non_blocking=True))"},
    {"Hugging Face Trainer batch transfer",
     "the Trainer copies each batch from pinned memory and waits, because non_blocking is False: "
     "pass TrainingArguments(accelerator_config={\"non_blocking\": True}) (with "
     "dataloader_pin_memory=True, the default)"},
};

static void pinned_copy_hint(const struct rep_site *site, struct site_op *out)
{
    if (!site->pinned || site->pinned * 2 <= site->count)
        return;
    for (size_t i = 0; i < sizeof pinned_hints / sizeof pinned_hints[0]; i++)
        if (!strcmp(out->op, pinned_hints[i].op)) {
            snprintf(out->hint, sizeof out->hint, "%s", pinned_hints[i].hint);
            return;
        }
}

void hints_op(const struct rep_site *site, struct site_op *out)
{
    memset(out, 0, sizeof *out);
    struct node_seen n;
    n.backward = site_node(site, n.name, sizeof n.name, &n.custom, &n.matched);
    op_of(site, &n, out);
    pinned_copy_hint(site, out);
    if (hints_compile_work(site)) {
        /* torch.compile's own wait: not a graph break, and the op's advice is not the user's */
        snprintf(out->hint, sizeof out->hint,
                 "torch.compile's own work (compiling, autotuning a new kernel), once per "
                 "compilation: fewer recompiles (dynamic=True, torch._dynamo.mark_dynamic) and a "
                 "kept cache (TORCHINDUCTOR_CACHE_DIR) make it rarer");
        return;
    }
    if (!n.backward)
        graph_break_advice(site, out);
}

/* A backward sync outside a compiled graph: the rule of the op that waited, else the node's. */
static void node_op(const struct op_rule *cause, const struct node_seen *n, struct site_op *out)
{
    if (cause) {
        take_rule(cause, cause->key, out);
        return;
    }
    backward_op(n->name, n->custom, out);
    snprintf(out->matched, sizeof out->matched, "%s", str(n->matched));
}

/* The ATen operators of the native frames f[0..scope): the outermost into outer (the one the
 * user called) and the innermost into inner (the one that waited); "" when there is none. */
static void aten_ops_in(const struct rep_frame *f, uint32_t scope, char *outer, char *inner,
                        size_t cap)
{
    char buf[96];
    for (uint32_t i = 0; i < scope; i++) {
        if (!f[i].python && aten_struct(f[i].function, buf, sizeof buf)) {
            if (!*inner)
                snprintf(inner, cap, "%s", buf);
            snprintf(outer, cap, "%s", buf);
        }
    }
}

/* torch's Python, then its bindings: the rule of the first frame that has one, from the user
 * frame inwards. */
static const struct op_rule *frame_rule(const struct rep_frame *f, uint32_t scope)
{
    static const enum key_kind frame_kinds[] = {KEY_PYTHON, KEY_NATIVE};
    for (size_t k = 0; k < 2; k++) {
        for (uint32_t i = scope; i-- > 0;) {
            const struct op_rule *r = rule_for(frame_kinds[k], &f[i], NULL, called(f, i));
            if (r)
                return r;
        }
    }
    return NULL;
}

/* The operator the user called: its rule, never an inner operator's (that is another op's
 * advice), else a hint that names it. */
static void user_aten_op(const struct node_seen *n, const char *outer, const char *inner,
                         struct site_op *out)
{
    const struct op_rule *r = rule_for(KEY_ATEN, NULL, outer, inner);
    if (r && n->backward && !strcmp(r->op, "x[bool_mask] = v")) {
        /* in a compiled graph's backward: the backward of the user's x[bool_mask] */
        backward_op("IndexBackward0", false, out);
        snprintf(out->matched, sizeof out->matched, "%s", r->key);
        return;
    }
    if (r) {
        take_rule(r, r->key, out);
        return;
    }
    snprintf(out->op, sizeof out->op, "%s", out->aten);
    snprintf(out->matched, sizeof out->matched, "%s", out->aten);
    char in[160] = "";
    if (strcmp(out->aten, out->aten_inner))
        snprintf(in, sizeof in, " (the wait is in %s)", out->aten_inner);
    snprintf(out->hint, sizeof out->hint,
             "%s synchronizes%s: it reads a value or its output's size on the host; look for "
             "an argument that fixes it (a size, a count, min/max) or a fixed-size form, or "
             "move it out of the step",
             out->aten, in);
}

/* No operator in the stack: the CUDA API's rule, else the API is all we know. */
static void api_op(const struct rep_site *site, struct site_op *out)
{
    for (size_t r = 0; r < sizeof op_rules / sizeof op_rules[0]; r++) {
        if (op_rules[r].kind == KEY_API && api_key_is(site->api, op_rules[r].key)) {
            take_rule(&op_rules[r], op_rules[r].key, out);
            return;
        }
    }
    snprintf(out->op, sizeof out->op, "%s", str(site->api));
}

static void op_of(const struct rep_site *site, const struct node_seen *n, struct site_op *out)
{
    const struct op_rule *cause = cause_rule(site);
    /* the backward of a compiled graph (AOTAutograd's one node for all of it): named by the op
     * that waited in it, as a forward sync is (its generated code is named by the user's line) */
    if (n->backward && !node_is(n->name, "CompiledFunctionBackward")) {
        node_op(cause, n, out);
        return;
    }
    bool found;
    uint32_t u = user_frame(site, &found);
    struct rep_sections sec = rep_site_sections(site->frames, site->frames ? site->nframes : 0);
    uint32_t scope = found ? u : sec.own; /* from the CUDA call to below the user frame */
    char outer[96] = "", inner[96] = "";
    aten_ops_in(site->frames, scope, outer, inner, sizeof outer);
    if (*outer) {
        aten_display(outer, out->aten, sizeof out->aten);
        aten_display(inner, out->aten_inner, sizeof out->aten_inner);
    }
    const struct op_rule *r = cause ? cause : frame_rule(site->frames, scope);
    if (r)
        take_rule(r, r->key, out);
    else if (*outer)
        user_aten_op(n, outer, inner, out);
    else
        api_op(site, out);
}

/* ---- torch.compile: a sync at a graph break ------------------------------------------------ */

/* Whether the user frame u runs under Dynamo's frame evaluation: the native frames just outside
 * it (before the next Python frame) hold libtorch_python's dynamo_ eval-frame functions. Such a
 * frame is a compiled function's code run eagerly after a graph break (or a resume function). */
bool hints_frame_is_dynamo_eval(const struct rep_frame *f)
{
    return !f->python && !strncmp(rep_base_name(str(f->module)), "libtorch_python", 15) &&
           !strncmp(str(f->function), "dynamo_", 7);
}

static bool at_graph_break(const struct rep_frame *f, uint32_t u, uint32_t end)
{
    for (uint32_t i = u + 1; i < end && !f[i].python; i++)
        if (hints_frame_is_dynamo_eval(&f[i]))
            return true;
    /* or called, outside, by a compiled function's entry (torch/_dynamo/eval_frame.py's
     * wrappers): the native frames between may be past the unwound part of the stack */
    for (uint32_t i = u + 1; i < end; i++)
        if (f[i].python && strstr(str(f[i].file), "/_dynamo/eval_frame.py"))
            return true;
    return false;
}

/* What to do about a sync that broke a compiled graph, by the op (its prefix), the first that
 * matches; the last row is every other op's. */
static const struct {
    const char *op;
    const char *advice;
} compiled_advice[] = {
    {"Tensor.item", "torch.compile breaks its graph at this .item() and runs it eagerly: keep the "
                    "value a tensor; torch._dynamo.config.capture_scalar_outputs = True keeps it "
                    "in the graph (it still waits)"},
    {"x[bool_mask]", "torch.compile breaks its graph at this data-dependent shape: "
                     "torch.where(mask, x, 0) or the loss's ignore_index needs no break and no "
                     "wait; capture_dynamic_output_shape_ops = True keeps it in the graph (it "
                     "still waits)"},
    {"torch.nonzero", "torch.compile breaks its graph at this data-dependent shape: "
                      "torch.nonzero_static keeps it whole; capture_dynamic_output_shape_ops = "
                      "True keeps it in the graph (it still waits)"},
    {"Tensor.__bool__", "torch.compile breaks its graph at this data-dependent branch: "
                        "torch.where or torch.cond keeps it on the device; a check can be "
                        "torch._check or move out of the compiled function"},
    {"Tensor.__repr__", "torch.compile breaks its graph to print a tensor: print outside the "
                        "compiled function, every N steps"},
    {"", "torch.compile breaks its graph at this sync and runs it eagerly: move it out of the "
         "compiled function, or keep the value on the device"},
};

static void graph_break_advice(const struct rep_site *site, struct site_op *out)
{
    bool found;
    uint32_t u = user_frame(site, &found);
    struct rep_sections sec = rep_site_sections(site->frames, site->frames ? site->nframes : 0);
    if (!found || !site->frames[u].python || *str(site->frames[u].module) ||
        !at_graph_break(site->frames, u, sec.own))
        return;
    for (size_t i = 0; i < ARRAY_SIZE(compiled_advice); i++) {
        const char *k = compiled_advice[i].op;
        if (!strncmp(out->op, k, strlen(k))) {
            snprintf(out->compiled, sizeof out->compiled, "%s", compiled_advice[i].advice);
            return;
        }
    }
}

bool hints_rule_at(size_t i, const char **key, const char **op)
{
    if (i >= sizeof op_rules / sizeof op_rules[0])
        return false;
    *key = op_rules[i].key;
    *op = op_rules[i].op;
    return true;
}
