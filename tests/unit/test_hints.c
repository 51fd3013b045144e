/* tests/unit/test_hints.c: the rules of output/hints.c on hand-built sites shaped like torch
 * 2.15's stacks: which frame is the user's (past CUDA, PyTorch, CPython, libc, the standard
 * library and the training frameworks; any other package under site-packages is the user's),
 * which operator a sync belongs to, and the hint table: a case per row (and a check that every
 * row has one), exact names only (std::unique_ptr is not torch.unique, is_nonzero is not
 * nonzero), the operator the user called decides, never an inner one's advice, and an operator
 * with no rule gets a hint that names it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "output/backward.h"
#include "output/hints.h"
#include "report_fixtures.h"

#define SP "/v/lib/python3.11/site-packages/"
#define PY_LIB "/v/lib/python3.11/site-packages/torch/lib/libtorch_python.so"
#define NAT(fn)                          \
    {                                    \
        fn, TORCH, "", 0, 0x10, false, 0 \
    }
#define BIND(fn)                          \
    {                                     \
        fn, PY_LIB, "", 0, 0x20, false, 0 \
    }
#define PYF(file, fn)                  \
    {                                  \
        fn, "", SP file, 7, 0, true, 0 \
    }
#define USER                                          \
    {                                                 \
        "step", "", "/home/u/train.py", 3, 0, true, 0 \
    }
#define INTERP(fn)                                               \
    {                                                            \
        fn, "/v/lib/libpython3.11.so.1.0", "", 0, 0x30, false, 0 \
    }
#define OPS(name) "at::_ops::" name "::call(at::Tensor const&)"
#define SCALAR NAT(OPS("_local_scalar_dense")), NAT(OPS("item"))
#define COPY                                                                                  \
    NAT("at::_ops::copy_::call(at::Tensor&, at::Tensor const&, bool)"), NAT(OPS("_to_copy")), \
        NAT(OPS("to_dtype_layout"))

/* One case: a site's API and frames (innermost first, the user's frame last), the operator the
 * report must name, the start of its hint and the exact name it matched. */
struct hint_case {
    const char *api;
    struct rep_frame frames[14];
    const char *op, *hint, *matched;
};

#define SYNC "cudaStreamSynchronize"
#define H2D "cudaMemcpyAsync"

