/* sim/graphs.c: CUDA graphs on the simulated device. A graph is a list of nodes, one per
 * operation a capturing stream recorded (sim/timeline.c) in capture order: its duration and, for
 * a kernel, the kernel. Instantiating copies the list; launching replays it on the launching
 * stream: each node occupies the stream for its duration in order (the nodes of a capture from
 * one stream form a chain), a kernel node as a launch of its kernel (counted, and device memory
 * reads as zero after it, sim/contents.c). Copies and memsets in a graph move no bytes, at
 * capture or at launch. Handles are checked against the live lists, never dereferenced blindly.
 * Hidden: the exports are in sim/cudart_ext.c. */
#include "sim/sim_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* A node's handle (cudaGraphNode_t) is the address of its struct; its graph owns it. */
struct CUgraphNode_st {
    uint64_t ns;
    const void *kernel; /* NULL: a copy, memset or other zero-work operation */
};

struct CUgraph_st {
    struct CUgraph_st *next;
    struct CUgraphNode_st **nodes;
    size_t count;
};

struct CUgraphExec_st {
    struct CUgraphExec_st *next;
    struct CUgraphNode_st *nodes; /* a copy: the graph may change or go */
    size_t count;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUgraph_st *graphs;
static struct CUgraphExec_st *execs;

static bool graph_live_locked(cudaGraph_t g)
{
    for (struct CUgraph_st *p = graphs; p != NULL; p = p->next)
        if (p == g)
            return true;
    return false;
}

static struct CUgraphExec_st *exec_live_locked(cudaGraphExec_t e)
{
    for (struct CUgraphExec_st *p = execs; p != NULL; p = p->next)
        if (p == e)
            return p;
    return NULL;
}

cudaError_t sim_graph_create(cudaGraph_t *out)
{
    if (out == NULL)
        return cudaErrorInvalidValue;
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (g == NULL)
        return cudaErrorMemoryAllocation;
    pthread_mutex_lock(&lock);
    g->next = graphs;
    graphs = g;
    pthread_mutex_unlock(&lock);
    *out = g;
    return cudaSuccess;
}

cudaError_t sim_graph_destroy(cudaGraph_t graph)
{
    pthread_mutex_lock(&lock);
    struct CUgraph_st **link = &graphs;
    while (*link != NULL && *link != graph)
        link = &(*link)->next;
    struct CUgraph_st *g = *link;
    if (g != NULL)
        *link = g->next;
    pthread_mutex_unlock(&lock);
    if (g == NULL)
        return cudaErrorInvalidResourceHandle;
    for (size_t i = 0; i < g->count; i++)
        free(g->nodes[i]);
    free(g->nodes);
    free(g);
    return cudaSuccess;
}

/* Called by the timeline under its lock (the timeline's lock, then this one: never the other
 * way round). */
cudaError_t sim_graph_append(cudaGraph_t graph, uint64_t ns, const void *kernel)
{
    struct CUgraphNode_st *n = malloc(sizeof *n);
    if (n == NULL)
        return cudaErrorMemoryAllocation;
    *n = (struct CUgraphNode_st){ns, kernel};
    pthread_mutex_lock(&lock);
    cudaError_t err = graph_live_locked(graph) ? cudaSuccess : cudaErrorInvalidResourceHandle;
    struct CUgraphNode_st **grown = NULL;
    if (err == cudaSuccess) {
        grown = realloc(graph->nodes, (graph->count + 1) * sizeof *grown);
        err = grown != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
    }
    if (err == cudaSuccess) {
        graph->nodes = grown;
        graph->nodes[graph->count++] = n;
    }
    pthread_mutex_unlock(&lock);
    if (err != cudaSuccess)
        free(n);
    return err;
}

cudaError_t sim_graph_nodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *count)
{
    if (count == NULL)
        return cudaErrorInvalidValue;
    pthread_mutex_lock(&lock);
    cudaError_t err = graph_live_locked(graph) ? cudaSuccess : cudaErrorInvalidResourceHandle;
    if (err == cudaSuccess) {
        /* nodes NULL: the count; else up to *count handles, and *count the number written */
        size_t n = nodes == NULL || *count > graph->count ? graph->count : *count;
        for (size_t i = 0; nodes != NULL && i < n; i++)
            nodes[i] = graph->nodes[i];
        *count = n;
    }
    pthread_mutex_unlock(&lock);
    return err;
}

