/* tests/unit/test_hints.c: the rules of output/hints.c on hand-built sites: which frame is the
 * user's (past CUDA, PyTorch, CPython, libc and the standard library; a package under
 * site-packages is the user's), and the hint table: every rule matches its op, the first match
 * wins, only frames from the CUDA call up to the user frame count, API rules, no rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "output/backward.h"
#include "output/hints.h"
#include "report_fixtures.h"

static void test_user_frame(void **state)
{
    (void)state;
    assert_int_equal(hints_user_frame(&sites[0]), 2);
    assert_int_equal(hints_user_frame(&sites[1]), 0);
    assert_int_equal(hints_user_frame(&sites[2]), 3);
    /* all runtime: the innermost */
    static const struct rep_frame rt[] = {
        {"a", "/x/libcudart.so.13", "", 0, 0, false},
        {"b", "/x/libc10_cuda.so", "", 0, 0, false},
        {"c", "/lib/x86_64-linux-gnu/libc.so.6", "", 0, 0, false},
        {"d", "", "/usr/lib/python3.11/threading.py", 1, 0, true},
        {"e", "", "<frozen importlib._bootstrap>", 1, 0, true},
    };
    struct rep_site s = {"cudaDeviceSynchronize", 1, 1, 1, 5, rt};
    assert_int_equal(hints_user_frame(&s), 0);
    const char *m;
    assert_string_equal(hints_find(&s, &m), "explicit torch.cuda.synchronize: remove it or move "
                                              "it out of the step");
    assert_string_equal(m, "cudaDeviceSynchronize");
    /* a user package under site-packages is user code */
    static const struct rep_frame pkg[] = {
        {"x", "", "/usr/lib/python3.11/site-packages/timm/models/vit.py", 7, 0, true},
    };
    struct rep_site s2 = {"cudaMemcpyAsync", 1, 1, 1, 1, pkg};
    assert_int_equal(hints_user_frame(&s2), 0);
    assert_non_null(hints_find(&s2, &m));
    assert_string_equal(m, "cudaMemcpyAsync");
    /* no rule */
    struct rep_site s3 = {"cudaStreamSynchronize", 1, 1, 1, 1, pkg};
    assert_null(hints_find(&s3, &m));
}

/* A site whose innermost frame is the framework's op (function) under libtorch, called from a
 * user frame, through api. */
static const char *hint_of(const char *api, const char *function, const char **matched)
{
    static struct rep_frame f[2];
    f[0] = (struct rep_frame){function, TORCH, "", 0, 0x10, false};
    f[1] = (struct rep_frame){"step", "", "/home/u/train.py", 3, 0, true};
    struct rep_site s = {api, 1, 1, 1, 2, f};
    return hints_find(&s, matched);
}

static void assert_hint(const char *api, const char *function, const char *starts, const char *matched)
{
    const char *m = NULL, *h = hint_of(api, function, &m);
    if (!h || strncmp(h, starts, strlen(starts)) != 0)
        fail_msg("%s in %s: expected a hint starting \"%s\", got \"%s\"", function, api, starts,
                 h ? h : "(none)");
    assert_string_equal(m, matched);
}

static void test_every_rule_names_its_op(void **state)
{
    (void)state;
    const char *sync = "cudaStreamSynchronize";
    assert_hint(sync, "at::native::index_put_(at::Tensor&)", "x[mask] = v", "at::native::index_put_(at::Tensor&)");
    assert_hint(sync, "at::native::masked_select_cuda(at::Tensor const&)", "masked_select",
                "at::native::masked_select_cuda(at::Tensor const&)");
    assert_hint(sync, "at::native::index(at::Tensor const&)", "x[bool_mask]", "at::native::index(at::Tensor const&)");
    assert_hint(sync, "at::_ops::index_Tensor::call(at::Tensor const&)", "x[bool_mask]",
                "at::_ops::index_Tensor::call(at::Tensor const&)");
    assert_hint(sync, "at::native::unique_cuda(at::Tensor const&)", "torch.unique", "at::native::unique_cuda(at::Tensor const&)");
    assert_hint(sync, "at::native::nonzero_cuda(at::Tensor const&)", "torch.nonzero",
                "at::native::nonzero_cuda(at::Tensor const&)");
    assert_hint(sync, "torch::autograd::generated::GatherBackward0::apply", "the backward of torch.gather",
                "torch::autograd::generated::GatherBackward0::apply");
    assert_hint(sync, "at::native::_local_scalar_dense_cuda(at::Tensor const&)", ".item()",
                "at::native::_local_scalar_dense_cuda(at::Tensor const&)");
    assert_hint(sync, "at::Tensor::item() const", ".item()", "at::Tensor::item() const");
    /* API rules: an op the table does not know */
    assert_hint("cudaDeviceSynchronize", "at::native::foo", "explicit torch.cuda.synchronize", "cudaDeviceSynchronize");
    assert_hint("cudaFree", "at::native::foo", "cudaFree synchronizes the device", "cudaFree");
    assert_hint("cudaFreeHost", "at::native::foo", "cudaFree synchronizes the device", "cudaFreeHost");
    assert_hint("cudaMemcpyAsync", "at::native::foo", "a synchronous (or pageable-memory) copy", "cudaMemcpyAsync");
    assert_hint("cudaMemcpy2D", "at::native::foo", "a synchronous (or pageable-memory) copy", "cudaMemcpy2D");
    /* no rule: a plain stream sync under an op the table does not know */
    const char *m = "x";
    assert_null(hint_of(sync, "at::native::foo", &m));
    assert_null(m);
}