static const struct
    hint_case
        cases
            [] =
                {
                    /* torch's Python functions */
                    {SYNC,
                     {SCALAR, BIND("torch::autograd::THPVariable_item(_object*, _object*)"),
                      PYF("torch/amp/grad_scaler.py",
                          "GradScaler._maybe_opt_step.<locals>.<genexpr>"),
                      PYF("torch/amp/grad_scaler.py", "GradScaler._maybe_opt_step"),
                      PYF("torch/amp/grad_scaler.py", "GradScaler.step"), USER},
                     "GradScaler.step",
                     "GradScaler.step reads found_inf",
                     "torch.amp.grad_scaler.GradScaler._maybe_opt_step"},
                    {SYNC,
                     {SCALAR, BIND("torch::autograd::THPVariable_item(_object*, _object*)"),
                      PYF("torch/amp/grad_scaler.py", "GradScaler.get_scale"),
                      PYF("torch/amp/grad_scaler.py", "GradScaler.state_dict"), USER},
                     "GradScaler.state_dict",
                     "GradScaler.state_dict() reads the scale",
                     "torch.amp.grad_scaler.GradScaler.state_dict"},
                    {SYNC,
                     {SCALAR, NAT(OPS("is_nonzero")),
                      PYF("torch/nn/utils/clip_grad.py", "_get_total_norm"),
                      PYF("torch/nn/utils/clip_grad.py", "clip_grad_norm_"),
                      PYF("torch/nn/utils/clip_grad.py", "_no_grad.<locals>._no_grad_wrapper"),
                      USER},
                     "clip_grad_norm_(error_if_nonfinite=True)",
                     "clip_grad_norm_(error_if_nonfinite=True) reads",
                     "torch.nn.utils.clip_grad.clip_grad_norm_"},
                    {SYNC,
                     {SCALAR, NAT(OPS("is_nonzero")),
                      PYF("torch/distributions/distribution.py", "_all_true_or_runtime_assert"),
                      PYF("torch/distributions/distribution.py", "Distribution.__init__"),
                      PYF("torch/distributions/normal.py", "Normal.__init__"), USER},
                     "Distribution(validate_args)",
                     "distribution argument validation",
                     "torch.distributions.distribution.Distribution.__init__"},
                    {SYNC,
                     {SCALAR,
                      PYF("torch/distributions/distribution.py", "Distribution._validate_sample"),
                      PYF("torch/distributions/normal.py", "Normal.log_prob"), USER},
                     "Distribution._validate_sample",
                     "distribution argument validation",
                     "torch.distributions.distribution.Distribution._validate_sample"},
                    {SYNC,
                     {SCALAR,
                      PYF("torch/distributions/distribution.py", "Distribution._validate_args"),
                      USER},
                     "Distribution._validate_args",
                     "distribution argument validation",
                     "torch.distributions.distribution.Distribution._validate_args"},
                    {SYNC,
                     {SCALAR, BIND("torch::autograd::THPVariable_item(_object*, _object*)"),
                      PYF("torch/_tensor.py", "Tensor.__format__"), USER},
                     "Tensor.__format__",
                     "f\"{t:.3f}\" of a CUDA tensor",
                     "torch._tensor.Tensor.__format__"},
                    {SYNC,
                     {NAT(OPS("nonzero")), NAT(OPS("masked_select")),
                      PYF("torch/_tensor_str.py", "_Formatter.__init__"),
                      PYF("torch/_tensor_str.py", "_str"),
                      PYF("torch/_tensor.py", "Tensor.__repr__"), USER},
                     "Tensor.__repr__",
                     "printing a CUDA tensor",
                     "torch._tensor.Tensor.__repr__"},
                    {SYNC,
                     {COPY, BIND("THPStorage_copy_(_object*, _object*, _object*)"),
                      PYF("torch/storage.py", "_StorageBase.cpu"),
                      PYF("torch/serialization.py", "_save"), PYF("torch/serialization.py", "save"),
                      USER},
                     "torch.save",
                     "torch.save copies each CUDA storage",
                     "torch.serialization.save"},
                    {H2D,
                     {COPY, BIND("THPStorage_copy_(_object*, _object*, _object*)"),
                      PYF("torch/_utils.py", "_to"), PYF("torch/storage.py", "_StorageBase.to"),
                      PYF("torch/serialization.py", "_deserialize"),
                      PYF("torch/serialization.py", "_load"), PYF("torch/serialization.py", "load"),
                      USER},
                     "torch.load",
                     "torch.load puts each storage saved from CUDA back on the device",
                     "torch.serialization.load"},
                    {H2D,
                     {COPY, BIND("torch::autograd::THPVariable_to(_object*, _object*, _object*)"),
                      PYF("torchvision/utils.py", "save_image"),
                      PYF("torch/utils/_contextlib.py",
                          "context_decorator.<locals>.decorate_context"),
                      USER},
                     "torchvision.utils.save_image",
                     "save_image copies the image grid to the host",
                     "torchvision.utils.save_image"},
                    {"cudaEventSynchronize",
                     {PYF("torch/cuda/streams.py", "Event.synchronize"), USER},
                     "Event.synchronize",
                     "Event.synchronize blocks the host",
                     "torch.cuda.streams.Event.synchronize"},
                    {SYNC,
                     {PYF("torch/cuda/streams.py", "Stream.synchronize"), USER},
                     "Stream.synchronize",
                     "Stream.synchronize blocks the host",
                     "torch.cuda.streams.Stream.synchronize"},
                    {"cudaDeviceSynchronize",
                     {PYF("torch/cuda/__init__.py", "synchronize"), USER},
                     "torch.cuda.synchronize",
                     "explicit torch.cuda.synchronize",
                     "torch.cuda.synchronize"},
                    {"cudaFree",
                     {PYF("torch/cuda/memory.py", "empty_cache"), USER},
                     "torch.cuda.empty_cache",
                     "torch.cuda.empty_cache() returns cached blocks with cudaFree",
                     "torch.cuda.memory.empty_cache"},
                    {H2D,
                     {COPY, BIND("torch::autograd::THPVariable_cpu(_object*, _object*, _object*)"),
                      PYF("torch/autograd/graph.py", "save_on_cpu.__init__.<locals>.pack_to_cpu"),
                      USER},
                     "save_on_cpu",
                     "save_on_cpu(pin_memory=False) copies every tensor",
                     "torch.autograd.graph.save_on_cpu.__init__.<locals>.pack_to_cpu"},
                    /* pin_memory=True before torch 2.12: a blocking copy_ into pinned memory (the binding the
     * Python frame called, past the interpreter's frames, decides) */
                    {SYNC,
                     {NAT("at::_ops::copy_::call(at::Tensor&, at::Tensor const&, bool)"),
                      BIND("torch::autograd::THPVariable_copy_(_object*, _object*, _object*)"),
                      INTERP("method_vectorcall_VARARGS_KEYWORDS"), INTERP("PyObject_Vectorcall"),
                      PYF("torch/autograd/graph.py", "save_on_cpu.__init__.<locals>.pack_to_cpu"),
                      USER},
                     "save_on_cpu(pin_memory=True)",
                     "save_on_cpu(pin_memory=True) of torch before 2.12 copies",
                     "torch.autograd.graph.save_on_cpu.__init__.<locals>.pack_to_cpu"},
                    /* the same Python frame calling another binding: the rule of any binding */
                    {H2D,
                     {COPY, BIND("torch::autograd::THPVariable_cpu(_object*, _object*, _object*)"),
                      INTERP("method_vectorcall_NOARGS"),
                      PYF("torch/autograd/graph.py", "save_on_cpu.__init__.<locals>.pack_to_cpu"),
                      USER},
                     "save_on_cpu",
                     "save_on_cpu(pin_memory=False) copies every tensor",
                     "torch.autograd.graph.save_on_cpu.__init__.<locals>.pack_to_cpu"},
                    {H2D,
                     {COPY, BIND("torch::autograd::THPVariable_to(_object*, _object*, _object*)"),
                      PYF("torch/nn/modules/module.py", "Module.to.<locals>.convert"),
                      PYF("torch/nn/modules/module.py", "Module._apply"),
                      PYF("torch/nn/modules/module.py", "Module.to"), USER},
                     "Module.to",
                     "model.to(device) copies every parameter",
                     "torch.nn.modules.module.Module.to"},
                    {SYNC,
                     {COPY, NAT(OPS("ctc_loss_Tensor")), PYF("torch/nn/functional.py", "ctc_loss"),
                      USER},
                     "F.ctc_loss",
                     "ctc_loss copies input_lengths",
                     "torch.nn.functional.ctc_loss"},
                    {SYNC,
                     {SCALAR, BIND("torch::autograd::THPVariable_is_nonzero(_object*, _object*)"),
                      PYF("torch/nn/modules/transformer.py", "_detect_is_causal_mask"),
                      PYF("torch/nn/modules/transformer.py", "TransformerEncoder.forward"), USER},
                     "nn.Transformer causal-mask check",
                     "nn.TransformerEncoder compares the mask",
                     "torch.nn.modules.transformer._detect_is_causal_mask"},
/* training frameworks: their action and the user's setting */
/* Lightning's move_data_to_device: a batch (under Strategy.batch_to_device), a logged
     * value's metric state (_ResultMetric.to), teardown's metrics to the CPU, or none of these */
#define LIGHTNING_MOVE(pkg)                                                           \
    COPY, BIND("torch::autograd::THPVariable_to(_object*, _object*, _object*)"),      \
        PYF(pkg "/utilities/apply_func.py", "move_data_to_device.<locals>.batch_to"), \
        PYF("lightning_utilities/core/apply_func.py", "apply_to_collection"),         \
        PYF(pkg "/utilities/apply_func.py", "move_data_to_device")
                    {H2D,
                     {LIGHTNING_MOVE("lightning/fabric"),
                      PYF("lightning/pytorch/core/module.py",
                          "LightningModule._apply_batch_transfer_handler"),
                      PYF("lightning/pytorch/strategies/strategy.py", "Strategy.batch_to_device"),
                      PYF("lightning/pytorch/trainer/trainer.py", "Trainer.fit"), USER},
                     "Lightning batch transfer",
                     "Lightning's batch transfer (move_data_to_device)",
                     "lightning.pytorch.strategies.strategy.Strategy.batch_to_device"},
                    {H2D,
                     {LIGHTNING_MOVE("lightning_fabric"),
                      PYF("pytorch_lightning/strategies/strategy.py", "Strategy.batch_to_device"),
                      USER},
                     "Lightning batch transfer",
                     "Lightning's batch transfer",
                     "pytorch_lightning.strategies.strategy.Strategy.batch_to_device"},
                    {H2D,
                     {LIGHTNING_MOVE("lightning/fabric"),
                      PYF("lightning/pytorch/trainer/connectors/logger_connector/result.py",
                          "_ResultMetric.to"),
                      PYF("lightning/pytorch/trainer/connectors/logger_connector/result.py",
                          "_ResultCollection.log"),
                      PYF("lightning/pytorch/core/module.py", "LightningModule.log"), USER},
                     "self.log metric state",
                     "self.log(name, value) moves the name's metric state",
                     "lightning.pytorch.trainer.connectors.logger_connector.result._ResultMetric.to"},
                    {H2D,
                     {LIGHTNING_MOVE("lightning_fabric"),
                      PYF("pytorch_lightning/trainer/connectors/logger_connector/result.py",
                          "_ResultMetric.to"),
                      USER},
                     "self.log metric state",
                     "self.log(name, value) moves",
                     "pytorch_lightning.trainer.connectors.logger_connector.result._ResultMetric.to"},
                    /* teardown: the outer move_data_to_device (of the collection) holds an inner one of a metric */
                    {H2D,
                     {LIGHTNING_MOVE("lightning/fabric"),
                      PYF("lightning/pytorch/trainer/connectors/logger_connector/result.py",
                          "_ResultMetric.to"),
                      PYF("lightning/fabric/utilities/apply_func.py",
                          "move_data_to_device.<locals>.batch_to"),
                      PYF("lightning/pytorch/trainer/connectors/logger_connector/result.py",
                          "_ResultCollection.to"),
                      PYF("lightning/pytorch/trainer/connectors/logger_connector/result.py",
                          "_ResultCollection.cpu"),
                      USER},
                     "Lightning teardown: logged metrics to the CPU",
                     "at the end of fit Lightning moves the logged metrics",
                     "lightning.pytorch.trainer.connectors.logger_connector.result._ResultCollection.cpu"},
                    {H2D,
                     {LIGHTNING_MOVE("lightning/fabric"),
                      PYF("lightning/pytorch/trainer/connectors/logger_connector/logger_connector.py",
                          "_LoggerConnector.teardown"),
                      USER},
                     "Lightning teardown: logged metrics to the CPU",
                     "at the end of fit Lightning moves the logged metrics",
                     "lightning.pytorch.trainer.connectors.logger_connector.logger_connector._LoggerConnector.teardown"},
                    {H2D,
                     {LIGHTNING_MOVE("lightning/fabric"), USER},
                     "Lightning move_data_to_device",
                     "Lightning's move_data_to_device copied tensors",
                     "lightning.fabric.utilities.apply_func.move_data_to_device.<locals>.batch_to"},
                    {H2D,
                     {LIGHTNING_MOVE("lightning_fabric"), USER},
                     "Lightning move_data_to_device",
                     "Lightning's move_data_to_device copied tensors",
                     "lightning_fabric.utilities.apply_func.move_data_to_device.<locals>.batch_to"},
                    {H2D,
                     {COPY, PYF("transformers/trainer.py", "Trainer._prepare_input"),
                      PYF("transformers/trainer.py", "Trainer.training_step"), USER},
                     "Hugging Face Trainer batch transfer",
                     "the Trainer copies each batch",
                     "transformers.trainer.Trainer._prepare_input"},
                    {H2D,
                     {COPY, PYF("accelerate/utils/operations.py", "send_to_device"),
                      PYF("accelerate/data_loader.py", "DataLoaderShard.__iter__"), USER},
                     "Accelerate batch transfer",
                     "Accelerate copies each batch",
                     "accelerate.utils.operations.send_to_device"},
                    /* torch's Python bindings */
                    {SYNC,
                     {SCALAR,
                      NAT(OPS("is_nonzero")),
                      BIND("torch::autograd::THPVariable_is_nonzero(_object*, _object*)"),
                      {"slot_nb_bool", "/usr/lib/libpython3.11.so.1.0", "", 0, 1, false, 0},
                      USER},
                     "Tensor.__bool__",
                     "if t: / bool(t)",
                     "torch::autograd::THPVariable_is_nonzero(_object*, _object*)"},
                    {SYNC,
                     {SCALAR, BIND("torch::autograd::THPVariable_item(_object*, _object*)"), USER},
                     "Tensor.item",
                     ".item() copies a scalar",
                     "torch::autograd::THPVariable_item"},
                    {SYNC,
                     {SCALAR, BIND("torch::autograd::THPVariable_float_scalar(_object*, _object*)"),
                      USER},
                     "Tensor.__float__",
                     "float(t) copies a scalar",
                     "torch::autograd::THPVariable_float_scalar"},
                    {SYNC,
                     {SCALAR,
                      BIND("torch::autograd::THPVariable_integral_scalar(_object*, _object*)"),
                      USER},
                     "Tensor.__int__",
                     "int(t) reads a CUDA scalar",
                     "torch::autograd::THPVariable_integral_scalar"},
                    {SYNC,
                     {SCALAR, BIND("torch::autograd::THPVariable_index_scalar(_object*, _object*)"),
                      BIND("torch::autograd::THPVariable_getitem(_object*, _object*)"), USER},
                     "Tensor.__index__",
                     "a CUDA tensor used as an index or a size",
                     "torch::autograd::THPVariable_index_scalar"},
                    {SYNC,
                     {COPY, BIND("torch::utils::tensor_to_list(at::Tensor const&)"),
                      BIND("torch::autograd::THPVariable_tolist(_object*, _object*)"), USER},
                     "Tensor.tolist",
                     ".tolist() copies the tensor",
                     "torch::autograd::THPVariable_tolist"},
                    {H2D,
                     {COPY,
                      BIND(
                          "torch::autograd::dispatch_to(at::Tensor const&, c10::Device, bool, bool, std::optional<c10::MemoryFormat>)"),
                      BIND("torch::autograd::THPVariable_cpu(_object*, _object*, _object*)"), USER},
                     "Tensor.cpu",
                     "x.cpu() copies to pageable host memory",
                     "torch::autograd::THPVariable_cpu"},
                    {H2D,
                     {COPY, BIND("torch::autograd::THPVariable_cuda(_object*, _object*, _object*)"),
                      USER},
                     "Tensor.cuda",
                     "x.cuda() copies from pageable host memory",
                     "torch::autograd::THPVariable_cuda"},
                    {H2D,
                     {COPY, BIND("torch::autograd::THPVariable_to(_object*, _object*, _object*)"),
                      USER},
                     "Tensor.to",
                     "x.to(...) between host and device waits",
                     "torch::autograd::THPVariable_to"},
                    /* model.cuda() / model.cpu(): the module's op, as model.to() */
                    {
                        H2D,
                        {COPY,
                         BIND("torch::autograd::THPVariable_cuda(_object*, _object*, _object*)"),
                         PYF("torch/nn/modules/module.py", "Module.cuda.<locals>.<lambda>"),
                         PYF("torch/nn/modules/module.py", "Module._apply"),
                         PYF("torch/nn/modules/module.py", "Module.cuda"), USER},
                        "Module.cuda",
                        "model.cuda() copies every parameter from pageable memory",
                        "torch.nn.modules.module.Module.cuda"},
                    {H2D,
                     {COPY, BIND("torch::autograd::THPVariable_cpu(_object*, _object*, _object*)"),
                      PYF("torch/nn/modules/module.py", "Module.cpu.<locals>.<lambda>"),
                      PYF("torch/nn/modules/module.py", "Module._apply"),
                      PYF("torch/nn/modules/module.py", "Module.cpu"), USER},
                     "Module.cpu",
                     "model.cpu() copies every parameter and buffer to pageable host memory",
                     "torch.nn.modules.module.Module.cpu"},
                    /* a list or range index, torch.tensor / torch.as_tensor of host data: made on the host,
     * copied to the device (the copy is an aten::to inside them: not "Tensor.to") */
                    {SYNC,
                     {COPY,
                      NAT("at::_ops::to_device::call(at::Tensor const&, c10::Device, c10::ScalarType, bool, bool, std::optional<c10::MemoryFormat>)"),
                      BIND(
                          "torch::utils::(anonymous namespace)::internal_new_from_data(c10::TensorOptions, c10::ScalarType, std::optional<c10::Device>, _object*, bool, bool, bool, bool)"),
                      BIND(
                          "torch::utils::indexing_tensor_from_data(c10::TensorOptions, c10::ScalarType, std::optional<c10::Device>, _object*)"),
                      BIND("torch::autograd::THPVariable_getitem(_object*, _object*)"), USER},
                     "x[list index]",
                     "a Python list or range used as an index is made a tensor on the host",
                     "torch::utils::indexing_tensor_from_data"},
                    {SYNC,
                     {COPY,
                      NAT("at::_ops::to_device::call(at::Tensor const&, c10::Device, c10::ScalarType, bool, bool, std::optional<c10::MemoryFormat>)"),
                      BIND(
                          "torch::utils::(anonymous namespace)::internal_new_from_data(c10::TensorOptions, c10::ScalarType, std::optional<c10::Device>, _object*, bool, bool, bool, bool)"),
                      BIND(
                          "torch::utils::tensor_ctor(c10::DispatchKey, c10::ScalarType, torch::PythonArgs&)"),
                      USER},
                     "torch.tensor(host data, device)",
                     "torch.tensor(data, device=...) builds the tensor on the host",
                     "torch::utils::tensor_ctor"},
                    {SYNC,
                     {COPY,
                      BIND(
                          "torch::utils::as_tensor(c10::DispatchKey, c10::ScalarType, torch::PythonArgs&)"),
                      USER},
                     "torch.as_tensor(host data, device)",
                     "torch.as_tensor(data, device=...) of host data copies it",
                     "torch::utils::as_tensor"},
                    {H2D,
                     {NAT("at::_ops::copy_::call(at::Tensor&, at::Tensor const&, bool)"),
                      BIND("torch::autograd::THPVariable_copy_(_object*, _object*, _object*)"),
                      USER},
                     "Tensor.copy_",
                     "copy_ between a CUDA tensor and pageable host memory",
                     "torch::autograd::THPVariable_copy_"},
                    {SYNC,
                     {SCALAR, BIND("torch::PythonArgs::scalar_slow(_object*)"),
                      BIND("torch::autograd::THPVariable_arange(_object*, _object*, _object*)"),
                      USER},
                     "torch.arange",
                     "torch.arange with a CUDA tensor bound",
                     "torch::autograd::THPVariable_arange"},
                    {SYNC,
                     {NAT("void at::native::(anonymous namespace)::_local_scalar_dense_cuda_impl<bool>(at::Tensor const&, c10::Scalar&)"),
                      NAT(OPS("_local_scalar_dense")), NAT(OPS("item")),
                      NAT("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)"),
                      NAT("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)")},
                     "anomaly detection",
                     "autograd anomaly detection",
                     "torch::autograd::Engine::evaluate_function"},
                    {SYNC,
                     {SCALAR, NAT("long at::Tensor::item<long>() const"),
                      NAT("at::native::(anonymous namespace)::get_dropout_state(double, bool, c10::TensorOptions)"),
                      NAT("at::native::(anonymous namespace)::lstm_cudnn(at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor const&, c10::ArrayRef<at::Tensor>)"),
                      NAT("at::_ops::lstm_input::call(at::Tensor const&, c10::ArrayRef<at::Tensor>, c10::ArrayRef<at::Tensor>, bool, long, double, bool, bool, bool)"),
                      BIND("torch::autograd::THPVariable_lstm(_object*, _object*, _object*)"),
                      PYF("torch/nn/modules/rnn.py", "LSTM.forward"), USER},
                     "cuDNN RNN dropout state",
                     "nn.LSTM/GRU/RNN with dropout on cuDNN draws its dropout state's seed",
                     "at::native::(anonymous namespace)::get_dropout_state(double, bool, c10::TensorOptions)"},
                    {"cudaDeviceSynchronize",
                     {NAT("std::vector<cudnn_frontend::ExecutionPlan_v8, std::allocator<cudnn_frontend::ExecutionPlan_v8> > cudnn_frontend::time_sorted_plan<(cudnn_frontend::CudnnFindSamplingTechnique)0>(cudnnContext*)"),
                      NAT("at::native::get_plans_from_find(cudnnContext*, cudnnBackendDescriptorType_t, at::Tensor const&, at::Tensor const&, at::Tensor const&, at::native::(anonymous namespace)::CacheKeyWrapper const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, bool, bool) [clone .isra.0]"),
                      NAT("at::native::run_single_conv(cudnnBackendDescriptorType_t, at::Tensor const&, at::Tensor const&, at::Tensor const&)"),
                      NAT("at::_ops::cudnn_convolution::call(at::Tensor const&, at::Tensor const&)"),
                      NAT("at::_ops::conv2d::call(at::Tensor const&, at::Tensor const&)"),
                      PYF("torch/nn/modules/conv.py", "Conv2d._conv_forward"), USER},
                     "cudnn.benchmark plan search",
                     "torch.backends.cudnn.benchmark=True times cuDNN's candidate plans",
                     "std::vector<cudnn_frontend::ExecutionPlan_v8, std::allocator<cudnn_frontend::ExecutionPlan_v8> > "
                     "cudnn_frontend::time_sorted_plan<(cudnn_frontend::CudnnFindSamplingTechnique)0>"},
                    /* torch 2.6-2.12: get_plans_from_find inlined into run_single_conv */
                    {"cudaEventSynchronize",
                     {NAT("std::vector<cudnn_frontend::ExecutionPlan_v8, std::allocator<cudnn_frontend::ExecutionPlan_v8> > cudnn_frontend::time_sorted_plan<(cudnn_frontend::CudnnFindSamplingTechnique)0>(cudnnContext*)"), NAT("at::native::run_single_conv(cudnnBackendDescriptorType_t, at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, bool, bool, bool)"),
                      NAT("at::_ops::cudnn_convolution::call(at::Tensor const&, at::Tensor const&)"),
                      NAT("at::_ops::conv2d::call(at::Tensor const&, at::Tensor const&)"),
                      PYF("torch/nn/modules/conv.py", "Conv2d._conv_forward"), USER},
                     "cudnn.benchmark plan search",
                     "torch.backends.cudnn.benchmark=True times cuDNN's candidate plans",
                     "std::vector<cudnn_frontend::ExecutionPlan_v8, std::allocator<cudnn_frontend::ExecutionPlan_v8> > "
                     "cudnn_frontend::time_sorted_plan<(cudnn_frontend::CudnnFindSamplingTechnique)0>"},
                    {"cudaFree",
                     {NAT("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::release_cached_blocks(std::shared_ptr<c10::GatheredContext> const&)"),
                      NAT("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::emptyCache(std::pair<unsigned long long, unsigned long long>)"),
                      NAT("at::native::run_single_conv(cudnnBackendDescriptorType_t, at::Tensor const&, at::Tensor const&, at::Tensor const&)"),
                      NAT("at::_ops::cudnn_convolution::call(at::Tensor const&, at::Tensor const&)"),
                      NAT("at::_ops::conv2d::call(at::Tensor const&, at::Tensor const&)"), USER},
                     "cudnn.benchmark plan search",
                     "torch.backends.cudnn.benchmark=True empties the CUDA caching allocator",
                     "at::native::run_single_conv"},
                    /* ATen operators: the one the user called, the argument kind from the innermost */
                    {SYNC,
                     {NAT(OPS("nonzero")),
                      NAT("at::_ops::index_Tensor::call(at::Tensor const&, c10::List<std::optional<at::Tensor> > const&)"),
                      BIND("torch::autograd::THPVariable_getitem(_object*, _object*)"), USER},
                     "x[bool_mask]",
                     "x[bool_mask] syncs to size its output",
                     "aten::index.Tensor"},
                    {H2D,
                     {COPY,
                      NAT("at::_ops::index_Tensor::call(at::Tensor const&, c10::List<std::optional<at::Tensor> > const&)"),
                      BIND("torch::autograd::THPVariable_getitem(_object*, _object*)"), USER},
                     "x[cpu_index]",
                     "x[idx] with a CPU index copies the index to the device",
                     "aten::index.Tensor"},
                    {SYNC,
                     {NAT(OPS("nonzero")),
                      NAT("at::_ops::index_put_::call(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool)"),
                      BIND("torch::autograd::THPVariable_setitem(_object*, _object*, _object*)"),
                      USER},
                     "x[bool_mask] = v",
                     "x[mask] = v with a tensor v",
                     "aten::index_put_"},
                    {H2D,
                     {COPY,
                      NAT("at::_ops::index_put_::call(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool)"),
                      USER},
                     "x[cpu_index] = v",
                     "x[idx] = v with a CPU index",
                     "aten::index_put_"},
                    /* the functional form through the boxed path, as a compiled graph calls it */
                    {SYNC,
                     {NAT(OPS("nonzero")),
                      NAT("at::_ops::index_put::redispatch(c10::DispatchKeySet, at::Tensor const&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool)"),
                      USER},
                     "x[bool_mask] = v",
                     "x[mask] = v with a tensor v",
                     "aten::index_put"},
                    {H2D,
                     {COPY,
                      NAT("at::_ops::index_put::call(at::Tensor const&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool)"),
                      USER},
                     "x[cpu_index] = v",
                     "x[idx] = v with a CPU index",
                     "aten::index_put"},
                    {SYNC,
                     {NAT(OPS("nonzero")),
                      NAT("at::_ops::_index_put_impl_::call(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool)"),
                      USER},
                     "x[bool_mask] = v",
                     "x[mask] = v with a tensor v",
                     "aten::_index_put_impl_"},
                    {H2D,
                     {COPY,
                      NAT("at::_ops::_index_put_impl_::call(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool)"),
                      USER},
                     "x[cpu_index] = v",
                     "x[idx] = v with a CPU index",
                     "aten::_index_put_impl_"},
                    /* the value, not the index, copied: _index_put_impl_ -> Tensor::to (a CPU index: make_info) */
                    {H2D,
                     {COPY,
                      NAT("at::Tensor::to(c10::TensorOptions, bool, bool, std::optional<c10::MemoryFormat>) const"),
                      NAT("at::native::_index_put_impl_(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool)"),
                      NAT("at::_ops::_index_put_impl_::call(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool)"),
                      NAT("at::_ops::index_put_::call(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool)"),
                      BIND("torch::autograd::THPVariable_setitem(_object*, _object*, _object*)"),
                      USER},
                     "x[idx] = host value",
                     "x[idx] = v with v on the host (a CPU tensor, or a Python number before torch 2.15)",
                     "at::native::_index_put_impl_"},
                    {H2D,
                     {COPY,
                      NAT("at::native::make_info(at::Tensor, c10::IListRef<at::OptionalTensorRef>)"),
                      NAT("at::native::_index_put_impl_(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool)"),
                      NAT("at::_ops::_index_put_impl_::call(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool, bool)"),
                      NAT("at::_ops::index_put_::call(at::Tensor&, c10::List<std::optional<at::Tensor> > const&, at::Tensor const&, bool)"),
                      BIND("torch::autograd::THPVariable_setitem(_object*, _object*, _object*)"),
                      USER},
                     "x[cpu_index] = v",
                     "x[idx] = v with a CPU index",
                     "aten::index_put_"},
                    {SYNC,
                     {NAT(OPS("nonzero")), NAT(OPS("masked_select")), USER},
                     "torch.masked_select",
                     "masked_select has a data-dependent size",
                     "aten::masked_select"},
                    {SYNC,
                     {NAT("void at::native::nonzero_cuda_out_impl<float>(at::Tensor const&, at::Tensor&)"),
                      NAT(OPS("nonzero")), USER},
                     "torch.nonzero",
                     "torch.nonzero syncs to size its output",
                     "aten::nonzero"},
                    {SYNC,
                     {NAT(OPS("nonzero")), NAT(OPS("nonzero_numpy")), USER},
                     "torch.nonzero(as_tuple=True)",
                     "torch.nonzero(as_tuple=True) syncs",
                     "aten::nonzero_numpy"},
                    {SYNC,
                     {NAT(OPS("nonzero")), NAT(OPS("nonzero_numpy")), NAT(OPS("where")), USER},
                     "torch.where(cond)",
                     "torch.where(cond) (one argument",
                     "aten::where"},
                    {SYNC,
                     {NAT(OPS("nonzero")), NAT(OPS("argwhere")), USER},
                     "torch.argwhere",
                     "torch.argwhere syncs",
                     "aten::argwhere"},
                    {SYNC,
                     {SCALAR, NAT(OPS("_unique2")), PYF("torch/functional.py", "_unique_impl"),
                      PYF("torch/_jit_internal.py", "boolean_dispatch.<locals>.fn"), USER},
                     "torch.unique",
                     "torch.unique syncs to size its output",
                     "aten::_unique2"},
                    {SYNC,
                     {SCALAR, NAT(OPS("_unique")), USER},
                     "torch.unique",
                     "torch.unique syncs",
                     "aten::_unique"},
                    {SYNC,
                     {SCALAR, NAT(OPS("unique_dim")), USER},
                     "torch.unique(dim=)",
                     "torch.unique syncs",
                     "aten::unique_dim"},
                    {SYNC,
                     {SCALAR, NAT(OPS("unique_consecutive")), USER},
                     "torch.unique_consecutive",
                     "torch.unique_consecutive syncs",
                     "aten::unique_consecutive"},
                    {SYNC,
                     {SCALAR, NAT(OPS("one_hot")), USER},
                     "F.one_hot",
                     "one_hot without num_classes",
                     "aten::one_hot"},
                    {SYNC,
                     {SCALAR, NAT(OPS("repeat_interleave_Tensor")),
                      NAT(OPS("repeat_interleave_self_Tensor")), USER},
                     "torch.repeat_interleave",
                     "repeat_interleave with tensor repeats",
                     "aten::repeat_interleave.self_Tensor"},
                    {SYNC,
                     {SCALAR, NAT(OPS("repeat_interleave_Tensor")), USER},
                     "torch.repeat_interleave",
                     "repeat_interleave with tensor repeats",
                     "aten::repeat_interleave.Tensor"},
                    {SYNC,
                     {SCALAR, NAT(OPS("bincount")), USER},
                     "torch.bincount",
                     "bincount reads the input's min and max",
                     "aten::bincount"},
                    {SYNC,
                     {SCALAR, NAT(OPS("histc")), USER},
                     "torch.histc",
                     "histc reads the input's min and max",
                     "aten::histc"},
                    {SYNC,
                     {SCALAR, NAT(OPS("allclose")), USER},
                     "torch.allclose",
                     "torch.allclose returns a Python bool",
                     "aten::allclose"},
                    {SYNC,
                     {SCALAR, NAT(OPS("equal")), USER},
                     "torch.equal",
                     "torch.equal returns a Python bool",
                     "aten::equal"},
                    {SYNC,
                     {SCALAR, NAT(OPS("is_nonzero")),
                      BIND("torch::autograd::THPVariable_is_nonzero(_object*, _object*, _object*)"),
                      USER},
                     "torch.is_nonzero",
                     "if t: / bool(t)",
                     "aten::is_nonzero"},
                    {SYNC,
                     {SCALAR,
                      {"loss_fn(float*, int)", "/home/u/train", "train.cpp", 42, 0x1100, false, 0}},
                     "Tensor.item",
                     ".item() copies a scalar",
                     "aten::item"},
                    {SYNC,
                     {NAT(OPS("_local_scalar_dense")),
                      {"loss_fn(float*, int)", "/home/u/train", "train.cpp", 42, 0x1100, false, 0}},
                     "Tensor.item",
                     ".item() copies a scalar",
                     "aten::_local_scalar_dense"},
                    {H2D,
                     {NAT("at::_ops::copy_::call(at::Tensor&, at::Tensor const&, bool)"), USER},
                     "Tensor.copy_",
                     "a synchronous (or pageable-memory) copy",
                     "aten::copy_"},
                    {H2D,
                     {COPY, USER},
                     "Tensor.to",
                     "a synchronous (or pageable-memory) copy",
                     "aten::to.dtype_layout"},
                    {H2D,
                     {NAT(OPS("_to_copy")), NAT(OPS("to_device")), USER},
                     "Tensor.to",
                     "a synchronous",
                     "aten::to.device"},
                    {H2D,
                     {NAT(OPS("_to_copy")), NAT(OPS("to_dtype")), USER},
                     "Tensor.to",
                     "a synchronous",
                     "aten::to.dtype"},
                    {H2D,
                     {NAT(OPS("_to_copy")), NAT(OPS("to_other")), USER},
                     "Tensor.to",
                     "a synchronous",
                     "aten::to.other"},
                    {H2D,
                     {NAT(OPS("_to_copy")), USER},
                     "Tensor.to",
                     "a synchronous",
                     "aten::_to_copy"},
                    /* the API, when no operator says more */
                    {"cudaDeviceSynchronize",
                     {{"main", "/home/u/train", "train.cpp", 9, 1, false, 0}},
                     "cudaDeviceSynchronize",
                     "explicit torch.cuda.synchronize",
                     "cudaDeviceSynchronize"},
                    {"cudaEventSynchronize",
                     {USER},
                     "cudaEventSynchronize",
                     "Event.synchronize blocks",
                     "cudaEventSynchronize"},
                    {"cudaFree",
                     {USER},
                     "cudaFree",
                     "cudaFree synchronizes the device",
                     "cudaFree"},
                    {"cudaFreeHost",
                     {USER},
                     "cudaFreeHost",
                     "cudaFree synchronizes the device",
                     "cudaFreeHost"},
                    {"cudaFreeAsync",
                     {USER},
                     "cudaFreeAsync",
                     "cudaFree synchronizes the device",
                     "cudaFreeAsync"},
                    {"cudaFreeArray",
                     {USER},
                     "cudaFreeArray",
                     "cudaFree synchronizes the device",
                     "cudaFreeArray"},
                    {"cudaMemcpy",
                     {USER},
                     "cudaMemcpy",
                     "a synchronous (or pageable-memory) copy",
                     "cudaMemcpy"},
                    {"cudaMemcpyAsync_ptsz",
                     {USER},
                     "cudaMemcpyAsync",
                     "a synchronous",
                     "cudaMemcpyAsync"},
                    {"cudaMemcpy2D", {USER}, "cudaMemcpy2D", "a synchronous", "cudaMemcpy2D"},
                    {"cudaMemcpy2DAsync",
                     {USER},
                     "cudaMemcpy2DAsync",
                     "a synchronous",
                     "cudaMemcpy2DAsync"},
                    {"cudaMemcpy3D_ptds", {USER}, "cudaMemcpy3D", "a synchronous", "cudaMemcpy3D"},
                    {"cudaMemcpy3DAsync",
                     {USER},
                     "cudaMemcpy3DAsync",
                     "a synchronous",
                     "cudaMemcpy3DAsync"},
                    {"cudaMemcpyFromSymbol",
                     {USER},
                     "cudaMemcpyFromSymbol",
                     "a synchronous",
                     "cudaMemcpyFromSymbol"},
                    {"cudaMemcpyFromSymbolAsync",
                     {USER},
                     "cudaMemcpyFromSymbolAsync",
                     "a synchronous",
                     "cudaMemcpyFromSymbolAsync"},
                    {"cudaMemcpyToSymbol",
                     {USER},
                     "cudaMemcpyToSymbol",
                     "a synchronous",
                     "cudaMemcpyToSymbol"},
                    {"cudaMemcpyToSymbolAsync",
                     {USER},
                     "cudaMemcpyToSymbolAsync",
                     "a synchronous",
                     "cudaMemcpyToSymbolAsync"},
};

