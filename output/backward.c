/* output/backward.c: which autograd node's backward a sync ran in (see backward.h). */
#include "output/backward.h"

#include <stdio.h>
#include <string.h>

#define GENERATED "torch::autograd::generated::"
#define PYNODE "torch::autograd::PyNode::apply"

/* "torch::autograd::generated::IndexBackward0::apply(...)" -> "IndexBackward0" */
static bool generated_node(const char *fn, char *out, size_t cap)
{
    const char *p = strstr(fn, GENERATED);
    if (!p)
        return false;
    p += strlen(GENERATED);
    const char *end = strstr(p, "::apply");
    if (!end || end == p || memchr(p, ':', (size_t)(end - p)) || memchr(p, '<', (size_t)(end - p)))
        return false;
    snprintf(out, cap, "%.*s", (int)(end - p), p);
    return true;
}

/* A custom Function's backward is Python: the Python frame "MyFn.backward" inside PyNode::apply
 * names the node "MyFnBackward" (torch's BackwardCFunction subclass). */
static bool custom_node(const struct rep_frame *f, uint32_t pynode, char *out, size_t cap)
{
    for (uint32_t i = pynode; i-- > 0;) {
        if (!f[i].python)
            continue;
        const char *fn = f[i].function ? f[i].function : "";
        size_t len = strlen(fn);
        if (len <= 9 || strcmp(fn + len - 9, ".backward") != 0)
            continue;
        const char *cls = fn + len - 9;
        while (cls > fn && cls[-1] != '.' && cls[-1] != '>')
            cls--;
        snprintf(out, cap, "%.*sBackward", (int)(fn + len - 9 - cls), cls);
        return true;
    }
    return false;
}

bool backward_node_of(const struct rep_frame *frames, uint32_t n, char *out, size_t cap,
                      uint32_t *at)
{
    for (uint32_t i = 0; i < n; i++) {
        const struct rep_frame *f = &frames[i];
        if (f->mark)
            return false; /* the sync's own frames end here */
        if (f->python || !f->function)
            continue;
        bool found = generated_node(f->function, out, cap) ||
                     (strstr(f->function, PYNODE) && custom_node(frames, i, out, cap));
        if (found && at)
            *at = i;
        if (found || strstr(f->function, PYNODE))
            return found;
    }
    return false;
}

/* Indexed by agent/record/autograd.h enum backward_cause. */
static const struct {
    const char *key, *text;
} causes[] = {
    {NULL, NULL},
    {BACKWARD_CAUSE_KEY_STEP,
     "made in steps without attribution (SYNCSPY_BACKWARD=sampled, or auto "
     "where torch's node creation cannot be watched, attributes the step "
     "after a node type first syncs, then 1 in 100; =all every one)"},
    {"torch_compile", "torch.compile is in use: attribution steps aside (it would recompile)"},
    {"backward_off", "SYNCSPY_BACKWARD=off"},
    {"no_optimizer_step", "made before the first optimizer.step(), where start-up could not be "
                          "watched (this torch's nodes bypass the sequence number hook; or made "
                          "before the agent's Python was installed): attribution begins there "
                          "(none with SYNCSPY_STEP=manual or without torch.optim)"},
    {"not_looked_for", "made in an attribution step that did not look for this node type yet, "
                       "or where no node seen syncing had been made (it first synced in that "
                       "step; its line is kept from then on)"},
    {"other_thread", "made in another thread than the training thread's ops (or before the "
                     "step), where attribution does not look"},
    {"no_python_op", "made on the training thread by no Python op (C++ code called directly)"},
    {"attribution_failed", "attribution stopped: this torch did not behave as expected "
                           "(SYNCSPY_DEBUG=1 says why)"},
    {"made_unwatched", "made while attribution did not watch node creation (inside a backward "
                       "call, e.g. a reentrant checkpoint's recomputation, or before the step)"},
    /* 16: agent/record/autograd_nodes.c RINGS_MAX */
    {"no_thread_ring", "made in a thread whose forward lines were not kept: 16 other threads that "
                       "make autograd nodes were running (the agent keeps 16 threads' at once)"},
    {"thread_ring_reused", "made in a thread that had ended, whose kept forward lines went to a "
                           "newer thread before this backward ran (16 threads' are kept at once)"},
};

const char *backward_cause_key(unsigned cause)
{
    return cause < sizeof causes / sizeof causes[0] ? causes[cause].key : NULL;
}

const char *backward_cause_text(const char *key)
{
    for (size_t i = 1; key && i < sizeof causes / sizeof causes[0]; i++)
        if (!strcmp(causes[i].key, key))
            return causes[i].text;
    return NULL;
}