cudaError_t sim_graph_instantiate(cudaGraphExec_t *out, cudaGraph_t graph)
{
    if (out == NULL)
        return cudaErrorInvalidValue;
    struct CUgraphExec_st *e = calloc(1, sizeof *e);
    if (e == NULL)
        return cudaErrorMemoryAllocation;
    pthread_mutex_lock(&lock);
    cudaError_t err = graph_live_locked(graph) ? cudaSuccess : cudaErrorInvalidResourceHandle;
    if (err == cudaSuccess && graph->count > 0) {
        e->nodes = malloc(graph->count * sizeof *e->nodes);
        err = e->nodes != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
        for (size_t i = 0; err == cudaSuccess && i < graph->count; i++)
            e->nodes[i] = *graph->nodes[i];
        e->count = err == cudaSuccess ? graph->count : 0;
    }
    if (err == cudaSuccess) {
        e->next = execs;
        execs = e;
    }
    pthread_mutex_unlock(&lock);
    if (err != cudaSuccess) {
        free(e->nodes);
        free(e);
        return err;
    }
    *out = e;
    return cudaSuccess;
}

cudaError_t sim_graph_exec_destroy(cudaGraphExec_t exec)
{
    pthread_mutex_lock(&lock);
    struct CUgraphExec_st **link = &execs;
    while (*link != NULL && *link != exec)
        link = &(*link)->next;
    struct CUgraphExec_st *e = *link;
    if (e != NULL)
        *link = e->next;
    pthread_mutex_unlock(&lock);
    if (e == NULL)
        return cudaErrorInvalidResourceHandle;
    free(e->nodes);
    free(e);
    return cudaSuccess;
}

/* The nodes of a live exec, copied (it may be destroyed by another thread meanwhile). */
static cudaError_t exec_nodes(cudaGraphExec_t exec, struct CUgraphNode_st **nodes, size_t *count)
{
    pthread_mutex_lock(&lock);
    struct CUgraphExec_st *e = exec_live_locked(exec);
    cudaError_t err = e != NULL ? cudaSuccess : cudaErrorInvalidResourceHandle;
    *nodes = NULL;
    *count = 0;
    if (e != NULL && e->count > 0) {
        *nodes = malloc(e->count * sizeof **nodes);
        err = *nodes != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
        if (err == cudaSuccess) {
            for (size_t i = 0; i < e->count; i++)
                (*nodes)[i] = e->nodes[i];
            *count = e->count;
        }
    }
    pthread_mutex_unlock(&lock);
    return err;
}

cudaError_t sim_graph_upload(cudaGraphExec_t exec, cudaStream_t stream, sim_default_t def)
{
    struct CUgraphNode_st *nodes;
    size_t count;
    cudaError_t err = exec_nodes(exec, &nodes, &count);
    free(nodes);
    return err == cudaSuccess ? sim_stream_check(stream, def) : err;
}

/* Each node in order on the stream: a kernel as a launch of exactly its captured duration. A
 * launch into a capturing stream records the nodes there (a child graph, flattened). */
cudaError_t sim_graph_launch(cudaGraphExec_t exec, cudaStream_t stream, sim_default_t def)
{
    struct CUgraphNode_st *nodes;
    size_t count;
    cudaError_t err = exec_nodes(exec, &nodes, &count);
    if (err == cudaSuccess)
        err = sim_stream_check(stream, def);
    if (err == cudaSuccess)
        sim_graph_replay(true);
    for (size_t i = 0; err == cudaSuccess && i < count; i++)
        err = nodes[i].kernel != NULL ? sim_launch_ns(nodes[i].kernel, nodes[i].ns, stream, def)
                                      : sim_enqueue(stream, def, nodes[i].ns, 0, false, NULL, NULL);
    sim_graph_replay(false);
    SIM_DBG(2, "graph launch %p: %zu nodes", (void *)exec, count);
    free(nodes);
    return err;
}

/* A DOT file of the graph: one node per line, chained in capture order. */
cudaError_t sim_graph_dot(cudaGraph_t graph, const char *path)
{
    if (path == NULL)
        return cudaErrorInvalidValue;
    pthread_mutex_lock(&lock);
    cudaError_t err = graph_live_locked(graph) ? cudaSuccess : cudaErrorInvalidResourceHandle;
    FILE *f = err == cudaSuccess ? fopen(path, "w") : NULL;
    if (err == cudaSuccess && f == NULL)
        err = cudaErrorOperatingSystem;
    if (f != NULL) {
        fprintf(f, "digraph dot {\n");
        for (size_t i = 0; i < graph->count; i++) {
            const char *name = NULL;
            if (graph->nodes[i]->kernel != NULL)
                sim_kernel_name(&name, graph->nodes[i]->kernel);
            fprintf(f, "  node%zu [label=\"%s %llu ns\"];\n", i,
                    graph->nodes[i]->kernel == NULL ? "op"
                    : name != NULL                  ? name
                                                    : "kernel",
                    (unsigned long long)graph->nodes[i]->ns);
            if (i > 0)
                fprintf(f, "  node%zu -> node%zu;\n", i - 1, i);
        }
        fprintf(f, "}\n");
        if (fclose(f) != 0)
            err = cudaErrorOperatingSystem;
    }
    pthread_mutex_unlock(&lock);
    return err;
}