static uint32_t nframes_of(const struct hint_case *c)
{
    uint32_t n = 0;
    while (n < sizeof c->frames / sizeof c->frames[0] && c->frames[n].function)
        n++;
    return n;
}

static struct site_op op_of(const char *api, const struct rep_frame *f, uint32_t n)
{
    struct rep_site s = {api, 1, 1, 1, n, n ? f : NULL};
    struct site_op op;
    hints_op(&s, &op);
    return op;
}

static void check_case(const struct hint_case *c)
{
    struct site_op op = op_of(c->api, c->frames, nframes_of(c));
    if (strcmp(op.op, c->op) || strncmp(op.hint, c->hint, strlen(c->hint)) ||
        strcmp(op.matched, c->matched))
        fail_msg("case %s / %s: got op \"%s\", matched \"%s\", hint \"%s\"", c->op, c->matched,
                 op.op, op.matched, op.hint);
}

/* Every case gets its own row's operator and advice. */
static void test_every_case(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i]);
}

/* Every row of the table has a case of its own above (by its key and operator). */
static void test_every_row_has_a_case(void **state)
{
    (void)state;
    const char *key, *op;
    size_t rows = 0;
    for (size_t r = 0; hints_rule_at(r, &key, &op); r++, rows++) {
        bool covered = false;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0] && !covered; i++)
            covered = !strcmp(cases[i].matched, key) && !strcmp(cases[i].op, op);
        if (!covered)
            fail_msg("row %zu (%s, %s) has no case in test_hints.c", r, key, op);
    }
    assert_true(rows >= 70);
}

