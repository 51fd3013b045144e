/* output/hints.c: the rules that read a site's stack (see hints.h): which frames belong to the
 * runtime and frameworks (CUDA, PyTorch, CPython, the C/C++ runtime, syncspy) and which to the
 * user, and the hint table. Pure: no state, no I/O; unit-tested in tests/unit/test_hints.c. */
#include "output/hints.h"
#include "output/backward.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- hints: what to do about a sync, by what the stack shows -------------------------------
 * Rules are tried in order, first match wins, so more specific patterns come first. Function
 * rules look at the frames from the CUDA call up to the user frame (the framework's own frames
 * name the op, e.g. at::native::nonzero_cuda); API rules look at the CUDA API name. Extend
 * here, with a test in tests/unit/test_hints.c. */
struct hint_rule {
    bool on_api;         /* match the site's CUDA API, else frame function names */
    const char *pattern; /* a substring */
    const char *hint;
};

static const struct hint_rule hint_rules[] = {
    /* torch.amp.GradScaler.step: found_inf read on the host (.item()) to skip a bad step */
    {false, "GradScaler._maybe_opt_step",
     "GradScaler.step reads found_inf on the host every step (to skip steps with inf/NaN "
     "gradients): autocast to bfloat16 needs no GradScaler; with float16 this is its price"},
    /* the engine checks each node's outputs for NaN (item<bool>) after the node ran, outside
     * any node: only with anomaly detection on */
    {false, "Engine::evaluate_function",
     "autograd anomaly detection (torch.autograd.set_detect_anomaly(True) or detect_anomaly()) "
     "checks every backward output for NaN with a sync: switch it off outside debugging"},
    {false, "index_put",
     "x[mask] = v sizes its index on the host: use torch.where(mask, v, x) or "
     "x.masked_fill_(mask, v)"},
    {false, "masked_select",
     "masked_select has a data-dependent size: keep the full tensor and multiply by the mask "
     "(or use the loss's ignore_index)"},
    {false, "native::index(",
     "x[bool_mask] syncs to size its output: use torch.where / a fixed-size mask, or the "
     "loss's ignore_index"},
    {false, "_ops::index_Tensor",
     "x[bool_mask] syncs to size its output: use torch.where / a fixed-size mask, or the "
     "loss's ignore_index"},
    {false, "unique",
     "torch.unique syncs to size its output: count on the device (torch.bincount with "
     "minlength, or a sort-based count) and keep the result there"},
    {false, "nonzero",
     "torch.nonzero syncs to size its output: use torch.where(cond, a, b) / a fixed-size mask"},
    {false, "_local_scalar_dense",
     ".item() / float(t) / if t: copies a scalar to the host: keep the value on the device, "
     "log less often"},
    {false, "Tensor::item",
     ".item() / float(t) / if t: copies a scalar to the host: keep the value on the device, "
     "log less often"},
    {true, "cudaDeviceSynchronize",
     "explicit torch.cuda.synchronize: remove it or move it out of the step"},
    {true, "cudaFree",
     "cudaFree synchronizes the device: caching allocator churn (empty_cache, changing shapes, "
     "memory pressure): keep shapes stable, do not empty the cache in the loop"},
    {true, "cudaMemcpy",
     "a synchronous (or pageable-memory) copy blocks the host: copy into a pinned buffer "
     "(pin_memory()) with non_blocking=True and read the result a step later"},
};

/* ---- which frames are the user's ---------------------------------------------------------- */

static const char *str(const char *s)
{
    return s ? s : "";
}

/* Runtime and framework objects: the CUDA stack, PyTorch, CPython, the C/C++ runtime, us. */
static bool runtime_module(const char *module)
{
    static const char *const prefixes[] = {
        "libcudart", "libcuda.", "libcupti", "libcublas", "libcudnn", "libnccl", "libtorch",
        "libc10", "libpython", "libc.so", "libc-", "libstdc++", "libpthread", "ld-linux",
        "libsyncspy", "libgcc_s", "libffi", "_ctypes", "python3"};
    /* what pip installs with torch (its lib folder, the nvidia wheels) and CPython's own modules */
    static const char *const folders[] = {"/site-packages/torch/", "/dist-packages/torch/",
                                          "/site-packages/nvidia/", "/dist-packages/nvidia/",
                                          "/lib-dynload/"};
    const char *m = str(module);
    for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++)
        if (strstr(m, folders[i]))
            return true;
    const char *b = rep_base_name(module);
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(b, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

/* Python's standard library and torch's own Python code (a heuristic on the path). */
static bool runtime_python_file(const char *file)
{
    const char *f = str(file);
    if (strstr(f, "/site-packages/torch/") || strstr(f, "/dist-packages/torch/"))
        return true;
    if (strncmp(f, "<frozen ", 8) == 0)
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
    const char *node_prefix; /* the node type's name starts with this */
    const char *hint;
};

static const struct backward_rule backward_rules[] = {
    {"IndexBackward",
     "the backward of a boolean-mask index (x[mask] of a tensor that needs grad) syncs in "
     "index_put_ -> nonzero: select with torch.where(mask, x, 0) or x.masked_fill(~mask, 0), or "
     "let the loss skip entries (ignore_index) instead of indexing them out"},
    {"GatherBackward",
     "the backward of torch.gather syncs (deterministic scatter_add): index with advanced "
     "indexing (x[idx]) instead, or relax determinism for this op"},
    {"EmbeddingBackward",
     "the backward of an embedding lookup syncs: keep the indices on the device and avoid "
     "padding_idx / scale_grad_by_freq, which count indices on the host"},
    {"MaskedSelectBackward",
     "the backward of masked_select syncs: multiply by the mask instead of selecting"},
};

static const char *backward_hint(const char *node, bool custom)
{
    static const char custom_hint[] =
        "a custom autograd.Function's backward syncs (its Python backward, in autograd's thread): "
        "keep its values on the device (no .item(), .cpu(), printing or data-dependent shapes)";
    static const char generic_hint[] =
        "this sync runs in the backward of the op on the forward line above: rewrite that op "
        "(a fixed-size or masked form), or its backward";
    if (custom)
        return custom_hint;
    for (size_t r = 0; r < sizeof backward_rules / sizeof backward_rules[0]; r++)
        if (!strncmp(node, backward_rules[r].node_prefix, strlen(backward_rules[r].node_prefix)))
            return backward_rules[r].hint;
    return generic_hint;
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
    *custom = found && strstr(str(s->frames[at].function), "torch::autograd::PyNode::apply");
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

const char *hints_find(const struct rep_site *site, const char **matched)
{
    char node[96];
    bool custom;
    if (site_node(site, node, sizeof node, &custom, matched))
        return backward_hint(node, custom);
    bool found;
    uint32_t u = user_frame(site, &found);
    uint32_t scope = found ? u + 1 : site->nframes; /* CUDA call .. user frame */
    for (size_t r = 0; r < sizeof hint_rules / sizeof hint_rules[0]; r++) {
        const struct hint_rule *h = &hint_rules[r];
        if (h->on_api) {
            if (strstr(str(site->api), h->pattern)) {
                *matched = str(site->api);
                return h->hint;
            }
            continue;
        }
        for (uint32_t i = 0; i < scope && site->frames; i++) {
            if (strstr(str(site->frames[i].function), h->pattern)) {
                *matched = site->frames[i].function;
                return h->hint;
            }
        }
    }
    *matched = NULL;
    return NULL;
}