/* What seed 002's switches show on real torch 2.15: GradScaler.step's found_inf read (a Python
 * frame of torch's own, above the .item()), and anomaly detection's NaN check in the engine
 * thread, outside any node. */
static void test_amp_and_anomaly(void **state)
{
    (void)state;
    const char *torch_py = "/v/lib/python3.11/site-packages/torch/amp/grad_scaler.py";
    static struct rep_frame scaler[4];
    scaler[0] = (struct rep_frame){"at::native::_local_scalar_dense_cuda(at::Tensor const&)", TORCH, "", 0, 1, false};
    scaler[1] = (struct rep_frame){"GradScaler._maybe_opt_step", "", torch_py, 380, 0, true};
    scaler[2] = (struct rep_frame){"GradScaler.step", "", torch_py, 465, 0, true};
    scaler[3] = (struct rep_frame){"main", "", "/home/u/train.py", 9, 0, true};
    struct rep_site s = {"cudaStreamSynchronize", 1, 1, 1, 4, scaler};
    const char *m;
    const char *h = hints_find(&s, &m);
    assert_non_null(h);
    assert_true(strncmp(h, "GradScaler.step reads found_inf", 31) == 0);
    assert_string_equal(m, "GradScaler._maybe_opt_step");
    assert_int_equal(hints_user_frame(&s), 3);

    static struct rep_frame anomaly[4];
    anomaly[0] = (struct rep_frame){"void at::native::(anonymous namespace)::_local_scalar_dense_cuda_impl<bool>(at::Tensor const&, c10::Scalar&)", TORCH, "", 0, 1, false};
    anomaly[1] = (struct rep_frame){"bool at::Tensor::item<bool>() const", TORCH, "", 0, 2, false};
    anomaly[2] = (struct rep_frame){"torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)", TORCH, "", 0, 3, false};
    anomaly[3] = (struct rep_frame){"torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", TORCH, "", 0, 4, false};
    struct rep_site a = {"cudaStreamSynchronize", 1, 1, 1, 4, anomaly};
    h = hints_find(&a, &m);
    assert_non_null(h);
    assert_true(strncmp(h, "autograd anomaly detection", 26) == 0);
    /* a sync inside a node's backward keeps the node's hint */
    static struct rep_frame node[3];
    node[0] = anomaly[1];
    node[1] = (struct rep_frame){"torch::autograd::generated::GatherBackward0::apply(std::vector<at::Tensor>&&)", TORCH, "", 0, 5, false};
    node[2] = anomaly[2];
    struct rep_site n = {"cudaStreamSynchronize", 1, 1, 1, 3, node};
    h = hints_find(&n, &m);
    assert_true(strncmp(h, "the backward of torch.gather", 28) == 0);
}

static void test_first_match_wins(void **state)
{
    (void)state;
    /* index_put is tried before index, and a frame rule before the API's: a boolean-mask
     * assignment through a copy is still the assignment */
    assert_hint("cudaMemcpy", "at::native::index_put_(at::Tensor&)", "x[mask] = v", "at::native::index_put_(at::Tensor&)");
    assert_hint("cudaDeviceSynchronize", "at::native::nonzero_cuda(at::Tensor const&)", "torch.nonzero",
                "at::native::nonzero_cuda(at::Tensor const&)");
}