/* Exact names only: what a substring would have matched is no evidence. */
static void test_exact_names_only(void **state)
{
    (void)state;
    /* save_on_cpu's pack hook runs under SavedVariable::set_hooks_and_pack_data, whose signature
     * holds std::unique_ptr: not torch.unique; its frame gives save_on_cpu */
    static const struct rep_frame packed[] = {
        COPY,
        BIND("torch::autograd::THPVariable_cpu(_object*, _object*, _object*)"),
        PYF("torch/autograd/graph.py", "save_on_cpu.__init__.<locals>.pack_to_cpu"),
        NAT("torch::autograd::SavedVariable::set_hooks_and_pack_data(std::unique_ptr<torch::autograd::SavedVariableHooks, std::default_delete<torch::autograd::SavedVariableHooks> >&&, at::Tensor const&)"),
        NAT("at::_ops::mul_Tensor::call(at::Tensor const&, at::Tensor const&)"),
        USER};
    struct site_op op = op_of(H2D, packed, 9);
    assert_string_equal(op.op, "save_on_cpu");
    /* is_nonzero is not nonzero: bool(t) is the bool's */
    static const struct rep_frame b[] = {
        NAT("at::native::is_nonzero(at::Tensor const&)"), NAT(OPS("is_nonzero")),
        BIND("torch::autograd::THPVariable_is_nonzero(_object*, _object*)"), USER};
    op = op_of(SYNC, b, 4);
    assert_string_equal(op.op, "Tensor.__bool__");
    assert_null(strstr(op.hint, "torch.nonzero"));
    /* a native implementation's name is not an operator: only the dispatcher's entry is */
    static const struct rep_frame impl[] = {NAT("at::native::nonzero_cuda(at::Tensor const&)"),
                                            USER};
    op = op_of(SYNC, impl, 2);
    assert_string_equal(op.op, SYNC);
    assert_string_equal(op.hint, "");
    assert_string_equal(op.matched, "");
    /* the boxed path (torch.ops.aten.nonzero from generated code) enters at ::redispatch: the
     * operator; a user function named like torch's is not torch's */
    static const struct rep_frame re[] = {
        NAT("at::_ops::nonzero::redispatch(c10::DispatchKeySet, at::Tensor const&)"),
        {"save", "", "/home/u/serialization.py", 4, 0, true, 0},
        USER};
    op = op_of(SYNC, re, 3);
    assert_string_equal(op.op, "torch.nonzero");
    assert_string_equal(op.matched, "aten::nonzero");
    /* nor is a name that merely starts like the dispatcher's */
    static const struct rep_frame near[] = {
        NAT("at::_ops::nonzero::redispatched_elsewhere(at::Tensor const&)"), USER};
    op = op_of(SYNC, near, 2);
    assert_string_equal(op.op, SYNC);
}

