/* agent/record/autograd.c: the tables of backward-pass attribution (see autograd.h): node type names,
 * the kept Python stacks (forward stacks and backward callers), the node running on each
 * engine thread, the node types seen syncing, and when to attribute. Written with the GIL held
 * from the agent's Python hooks (a mutex orders them against each other); read lock-free on the
 * recording path (entries are immutable once published). Memory from the agent's arena,
 * bounded: a full table leaves later syncs unattributed, never wrong. */
#include "agent/record/autograd.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "agent/record/arena.h"
#include "agent/record/python_names.h"
#include "agent/record/sites.h"
#include "agent/record/step_now.h"
#include "agent/record/upcalls.h"
#include "collectors/pyframes.h"
#include "common/compiler.h"
#include "common/log.h"

#define NAMES_MAX 256
#define NAME_BYTES 96
#define STACKS_MAX 4096
#define STACK_SLOTS 8192         /* open-addressing index of the kept stacks, 2x STACKS_MAX */
#define STACK_WORDS_MAX (2 * 48) /* a kept stack: at most 48 Python frames */
#define AGENT_PY_FILE \
    "<syncspy>" /* agent/step/autograd_attr.py's frames: never part of a kept stack */

struct kept_stack {
    uint64_t hash;
    uint32_t n;
    uintptr_t words[];
};

/* Taken around fork() by the fork handlers (agent/process/fork_locks.h), so that a child gets the tables
 * whole: they are append-only names and Python stacks (code objects and instructions that are the
 * child's memory too), which a forked child keeps. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct arena arena = {.cap_bytes = 16u << 20};
static enum backward_mode mode = BACKWARD_AUTO;

static char names[NAMES_MAX][NAME_BYTES]; /* index = id - 1 */
static _Atomic uint32_t nnames;
static struct kept_stack *_Atomic stacks[STACKS_MAX + 1]; /* by id, 1.. */
static uint32_t nstacks;
static _Atomic uint32_t slots[STACK_SLOTS]; /* stack ids by hash */

/* Node types seen syncing (their name ids), and the plan's bookkeeping. */
static uint32_t seen[NAMES_MAX];
static uint32_t nseen;
static _Atomic uint32_t generation;
static uint32_t planned_generation;
static uint32_t active_since_attribution;

/* The node running on this (engine) thread, and the backward call in progress. */
static SYNCSPY_TLS struct {
    uint32_t forward, name, cause;
    uint64_t epoch;
} running;
/* The step's state (enum backward_cause: NONE while attributing), and the one that ended. */
static _Atomic uint32_t state = BACKWARD_CAUSE_NO_HOOK;
static _Atomic bool start_up; /* start-up is attributed (state NONE before the first step end) */
static _Atomic uint64_t epoch;
static _Atomic uint32_t caller;

void autograd_init(enum backward_mode m)
{
    mode = m;
    atomic_store(&start_up, false);
    if (m == BACKWARD_OFF)
        atomic_store(&state, BACKWARD_CAUSE_OFF);
}

void autograd_set_state(uint32_t cause)
{
    atomic_store_explicit(&start_up, false, memory_order_relaxed);
    if (cause < BACKWARD_CAUSES && mode != BACKWARD_OFF)
        atomic_store(&state, cause);
}

void autograd_start_up(void)
{
    if (mode == BACKWARD_OFF)
        return;
    atomic_store_explicit(&start_up, true, memory_order_relaxed);
    atomic_store(&state, BACKWARD_CAUSE_NONE);
}

bool autograd_step_attributed(void)
{
    return atomic_load_explicit(&state, memory_order_relaxed) == BACKWARD_CAUSE_NONE &&
           !atomic_load_explicit(&start_up, memory_order_relaxed);
}

/* ---- names ------------------------------------------------------------------------------------ */

static uint32_t name_id_locked(const char *name)
{
    uint32_t n = atomic_load_explicit(&nnames, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++)
        if (!strncmp(names[i], name, NAME_BYTES - 1))
            return i + 1;
    if (n == NAMES_MAX || !*name)
        return 0;
    snprintf(names[n], NAME_BYTES, "%s", name);
    atomic_store_explicit(&nnames, n + 1, memory_order_release);
    return n + 1;
}

