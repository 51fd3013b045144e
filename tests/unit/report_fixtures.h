/* tests/unit/report_fixtures.h: the hand-built process of test_report.c and test_hints.c: a
 * segmentation loss like the articles' (a native loss_fn under two runtime frames, a Python frame
 * reached through libtorch's nonzero, unnamed frames, a cudaFree). Static data, one copy. */
#ifndef SYNCSPY_TEST_REPORT_FIXTURES_H
#define SYNCSPY_TEST_REPORT_FIXTURES_H

#include "output/model.h"

#define TORCH "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so"
#define CUDART "/usr/local/cuda/lib64/libcudart.so.12"

/* native C++ training loop: loss_fn <- compute_loss <- main, under two runtime frames */
static const struct rep_frame loss_frames[] = {
    {"cudart::cudaApiStreamSynchronize", CUDART, "", 0, 0x1234, false},
    {"at::_ops::_local_scalar_dense::call(at::Tensor const&)", TORCH, "", 0, 0x5678, false},
    {"loss_fn(float*, int)", "/home/u/train", "train.cpp", 42, 0x1100, false},
    {"compute_loss", "/home/u/train", "train.cpp", 77, 0x1200, false},
    {"main", "/home/u/train", "train.cpp", 120, 0x1300, false},
};
/* the same user frame through another API */
static const struct rep_frame loss_frames2[] = {
    {"loss_fn(float*, int)", "/home/u/train", "train.cpp", 42, 0x1100, false},
    {"compute_loss", "/home/u/train", "train.cpp", 77, 0x1200, false},
};
/* a Python frame reached through libtorch's nonzero (its dispatcher entry, as torch's stacks
 * show it) */