/* The operator the user called decides; an inner operator's advice is never another op's. */
static void test_unknown_op_is_named(void **state)
{
    (void)state;
    static const struct rep_frame f[] = {SCALAR, NAT(OPS("searchsorted_Tensor")), USER};
    struct site_op op = op_of(SYNC, f, 4);
    assert_string_equal(op.op, "aten::searchsorted_Tensor");
    assert_string_equal(op.aten, "aten::searchsorted_Tensor");
    assert_string_equal(op.aten_inner, "aten::_local_scalar_dense");
    assert_string_equal(op.matched, "aten::searchsorted_Tensor");
    assert_string_equal(op.hint,
                        "aten::searchsorted_Tensor synchronizes (the wait is in "
                        "aten::_local_scalar_dense): it reads a value or its output's "
                        "size on the host; look for an argument that fixes it (a size, a "
                        "count, min/max) or a fixed-size form, or move it out of the step");
    /* an operator that is its own wait */
    static const struct rep_frame g[] = {NAT(OPS("kthvalue")), USER};
    op = op_of(SYNC, g, 2);
    assert_string_equal(op.op, "aten::kthvalue");
    assert_true(!strncmp(op.hint, "aten::kthvalue synchronizes: it reads", 37));
    /* index.Tensor whose wait is neither a mask's nor an index copy's: named, not guessed */
    static const struct rep_frame h[] = {
        SCALAR,
        NAT("at::_ops::index_Tensor::call(at::Tensor const&, c10::List<std::optional<at::Tensor> > const&)"),
        USER};
    op = op_of(SYNC, h, 4);
    assert_string_equal(op.op, "aten::index.Tensor");
    /* the schema name of a known operator with its overload */
    static const struct rep_frame k[] = {NAT(OPS("repeat_interleave_Tensor")), NAT(OPS("histc")),
                                         USER};
    op = op_of(SYNC, k, 3);
    assert_string_equal(op.aten, "aten::histc");
    assert_string_equal(op.aten_inner, "aten::repeat_interleave.Tensor");
}