pthread_mutex_t *autograd_lock(void)
{
    return &lock;
}

uint32_t autograd_name_id(const char *name)
{
    pthread_mutex_lock(&lock);
    uint32_t id = name_id_locked(name ? name : "");
    pthread_mutex_unlock(&lock);
    return id;
}

const char *autograd_name(uint32_t id)
{
    return id >= 1 && id <= atomic_load_explicit(&nnames, memory_order_acquire) ? names[id - 1]
                                                                                : NULL;
}

/* ---- kept stacks ------------------------------------------------------------------------------ */

static uint64_t hash_words(const uintptr_t *w, uint32_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ w[i]) * 1099511628211ull;
    return h | 1;
}

/* A stack kept already: its id, found without the lock (slots and entries are published with
 * release, never changed), else 0 and *empty the slot where it would go. */
static uint32_t kept_id(const uintptr_t *words, uint32_t n, uint64_t h, size_t *empty)
{
    size_t i = (size_t)h & (STACK_SLOTS - 1);
    for (uint32_t id; (id = atomic_load_explicit(&slots[i], memory_order_acquire));
         i = (i + 1) & (STACK_SLOTS - 1)) {
        const struct kept_stack *k = atomic_load_explicit(&stacks[id], memory_order_acquire);
        if (k->hash == h && k->n == n && !memcmp(k->words, words, n * sizeof *words))
            return id;
    }
    *empty = i;
    return 0;
}

static uint32_t keep_locked(const uintptr_t *words, uint32_t n, uint64_t h)
{
    size_t i;
    uint32_t id = kept_id(words, n, h, &i);
    if (id || nstacks == STACKS_MAX)
        return id;
    struct kept_stack *k = arena_alloc(&arena, sizeof *k + n * sizeof *words);
    if (!k)
        return 0;
    k->hash = h;
    k->n = n;
    memcpy(k->words, words, n * sizeof *words);
    id = ++nstacks;
    atomic_store_explicit(&stacks[id], k, memory_order_release);
    atomic_store_explicit(&slots[i], id, memory_order_release);
    return id;
}

/* words[] of the calling thread's Python frames, innermost first, leaving out the agent's own
 * leading frames (the mode, the hooks: agent/step/autograd_attr.py); returns the words' count. */
static uint32_t capture_skipping_agent(uintptr_t *words)
{
    struct py_raw_frame py[PYFRAMES_MAX];
    int n = pyframes_capture(py, PYFRAMES_MAX);
    uint32_t w = 0;
    bool leading = true;
    for (int i = 0; i < n && w + 2 <= STACK_WORDS_MAX; i++) {
        if (leading && pyframes_file_is(py[i].code, AGENT_PY_FILE))
            continue;
        leading = false;
        words[w++] = PYFRAME_MARK | py[i].lasti;
        words[w++] = py[i].code;
    }
    return w;
}

/* The calling thread's Python stack kept (an id; 0: none, or the table is full). A loop's nodes
 * make the same stacks every step: found without the lock, the frames walked once. */
static uint32_t capture(bool skip_agent)
{
    uintptr_t words[STACK_WORDS_MAX];
    uint32_t w = skip_agent ? capture_skipping_agent(words)
                            : 2 * (uint32_t)pyframes_capture_words(words, STACK_WORDS_MAX / 2);
    if (w == 0)
        return 0;
    uint64_t h = hash_words(words, w);
    size_t empty;
    uint32_t id = kept_id(words, w, h, &empty);
    if (id)
        return id;
    struct py_raw_frame py[PYFRAMES_MAX];
    int n = pyframes_capture(py, PYFRAMES_MAX); /* the same frames, still running: their names */
    python_names_intern_stack(words, w, py, n);
    pthread_mutex_lock(&lock);
    id = keep_locked(words, w, h);
    pthread_mutex_unlock(&lock);
    return id;
}