static void test_only_frames_up_to_the_user_frame(void **state)
{
    (void)state;
    /* nonzero above the user frame (the user's own caller is named nonzero): not evidence */
    static const struct rep_frame f[] = {
        {"cudart::cudaApiStreamSynchronize", CUDART, "", 0, 0x1, false},
        {"loss_fn", "/home/u/train", "train.cpp", 42, 0x2, false},
        {"nonzero_wrapper", "/home/u/train", "train.cpp", 50, 0x3, false},
    };
    struct rep_site s = {"cudaStreamSynchronize", 1, 1, 1, 3, f};
    assert_int_equal(hints_user_frame(&s), 1);
    const char *m;
    assert_null(hints_find(&s, &m));
    /* no user frame at all: every frame is in scope */
    static const struct rep_frame rt[] = {
        {"cudart::cudaApiStreamSynchronize", CUDART, "", 0, 0x1, false},
        {"at::native::nonzero_cuda(at::Tensor const&)", TORCH, "", 0, 0x2, false},
    };
    struct rep_site s2 = {"cudaStreamSynchronize", 1, 1, 1, 2, rt};
    assert_int_equal(hints_user_frame(&s2), 0);
    assert_non_null(hints_find(&s2, &m));
    assert_string_equal(m, "at::native::nonzero_cuda(at::Tensor const&)");
    /* a site without frames: only the API rules */
    struct rep_site s3 = {"cudaFree", 1, 1, 1, 0, NULL};
    assert_non_null(hints_find(&s3, &m));
    assert_string_equal(m, "cudaFree");
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
        {"torch::autograd::generated::details::index_backward(at::Tensor)", "", "", 0, 0, false},
        {"torch::autograd::PyNode::apply(std::vector<at::Tensor>&&)", "", "", 0, 0, false},
    };
    assert_false(backward_node_of(odd, 2, node, sizeof node, NULL));
}

/* The hint of a backward sync follows the forward op (the node), not the frames it ran in:
 * IndexBackward0's own frames hold index_put_ and nonzero, yet the advice is the mask's. */
static void test_backward_hints(void **state)
{
    (void)state;
    const char *m;
    struct rep_site s = {"cudaStreamSynchronize", 1, 1, 1, 13, backward_frames};
    const char *h = hints_find(&s, &m);
    assert_non_null(h);
    assert_true(!strncmp(h, "the backward of a boolean-mask index", 36));
    assert_string_equal(m, "IndexBackward0");
    bool found;
    assert_int_equal(hints_forward_user_frame(&s, &found), 7);
    assert_true(found);
    assert_string_equal(s.frames[7].function, "MaskedLoss.cross_entropy");
    assert_int_equal(hints_caller_user_frame(&s, &found), 12);
    assert_true(found);
    /* the own frames' user frame ignores the sections after them */
    assert_int_equal(hints_user_frame(&s), 0);
    struct rep_site u = {"cudaStreamSynchronize", 1, 1, 1, 5, backward_unseen_frames};
    h = hints_find(&u, &m);
    assert_true(!strncmp(h, "the backward of a boolean-mask index", 36));
    assert_string_equal(m, "torch::autograd::generated::IndexBackward0::apply(std::vector<at::Tensor>&&)");
    assert_false((hints_forward_user_frame(&u, &found), found));
    struct rep_site c = {"cudaStreamSynchronize", 1, 1, 1, 5, custom_frames};
    h = hints_find(&c, &m);
    assert_true(!strncmp(h, "a custom autograd.Function's backward syncs", 43));
    assert_int_equal(hints_user_frame(&c), 2); /* ClampGrad.backward */
    /* a node with no rule of its own: the generic advice */
    static const struct rep_frame other[] = {
        {"torch::autograd::generated::CumsumBackward0::apply(std::vector<at::Tensor>&&)", "", "", 0, 0, false},
    };
    struct rep_site o = {"cudaStreamSynchronize", 1, 1, 1, 1, other};
    h = hints_find(&o, &m);
    assert_true(!strncmp(h, "this sync runs in the backward of the op on the forward line", 60));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backward_node_of),
        cmocka_unit_test(test_backward_hints),
        cmocka_unit_test(test_user_frame),
        cmocka_unit_test(test_every_rule_names_its_op),
        cmocka_unit_test(test_amp_and_anomaly),
        cmocka_unit_test(test_first_match_wins),
        cmocka_unit_test(test_only_frames_up_to_the_user_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