/* Only frames from the CUDA call to below the user frame count. */
static void test_only_frames_below_the_user_frame(void **state)
{
    (void)state;
    /* nonzero above the user frame (the user's own caller): not evidence */
    static const struct rep_frame f[] = {
        {"cudart::cudaApiStreamSynchronize", CUDART, "", 0, 0x1, false, 0},
        {"loss_fn", "/home/u/train", "train.cpp", 42, 0x2, false, 0},
        NAT(OPS("nonzero")),
    };
    assert_int_equal(op_of(SYNC, f, 3).hint[0], '\0');
    /* no user frame at all: every frame is in scope */
    static const struct rep_frame rt[] = {
        {"cudart::cudaApiStreamSynchronize", CUDART, "", 0, 0x1, false, 0}, NAT(OPS("nonzero"))};
    struct rep_site s2 = {SYNC, 1, 1, 1, 2, rt};
    assert_int_equal(hints_user_frame(&s2), 0);
    assert_string_equal(op_of(SYNC, rt, 2).op, "torch.nonzero");
    /* a site without frames: only the API rules */
    assert_string_equal(op_of("cudaFree", NULL, 0).op, "cudaFree");
    assert_string_equal(op_of(SYNC, NULL, 0).op, SYNC);
}

static void test_user_frame(void **state)
{
    (void)state;
    assert_int_equal(hints_user_frame(&sites[0]), 2);
    assert_int_equal(hints_user_frame(&sites[1]), 0);
    assert_int_equal(hints_user_frame(&sites[2]), 3);
    /* all runtime: the innermost */
    static const struct rep_frame rt[] = {
        {"a", "/x/libcudart.so.13", "", 0, 0, false, 0},
        {"b", "/x/libc10_cuda.so", "", 0, 0, false, 0},
        {"c", "/lib/x86_64-linux-gnu/libc.so.6", "", 0, 0, false, 0},
        {"d", "", "/usr/lib/python3.11/threading.py", 1, 0, true, 0},
        {"e", "", "<frozen importlib._bootstrap>", 1, 0, true, 0},
    };
    struct rep_site s = {"cudaDeviceSynchronize", 1, 1, 1, 5, rt};
    assert_int_equal(hints_user_frame(&s), 0);
    /* a package under site-packages is user code */
    static const struct rep_frame pkg[] = {
        {"x", "", SP "timm/models/vit.py", 7, 0, true, 0},
    };
    struct rep_site s2 = {"cudaMemcpyAsync", 1, 1, 1, 1, pkg};
    assert_int_equal(hints_user_frame(&s2), 0);
    assert_false(hints_frame_is_runtime(&pkg[0]));
    /* the training frameworks' frames are not: the user's line is below them */
    static const struct rep_frame fw[] = {
        COPY,
        PYF("lightning/fabric/utilities/apply_func.py", "move_data_to_device.<locals>.batch_to"),
        PYF("pytorch_lightning/loops/fit_loop.py", "_FitLoop.run"),
        PYF("transformers/trainer.py", "Trainer.train"),
        PYF("accelerate/accelerator.py", "Accelerator.backward"),
        PYF("deepspeed/runtime/engine.py", "DeepSpeedEngine.step"),
        {"ds_op", SP "deepspeed/ops/adam/cpu_adam_op.so", "", 0, 1, false, 0},
        PYF("torchvision/utils.py", "save_image"),
        PYF("torchaudio/functional/functional.py", "spectrogram"),
        {"main", "", "/home/u/train.py", 30, 0, true, 0},
    };
    struct rep_site s3 = {"cudaMemcpyAsync", 1, 1, 1, 12, fw};
    assert_int_equal(hints_user_frame(&s3), 11);
    /* a package whose name only begins like torch's is the user's */
    static const struct rep_frame torchlike = PYF("torchvision_extra/utils.py", "f");
    assert_false(hints_frame_is_runtime(&torchlike));
    /* CPython 3.12+'s shim frame of a type's __init__ (no source file) is the interpreter's;
     * a script run by a relative path and an exec'd string are the user's */
    static const struct rep_frame shim = {"__init__", "", "__init__", 0, 0, true, 0};
    assert_true(hints_frame_is_runtime(&shim));
    static const struct rep_frame rel = {"main", "", "train.py", 3, 0, true, 0};
    assert_false(hints_frame_is_runtime(&rel));
    static const struct rep_frame str = {"<module>", "", "<string>", 1, 0, true, 0};
    assert_false(hints_frame_is_runtime(&str));
    /* Hugging Face's models are the user's (the model), its Trainer is not */
    static const struct rep_frame hf =
        PYF("transformers/models/bert/modeling_bert.py", "BertModel.forward");
    assert_false(hints_frame_is_runtime(&hf));
}