uint32_t autograd_capture_python(void)
{
    return capture(true);
}

uint32_t autograd_capture_python_outside(void)
{
    return capture(false);
}

static const struct kept_stack *kept(uint32_t id)
{
    return id >= 1 && id <= STACKS_MAX ? atomic_load_explicit(&stacks[id], memory_order_acquire)
                                       : NULL;
}

bool autograd_kept_innermost(uint32_t id, uintptr_t *code, uint32_t *lasti)
{
    const struct kept_stack *k = kept(id);
    if (!k || k->n < 2 || !pyframe_word(k->words[0]))
        return false;
    *code = k->words[1];
    *lasti = (uint32_t)k->words[0];
    return true;
}

/* ---- who runs --------------------------------------------------------------------------------- */

void autograd_enter(uint32_t forward, uint32_t name, uint32_t cause)
{
    running.forward = forward;
    running.name = name;
    running.cause = forward ? BACKWARD_CAUSE_NONE : cause < BACKWARD_CAUSES ? cause : 0;
    running.epoch = atomic_load_explicit(&epoch, memory_order_relaxed);
}

void autograd_leave(void)
{
    running.forward = 0;
    running.cause = 0;
}

void autograd_caller_begin(void)
{
    uint32_t id = autograd_capture_python();
    atomic_fetch_add(&epoch, 1);
    atomic_store(&caller, id);
}

void autograd_caller_end(void)
{
    atomic_store(&caller, 0);
    atomic_fetch_add(&epoch, 1); /* a node whose post hook never ran (it raised) is over too */
}

static int append_kept(uintptr_t *words, int n, int max, uintptr_t mark, uint32_t id)
{
    const struct kept_stack *k = kept(id);
    if (!k || n + 1 + (int)k->n > max)
        return n;
    words[n++] = mark;
    memcpy(words + n, k->words, k->n * sizeof *words);
    return n + (int)k->n;
}

/* Why no forward line: the hooked node's own cause (found untagged before backward), else the
 * step's state (an attribution step: the node was not hooked). */
static int append_cause(uintptr_t *words, int n, int max, bool current)
{
    uint32_t cause = current && running.cause ? running.cause
                                              : atomic_load_explicit(&state, memory_order_relaxed);
    if (cause == BACKWARD_CAUSE_NONE)
        cause = BACKWARD_CAUSE_UNTAGGED;
    if (n >= max)
        return n;
    words[n] = STACK_MARK_UNSEEN | cause;
    return n + 1;
}

/* The anomaly engine's answer (autograd_nodes.h): a node runs here; its forward stack when it
 * was kept, else why not (in an attribution step: the node's own cause from the rings, else
 * unwatched). */
static int append_node(uintptr_t *words, int n, int max, bool autograd_thread, uint32_t forward,
                       uint32_t name, uint32_t node_cause)
{
    int with_node =
        forward && name ? append_kept(words, n, max, STACK_MARK_BACKWARD | name, forward) : n;
    if (with_node != n)
        return append_kept(words, with_node, max, STACK_MARK_CALLER,
                           atomic_load_explicit(&caller, memory_order_relaxed));
    if (!autograd_thread)
        return n;
    uint32_t cause = atomic_load_explicit(&state, memory_order_relaxed);
    if (cause == BACKWARD_CAUSE_NONE)
        cause = node_cause ? node_cause : BACKWARD_CAUSE_UNWATCHED;
    if (n < max)
        words[n++] = STACK_MARK_UNSEEN | cause;
    return n;
}

int autograd_append(uintptr_t *words, int n, int max, bool autograd_thread,
                    const struct backward_node *node)
{
    if (node && (node->forward || running.forward == 0)) /* else: the mode's hooks */
        return append_node(words, n, max, autograd_thread, node->forward, node->name, node->cause);
    bool current = running.epoch == atomic_load_explicit(&epoch, memory_order_relaxed);
    if (likely(running.forward == 0) || !current)
        return autograd_thread ? append_cause(words, n, max, current) : n;
    int with_node = append_kept(words, n, max, STACK_MARK_BACKWARD | running.name, running.forward);
    if (with_node == n)
        return n;
    return append_kept(words, with_node, max, STACK_MARK_CALLER,
                       atomic_load_explicit(&caller, memory_order_relaxed));
}

