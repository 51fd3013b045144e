/* agent/record/upcalls.h: the only way up. The agent's layers call down (agent/README.md):
 * record <- step <- background <- process. Where a lower layer must make something above it
 * happen (the recording path starts the agent at the process's first CUDA call, wakes the
 * flusher, asks for the Python step hook; the optimizer hook ends a step), it calls through this
 * one table, which the lifecycle (agent/process/lifecycle.c) fills before anything can be
 * recorded: at load, and when the entry layer introduces itself (entry/start.c), whichever comes
 * first. Before that every upcall does nothing (and up_start leaves the agent STARTING, so the
 * call is forwarded untouched). Each is one load and an indirect call; none takes a lock. */
#ifndef SYNCSPY_UPCALLS_H
#define SYNCSPY_UPCALLS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agent_upcalls {
    /* agent/process/lifecycle.h */
    void (*start)(void);                         /* agent_init_once */
    void (*first_use)(void);                     /* agent_first_use */
    void (*optimizer_step)(unsigned optimizers); /* agent_optimizer_step */
    void (*optimizer_step_split)(unsigned before, unsigned optimizers);
    void (*optimizer_cut)(void); /* agent_optimizer_cut */
    /* agent/background/flusher.h */
    void (*kick_flusher)(void);        /* flusher_kick: async-signal-safe */
    bool (*flush_now)(int timeout_ms); /* flusher_flush_now */
    /* agent/step/pyhook.h */
    void (*poll_python)(uint64_t now_ns);     /* pyhook_poll */
    void (*wait_python)(void);                /* pyhook_wait_slow */
    void (*request_graphs)(const char *file); /* pyhook_request_graphs */
};

extern const struct agent_upcalls *_Atomic agent_upcalls;

/* From the lifecycle only; the table lives for the whole run. */
void agent_set_upcalls(const struct agent_upcalls *up);

/* True from the Python step hook's first poll until it is registered (agent/step/pyhook.h says
 * when it gives up): meanwhile every CUDA call polls, those of steps the schedule does not
 * record and every launch included. Written by agent/step/pyhook.c. */
extern _Atomic bool pyhook_eager;

static inline const struct agent_upcalls *upcalls(void)
{
    return atomic_load_explicit(&agent_upcalls, memory_order_acquire);
}

static inline void up_start(void)
{
    const struct agent_upcalls *u = upcalls();
    if (u)
        u->start();
}

static inline void up_first_use(void)
{
    const struct agent_upcalls *u = upcalls();
    if (u)
        u->first_use();
}

static inline void up_kick_flusher(void)
{
    const struct agent_upcalls *u = upcalls();
    if (u)
        u->kick_flusher();
}

static inline bool up_flush_now(int timeout_ms)
{
    const struct agent_upcalls *u = upcalls();
    return u && u->flush_now(timeout_ms);
}

static inline void up_poll_python(uint64_t now_ns)
{
    const struct agent_upcalls *u = upcalls();
    if (u)
        u->poll_python(now_ns);
}

static inline void up_wait_python(void)
{
    const struct agent_upcalls *u = upcalls();
    if (u)
        u->wait_python();
}

static inline void up_request_graphs(const char *file)
{
    const struct agent_upcalls *u = upcalls();
    if (u)
        u->request_graphs(file);
}

static inline void up_optimizer_step(unsigned optimizers)
{
    const struct agent_upcalls *u = upcalls();
    if (u)
        u->optimizer_step(optimizers);
}

static inline void up_optimizer_step_split(unsigned before, unsigned optimizers)
{
    const struct agent_upcalls *u = upcalls();
    if (u)
        u->optimizer_step_split(before, optimizers);
}

static inline void up_optimizer_cut(void)
{
    const struct agent_upcalls *u = upcalls();
    if (u)
        u->optimizer_cut();
}

#endif