/* Which node's backward a sync ran in, from its own frames (output/backward.c). */
static void test_backward_node_of(void **state)
{
    (void)state;
    char node[64];
    uint32_t at = 99;
    assert_true(backward_node_of(backward_unseen_frames, 5, node, sizeof node, &at));
    assert_string_equal(node, "IndexBackward0");
    assert_int_equal(at, 2);
    assert_true(backward_node_of(custom_frames, 5, node, sizeof node, &at));
    assert_string_equal(node, "ClampGradBackward");
    assert_int_equal(at, 3);
    /* only the sync's own frames count: nothing after a section marker */
    assert_true(backward_node_of(backward_frames, 13, node, sizeof node, NULL));
    assert_string_equal(node, "IndexBackward0");
    assert_false(backward_node_of(nonzero_frames, 6, node, sizeof node, NULL));
    /* a PyNode with no Python backward inside it, and a generated name that is no node's */
    static const struct rep_frame odd[] = {
        {"torch::autograd::generated::details::index_backward(at::Tensor)", "", "", 0, 0, false, 0},
        {"torch::autograd::PyNode::apply(std::vector<at::Tensor>&&)", "", "", 0, 0, false, 0},
    };
    assert_false(backward_node_of(odd, 2, node, sizeof node, NULL));
}