bool autograd_appends(bool autograd_thread, const struct backward_node *node)
{
    if (autograd_thread || node)
        return true;
    return running.forward != 0 &&
           running.epoch == atomic_load_explicit(&epoch, memory_order_relaxed);
}

/* ---- which node types, and when --------------------------------------------------------------- */

void autograd_seen(const char *name)
{
    if (mode == BACKWARD_OFF)
        return;
    pthread_mutex_lock(&lock);
    uint32_t id = name_id_locked(name);
    bool known = id == 0;
    for (uint32_t i = 0; i < nseen && !known; i++)
        known = seen[i] == id;
    if (!known && nseen < NAMES_MAX) {
        seen[nseen++] = id;
        atomic_fetch_add(&generation, 1);
        dbg(1, "backward of %s syncs: its forward line is looked for in the next recorded step",
            name);
    }
    pthread_mutex_unlock(&lock);
}

/* auto is all where node creation is watched in C (nodes_watched: known from the first
 * attribution step, which auto makes the first active step, every type), sampled elsewhere. */
static enum backward_mode effective_mode(bool nodes_watched)
{
    static bool first_planned;
    if (mode != BACKWARD_AUTO)
        return mode;
    if (nodes_watched)
        return BACKWARD_ALL;
    return first_planned ? BACKWARD_SAMPLED : (first_planned = true, BACKWARD_ALL);
}

/* Under sampled, the node types seen syncing reach the plan whatever the flusher's pace: when sites
 * were made since the last plan, the flusher names their stacks now and the step end waits for
 * it (a 1 ms step loop otherwise ends all its steps before the next periodic drain: a custom
 * Function's backward was never attributed, issue 22 item 5; 1 run in 13 of the seed-003 loop
 * missed IndexBackward0, issue 24 item 4). New sites come at a run's start; at most
 * PLAN_WAITS_MAX such waits, each for a drain begun within PLAN_WAIT_MS. */
#define PLAN_WAITS_MAX 32
#define PLAN_WAIT_MS 2000
static void learn_new_types(enum backward_mode m)
{
    static size_t sites_known;
    static unsigned waits;
    size_t n = sites_count();
    if (m != BACKWARD_SAMPLED || n == sites_known || waits >= PLAN_WAITS_MAX ||
        !atomic_load_explicit(&steps_active, memory_order_relaxed))
        return;
    waits++;
    up_flush_now(PLAN_WAIT_MS);
    sites_known = n;
}

bool autograd_plan(char *buf, size_t cap, bool nodes_watched)
{
    bool active = atomic_load_explicit(&steps_active, memory_order_relaxed);
    enum backward_mode m = active ? effective_mode(nodes_watched) : mode;
    learn_new_types(m); /* before the lock: the flusher takes it in autograd_seen */
    pthread_mutex_lock(&lock);
    uint32_t gen = atomic_load(&generation);
    bool attribute = false;
    if (m == BACKWARD_ALL) {
        attribute = active; /* every node type, every recorded step */
    } else if (m == BACKWARD_SAMPLED && active && nseen > 0) {
        if (gen != planned_generation || ++active_since_attribution >= AUTOGRAD_EVERY_STEPS) {
            attribute = true;
            planned_generation = gen;
            active_since_attribution = 0;
        }
    }
    int k = 0;
    buf[0] = 0;
    if (attribute && m == BACKWARD_ALL && cap >= 2) {
        buf[0] = '*'; /* every type (no snprintf: it was a sixth of a step end's instructions) */
        buf[1] = 0;
    }
    for (uint32_t i = 0; attribute && m != BACKWARD_ALL && i < nseen && k >= 0 && (size_t)k < cap;
         i++)
        k += snprintf(buf + k, cap - (size_t)k, "%s%s", i ? "," : "", names[seen[i] - 1]);
    pthread_mutex_unlock(&lock);
    return attribute;
}