static const struct rep_frame nonzero_frames[] = {
    {"at::_ops::nonzero::call(at::Tensor const&)", TORCH, "", 0, 0x9999, false},
    {"_PyEval_EvalFrameDefault", "/usr/lib/libpython3.11.so.1.0", "", 0, 0x10, false},
    {"forward", "", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", 1501, 0, true},
    {"MaskedLoss.ignore_background", "", "/home/u/proj/train.py", 61, 0, true},
    {"MaskedLoss.forward", "", "/home/u/proj/train.py", 70, 0, true},
    {"<module>", "", "/home/u/proj/train.py", 120, 0, true},
};
/* unnamed frames */
static const struct rep_frame anon_frames[] = {
    {NULL, "/opt/lib/libfoo.so", NULL, 0, 0xabc, false},
    {"", "/opt/lib/libfoo.so", "", 0, 0xdef, false},
};
static const struct rep_frame free_frames[] = {
    {"release_buffers", "/home/u/train", "buffers.cpp", 9, 0x10, false},
};

static const struct rep_site sites[] = {
    /* group loss_fn: 40 + 10 syncs, 160.4 ms + 1 ms */
    {"cudaStreamSynchronize", 40, 160400000, 6100000, 5, loss_frames},
    {"cudaMemcpy", 10, 1000000, 200000, 2, loss_frames2},
    /* group ignore_background: 20 syncs, 300 ms, the heaviest */
    {"cudaStreamSynchronize", 20, 300000000, 20000000, 6, nonzero_frames},
    /* unnamed, 4 syncs, 4 us */
    {"cudaStreamSynchronize", 4, 4000, 1500, 2, anon_frames},
    /* cudaFree, 2 syncs */
    {"cudaFree", 2, 812, 700, 1, free_frames},
};

static const struct rep_step steps[] = {
    {5, 41300000, 6, 12100000, 210, false},
    {6, 41300000, 6, 12100000, 210, false},
};

/* A backward-pass sync (IndexBackward0 in autograd's thread): its own native frames, then the
 * forward stack that created the node, then the stack that called backward. */
#define CPU_LIB "/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"
#define TRAIN_PY "/home/u/proj/train.py"
#define BACKWARD_OWN                                                                                 \
    {"at::native::nonzero_cuda(at::Tensor const&)", TORCH, "", 0, 0x9999, false},                    \
        {"at::native::(anonymous namespace)::index_put_with_sort_kernel(at::Tensor&)",               \
         TORCH,                                                                                      \
         "",                                                                                         \
         0,                                                                                          \
         0x7777,                                                                                     \
         false},                                                                                     \
        {"torch::autograd::generated::IndexBackward0::apply(std::vector<at::Tensor>&&)",             \
         CPU_LIB,                                                                                    \
         "",                                                                                         \
         0,                                                                                          \
         0x4444,                                                                                     \
         false},                                                                                     \
        {"torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", \
         CPU_LIB,                                                                                    \
         "",                                                                                         \
         0,                                                                                          \
         0x3333,                                                                                     \
         false},                                                                                     \
    {                                                                                                \
        "start_thread", "/lib/x86_64-linux-gnu/libc.so.6", "", 0, 0x88, false                        \
    }
static const struct rep_frame backward_frames[] = {
    BACKWARD_OWN,
    {"IndexBackward0", "", "", 0, 0, false, REP_MARK_BACKWARD},
    {"Tensor.__getitem__", "", "/venv/lib/python3.11/site-packages/torch/_tensor.py", 50, 0, true},
    {"MaskedLoss.cross_entropy", "", TRAIN_PY, 22, 0, true},
    {"MaskedLoss.forward", "", TRAIN_PY, 40, 0, true},
    {"main", "", TRAIN_PY, 90, 0, true},
    {"", "", "", 0, 0, false, REP_MARK_CALLER},
    {"Tensor.backward", "", "/venv/lib/python3.11/site-packages/torch/_tensor.py", 614, 0, true},
    {"main", "", TRAIN_PY, 93, 0, true},
};
/* the same sync in a step without attribution: its own frames only (a file that does not say why) */
static const struct rep_frame backward_unseen_frames[] = {BACKWARD_OWN};
/* the same, with why as the agent records it (agent/record/autograd.h): a step without attribution, and
 * a node made in another thread */
static const struct rep_frame backward_step_frames[] = {
    BACKWARD_OWN, {"not_attributed_step", "", "", 0, 0, false, REP_MARK_UNSEEN}};
static const struct rep_frame backward_thread_frames[] = {
    BACKWARD_OWN, {"other_thread", "", "", 0, 0, false, REP_MARK_UNSEEN}};
/* the forward line's own sync (the boolean-mask index itself) */
static const struct rep_frame mask_forward_frames[] = {
    {"at::_ops::nonzero::call(at::Tensor const&)", TORCH, "", 0, 0x9999, false},
    {"at::_ops::index_Tensor::call(at::Tensor const&, c10::List<std::optional<at::Tensor> > const&)",
     CPU_LIB, "", 0, 0x1234, false},
    {"MaskedLoss.cross_entropy", "", TRAIN_PY, 22, 0, true},
    {"main", "", TRAIN_PY, 90, 0, true},
};
/* a custom autograd.Function whose backward calls .item(): Python in the engine thread */
static const struct rep_frame custom_frames[] = {
    {"at::native::_local_scalar_dense_cuda(at::Tensor const&)", TORCH, "", 0, 0x5678, false},
    {"Tensor.item", "", "/venv/lib/python3.11/site-packages/torch/_tensor.py", 7, 0, true},
    {"ClampGrad.backward", "", TRAIN_PY, 12, 0, true},
    {"torch::autograd::PyNode::apply(std::vector<at::Tensor>&&)",
     "/venv/lib/python3.11/site-packages/torch/lib/libtorch_python.so", "", 0, 0x42, false},
    {"torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
     CPU_LIB, "", 0, 0x3333, false},
};

static inline struct rep_process make_proc(int pid, int rank)
{
    return (struct rep_process){.pid = pid,
                                .rank = rank,
                                .schedule = "wait=1,warmup=1,active=3,repeat=4",
                                .steps_seen = 25,
                                .steps = steps,
                                .nsteps = 2,
                                .sites = sites,
                                .nsites = sizeof sites / sizeof sites[0],
                                .active_steps = 20,
                                .syncs = 76,
                                .blocked_ns = 461404812,
                                .launches = 4200,
                                .wall_ns = 826000000};
}

#endif