/* The hint of a backward sync follows the forward op (the node), not the frames it ran in:
 * IndexBackward0's own frames hold index_put_ and nonzero, yet the advice is the mask's. */
/* torch.compile's own work (compiling, autotuning) by the files of the sync's own Python
 * frames; the compiled code it runs is the program's. */
static void test_compile_work(void **state)
{
    (void)state;
    static const struct rep_frame autotune[] = {
        PYF("torch/cuda/__init__.py", "synchronize"),
        PYF("torch/_inductor/runtime/benchmarking.py", "InductorBenchmarker.benchmark_gpu"),
        PYF("torch/_inductor/runtime/triton_heuristics.py", "CachingAutotuner.run"), USER};
    struct rep_site s = {SYNC, 1, 1, 1, 4, autotune};
    assert_true(hints_compile_work(&s));
    /* its advice is about compiling, not the op's ("remove torch.cuda.synchronize"), and it is
     * no graph break */
    struct site_op op = op_of(SYNC, autotune, 4);
    assert_true(!strncmp(op.hint, "torch.compile's own work", 24));
    assert_string_equal(op.compiled, "");
    static const struct rep_frame folding[] = {
        SCALAR, PYF("torch/_inductor/constant_folding.py", "ConstantFolder.run_node"),
        PYF("torch/_inductor/compile_fx.py", "compile_fx"),
        PYF("torch/_dynamo/convert_frame.py", "_compile"), USER};
    s = (struct rep_site){SYNC, 1, 1, 1, 6, folding};
    assert_true(hints_compile_work(&s));
    /* the compiled code running: the program's */
    static const struct rep_frame running[] = {
        NAT(OPS("nonzero")),
        PYF("torch/_ops.py", "OpOverload.__call__"),
        {"masked_loss", "<inductor>.cabcdefg", "/home/u/train.py", 9, 0, true, 0},
        PYF("torch/_inductor/output_code.py", "CompiledFxGraph.__call__"),
        USER};
    s = (struct rep_site){SYNC, 1, 1, 1, 5, running};
    assert_false(hints_compile_work(&s));
    /* a user's file that merely ends like torch's is not torch's */
    static const struct rep_frame mine[] = {
        {"f", "", "/home/u/my_torch/_dynamo/convert_frame.py.bak", 3, 0, true, 0}, USER};
    s = (struct rep_site){SYNC, 1, 1, 1, 2, mine};
    assert_false(hints_compile_work(&s));
}

static void test_backward_hints(void **state)
{
    (void)state;
    struct site_op op = op_of(SYNC, backward_frames, 13);
    assert_string_equal(op.op, "backward of x[bool_mask]");
    assert_true(!strncmp(op.hint, "the backward of a boolean-mask index", 36));
    assert_string_equal(op.matched, "IndexBackward0");
    struct rep_site s = {SYNC, 1, 1, 1, 13, backward_frames};
    bool found;
    assert_int_equal(hints_forward_user_frame(&s, &found), 7);
    assert_true(found);
    assert_string_equal(s.frames[7].function, "MaskedLoss.cross_entropy");
    assert_int_equal(hints_caller_user_frame(&s, &found), 12);
    assert_true(found);
    /* the own frames' user frame ignores the sections after them */
    assert_int_equal(hints_user_frame(&s), 0);
    op = op_of(SYNC, backward_unseen_frames, 5);
    assert_true(!strncmp(op.hint, "the backward of a boolean-mask index", 36));
    assert_string_equal(
        op.matched, "torch::autograd::generated::IndexBackward0::apply(std::vector<at::Tensor>&&)");
    struct rep_site u = {SYNC, 1, 1, 1, 5, backward_unseen_frames};
    assert_false((hints_forward_user_frame(&u, &found), found));
    /* a cause rule's frame names the wait in a backward pass too: cuDNN's benchmark search in
     * ConvolutionBackward0 is the benchmark's, not the convolution's to rewrite */
    static const struct rep_frame plan_search[] = {
        {"std::vector<cudnn_frontend::ExecutionPlan_v8, std::allocator<cudnn_frontend::ExecutionPlan_v8> > cudnn_frontend::time_sorted_plan<(cudnn_frontend::CudnnFindSamplingTechnique)0>(cudnnContext*)",
         TORCH, "", 0, 1, false, 0},
        {"at::native::get_plans_from_find(cudnnContext*, cudnnBackendDescriptorType_t) [clone .isra.0]",
         TORCH, "", 0, 2, false, 0},
        {"at::native::cudnn_convolution_backward_weight(char const*, c10::ArrayRef<long>)", TORCH,
         "", 0, 3, false, 0},
        {"torch::autograd::generated::ConvolutionBackward0::apply(std::vector<at::Tensor>&&)",
         CPU_LIB, "", 0, 4, false, 0},
    };
    op = op_of("cudaEventSynchronize", plan_search, 4);
    assert_string_equal(op.op, "cudnn.benchmark plan search");
    assert_string_equal(
        op.matched,
        "std::vector<cudnn_frontend::ExecutionPlan_v8, std::allocator<cudnn_frontend::ExecutionPlan_v8> > "
        "cudnn_frontend::time_sorted_plan<(cudnn_frontend::CudnnFindSamplingTechnique)0>");
    assert_true(!strncmp(op.hint, "torch.backends.cudnn.benchmark=True", 35));
    op = op_of(SYNC, custom_frames, 5);
    assert_true(!strncmp(op.hint, "a custom autograd.Function's backward syncs", 43));
    assert_string_equal(op.op, "backward of ClampGradBackward");
    struct rep_site c = {SYNC, 1, 1, 1, 5, custom_frames};
    assert_int_equal(hints_user_frame(&c), 2); /* ClampGrad.backward */
    /* each node rule by its exact name (the version digits aside) */
    static const struct {
        const char *node, *op, *hint;
    } nodes[] = {
        {"GatherBackward0", "backward of torch.gather", "the backward of torch.gather syncs"},
        {"EmbeddingBackward0", "backward of nn.Embedding", "the backward of an embedding lookup"},
        {"MaskedSelectBackward0", "backward of torch.masked_select",
         "the backward of masked_select"},
        {"IndexBackward12", "backward of x[bool_mask]", "the backward of a boolean-mask index"},
        /* a node with no rule of its own: the generic advice; a longer name is another node */
        {"CumsumBackward0", "backward of CumsumBackward0",
         "this sync runs in the backward of the op"},
        {"IndexBackwardX", "backward of IndexBackwardX",
         "this sync runs in the backward of the op"},
    };
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
        char name[160];
        snprintf(name, sizeof name,
                 "torch::autograd::generated::%s::apply(std::vector<at::Tensor>&&)", nodes[i].node);
        struct rep_frame f[] = {{name, CPU_LIB, "", 0, 1, false, 0}};
        op = op_of(SYNC, f, 1);
        assert_string_equal(op.op, nodes[i].op);
        assert_true(!strncmp(op.hint, nodes[i].hint, strlen(nodes[i].hint)));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_case),
        cmocka_unit_test(test_every_row_has_a_case),
        cmocka_unit_test(test_exact_names_only),
        cmocka_unit_test(test_compile_work),
        cmocka_unit_test(test_unknown_op_is_named),
        cmocka_unit_test(test_only_frames_below_the_user_frame),
        cmocka_unit_test(test_user_frame),
        cmocka_unit_test(test_backward_node_of),
        cmocka_unit_test(test_backward_hints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
