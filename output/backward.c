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

bool backward_node_of(const struct rep_frame *frames, uint32_t n, char *out, size_t cap, uint32_t *at)
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
