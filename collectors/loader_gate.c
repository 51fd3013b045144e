/* collectors/loader_gate.c: see loader_gate.h. A count of the sections open and a closed flag,
 * both sequentially consistent (a section's count is seen by the closing thread, or the section
 * sees the gate closed). */
#include "collectors/loader_gate.h"

#include <stdatomic.h>
#include <time.h>

/* A section open this long is not one that ends on its own (the closing thread's own, which a
 * signal handler calling fork interrupted): the fork goes on without it. A section lasts
 * microseconds (an unwinding, a walk of the loaded objects' headers). */
#define CLOSE_WAIT_NS 2000000000ll

static _Atomic unsigned inside;
static _Atomic bool closed;

static void pause_briefly(void)
{
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
}

static long long mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000ll + t.tv_nsec;
}

bool loader_gate_enter(bool wait)
{
    for (;;) {
        atomic_fetch_add(&inside, 1);
        if (!atomic_load(&closed))
            return true;
        atomic_fetch_sub(&inside, 1);
        if (!wait)
            return false;
        while (atomic_load(&closed))
            pause_briefly();
    }
}

void loader_gate_leave(void)
{
    atomic_fetch_sub(&inside, 1);
}

void loader_gate_close(void)
{
    atomic_store(&closed, true);
    long long until = mono_ns() + CLOSE_WAIT_NS;
    while (atomic_load(&inside) > 0 && mono_ns() < until)
        pause_briefly();
}

void loader_gate_open(void)
{
    atomic_store(&closed, false);
}

void loader_gate_atfork_child(void)
{
    atomic_store(&inside, 0); /* the sections open were other threads', gone */
    atomic_store(&closed, false);
}
