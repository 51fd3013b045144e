/* agent/record/autograd_nodes.c: backward attribution through torch's anomaly mode (autograd_nodes.h).
 * The forward side (nodes_format_stack) runs in a Node constructor on the thread that makes the
 * node, with the GIL; the backward side (nodes_current) runs on the recording path of any
 * thread: atomics and reads of torch's own objects only, no lock, no allocation. Every torch
 * symbol is optional and every offset checked at calibration: a torch that differs leaves the
 * engine off, never a wrong read. */
#include "agent/record/autograd_nodes.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "agent/record/arena.h"
#include "agent/record/autograd.h"
#include "collectors/pyframes.h"
#include "common/compiler.h"
#include "common/log.h"

#if defined(__x86_64__)
#define NODES_ABI_OK 1
#else
#define NODES_ABI_OK 0 /* get_current_node returns its shared_ptr by hidden pointer: x86-64 only */
#endif

#define TORCH_CPU "libtorch_cpu.so"
#define RINGS_MAX 16           /* forward threads with a ring of their own */
#define RING_SLOTS 32768       /* nodes kept per thread (power of two): the newest win */
#define NODE_WORDS_SCAN 16     /* where sequence_nr_ and thread_id_ are looked for in a Node */
#define PYNODE_WORDS_SCAN 48   /* where a PyNode keeps its Python object */
#define TYPES_MAX 128          /* node types named (vtable or Python type -> name id) */
#define ORIGINS_MAX 4096       /* places nodes are made at (power of two) */
#define ORIGIN_PROBES 32       /* slots an origin is looked for in */
#define ORIGIN_YOUNG 4         /* backward calls begun since its first node: still kept whole */
#define SLOT_ORIGIN (1u << 31) /* a slot's stack word: not kept, the origin's index below */

struct node_ref { /* c10::intrusive_ptr<Node> (torch 2.15: Node is an intrusive_ptr_target) */
    void *node;
};
typedef void (*get_node_fn)(struct node_ref *ret); /* non-trivial return type: by hidden pointer */
#define NODE_REFCOUNT_WORD 1 /* intrusive_ptr_target::combined_refcount_, after the vtable */
typedef uint64_t (*u64_fn)(void);

static struct {
    u64_fn peek, thread_id;
    get_node_fn current;
    _Atomic bool *enabled, *check_nan;  /* AnomalyMode::_enabled, _check_nan (1 byte each) */
    int seq_word, tid_word, pyobj_word; /* word offsets in a Node / PyNode */
    void *pynode_vtable;
    _Atomic bool ready, active;
    _Atomic bool watching; /* the sequence hook keeps stacks: active, outside backward calls */
    bool hooked;           /* calibration saw the sequence hook: anomaly mode is never used */
    bool saved_check_nan;
} t = {.pyobj_word = -1};
static SYNCSPY_TLS uint64_t last_made1; /* this thread's newest node's sequence number + 1 */
static _Atomic bool hook_unusable;      /* torch's own get_and_increment was not found */

struct slot {
    _Atomic uint64_t seq1; /* the node's sequence number + 1 (0: empty) */
    _Atomic uint32_t stack;
    _Atomic uint32_t owner; /* the low 32 bits of the writer's ring owner (tid + 1) */
};
/* A forward thread's ring. A thread that ended gives its ring up (a pthread-key destructor marks
 * it ended); a new thread then takes a ring never given, else, of those whose thread ended before
 * a backward call began (its nodes' backward has run, in the usual loop: a forward thread, then
 * the backward; nn.DataParallel's threads too), the one whose thread ended first. A ring whose
 * thread ended since the last backward call keeps its stacks for that backward: a thread that
 * finds no other is refused (its nodes get no line, and say why). A slot names the thread that
 * wrote it, and a reader checks the ring's owner before and after reading it: a reused ring never
 * gives one thread's stack for another's node. */
struct ring {
    _Atomic uint64_t tid1;      /* the forward thread's id + 1 (0: never given) */
    _Atomic uint64_t ended;     /* 0 while its thread lives, else the order its thread ended in */
    _Atomic uint64_t backwards; /* backward_calls when its thread ended */
    struct slot *_Atomic slots;
};
static struct ring rings[RINGS_MAX];
static _Atomic uint64_t rings_ended;    /* threads that ended holding a ring */
static _Atomic uint64_t backward_calls; /* backward calls begun (nodes_backward_begin) */
/* The threads whose nodes the rings do not hold, by (tid + 1) % LEFT_OUT_MAX: (tid + 1) << 2 |
 * LEFT_OUT_REFUSED (it found every ring held by a live thread) or LEFT_OUT_REUSED (its ring was
 * given to a newer thread after it ended). The newest thread wins a shared entry; an older one's
 * nodes then read as unwatched. */
#define LEFT_OUT_MAX 1024
#define LEFT_OUT_REFUSED 1u
#define LEFT_OUT_REUSED 2u
static _Atomic uint64_t left_out[LEFT_OUT_MAX];
static pthread_key_t ring_key; /* the calling thread's ring: given up by thread_ended */
static void thread_ended(void *arg);
static bool ring_key_made;
/* This thread's ring (NULL: none yet, or refused), its id + 1. */
static SYNCSPY_TLS struct {
    struct ring *ring;
    uint64_t tid1;
    uint64_t refused_at; /* rings_ended + backward_calls + 1 when it was refused (0: never) */
} mine;
static struct {
    _Atomic(const void *) key;
    _Atomic uint32_t name;
} types[TYPES_MAX];
/* Where nodes are made (the sequence number hook, in a step that attributes every step): the
 * creating thread's innermost Python frame, (code, instruction). Walking the whole Python stack
 * for every node cost ~700 Ir a node, 15 nodes a step on the seed-003 loop, where one of them
 * syncs in backward; so a node's stack is kept whole only while its origin is young (its nodes
 * made before the ORIGIN_YOUNG-th backward call begins after its first node: an iteration may
 * call backward more than once, a GAN's two or three times) or once a node made there was seen
 * running at a backward sync. The others cost the innermost frame and this table. A node made
 * at an old origin that syncs for the first time has no forward line, says why (not_looked_for)
 * and marks the origin: its next nodes are kept. The origin only decides whether a stack is kept,
 * never which: no line is put on another's syncs. Entries are published once (code last, with
 * release) and never removed. */
static struct origin {
    _Atomic uintptr_t code; /* 0: empty */
    _Atomic uint32_t lasti;
    _Atomic bool syncs;       /* a node made here was current at a backward sync */
    _Atomic uint64_t seen_at; /* backward_calls at its first node */
} origins[ORIGINS_MAX];
static _Atomic bool origins_gate; /* attribution in every step: the gate is on (else all kept) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct arena arena = {.cap_bytes = 16u << 20};
static _Atomic uint64_t n_stored, n_found, n_missed;
static PyObject *original_format_stack, *fx_dict, *true_object;

bool nodes_ready(void)
{
    return atomic_load_explicit(&t.ready, memory_order_acquire);
}

bool nodes_active(void)
{
    return atomic_load_explicit(&t.active, memory_order_relaxed);
}

void nodes_stats(uint64_t *stored, uint64_t *found, uint64_t *missed)
{
    *stored = atomic_load(&n_stored);
    *found = atomic_load(&n_found);
    *missed = atomic_load(&n_missed);
}

/* ---- calibration ---------------------------------------------------------------------------- */

static bool resolve(void)
{
    void *h = dlopen(TORCH_CPU, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return false;
    t.peek = (u64_fn)dlsym(h, "_ZN2at15sequence_number4peekEv");
    t.thread_id = (u64_fn)dlsym(h, "_ZN2at14RecordFunction15currentThreadIdEv");
    t.current = (get_node_fn)dlsym(h, "_ZN5torch8autograd16get_current_nodeEv");
    t.enabled = dlsym(h, "_ZN5torch8autograd11AnomalyMode8_enabledE");
    t.check_nan = dlsym(h, "_ZN5torch8autograd11AnomalyMode10_check_nanE");
    dlclose(h); /* torch stays loaded: NOLOAD took a reference of an already loaded library */
    return t.peek && t.thread_id && t.current && t.enabled && t.check_nan;
}

/* The one word index where every node holds want(i): -1 when none or several. */
static int unique_word(void *const *nodes, const uint64_t *want, int n, int skip)
{
    int found = -1;
    for (int w = 1; w < NODE_WORDS_SCAN; w++) { /* word 0: the vtable */
        bool all = w != skip;
        for (int i = 0; i < n && all; i++)
            all = ((const uint64_t *)nodes[i])[w] == want[i];
        if (all) {
            if (found >= 0)
                return -1;
            found = w;
        }
    }
    return found;
}

/* A THPCppFunction (a C++ node's grad_fn): PyObject_HEAD, then std::shared_ptr<Node>. */
static void *node_of_grad_fn(PyObject *fn)
{
    return ((void *const *)fn)[2];
}

bool nodes_calibrate(PyObject *fns, PyObject *seqs)
{
    if (!NODES_ABI_OK || nodes_ready() || !resolve())
        return false;
    enum { N = 4 };
    void *nodes[N];
    uint64_t seq[N], tid[N];
    if (pyapi.tuple_size(fns) != N || pyapi.tuple_size(seqs) != N)
        return false;
    uint64_t me = t.thread_id();
    for (int i = 0; i < N; i++) {
        nodes[i] = node_of_grad_fn(pyapi.tuple_get(fns, i));
        seq[i] = pyapi.long_as_u64(pyapi.tuple_get(seqs, i));
        tid[i] = me;
        if (!nodes[i] || pyapi.err_occurred()) {
            pyapi.err_clear();
            return false;
        }
    }
    /* thread_id_ first: the same small number in each node (topological_nr_ differs along the
     * chain), then sequence_nr_ (each node its own) */
    t.tid_word = unique_word(nodes, tid, N, -1);
    t.seq_word = unique_word(nodes, seq, N, t.tid_word);
    dbg(2, "anomaly engine: Node's sequence_nr_ at word %d, thread_id_ at word %d", t.seq_word,
        t.tid_word);
    if (t.tid_word < 0 || t.seq_word < 0)
        return false;
    /* and the engine's current node is none outside backward */
    struct node_ref cur = {0};
    t.current(&cur);
    if (cur.node != NULL)
        return false;
    /* the newest node made on this thread went through the interposed sequence number */
    t.hooked = last_made1 == seq[N - 1] + 1 && !atomic_load(&hook_unusable);
    /* a thread's ring is given up when it ends: without the key, a ring is never reused */
    pthread_mutex_lock(&lock);
    if (!ring_key_made)
        ring_key_made = pthread_key_create(&ring_key, thread_ended) == 0;
    pthread_mutex_unlock(&lock);
    dbg(2, "backward attribution: %s",
        t.hooked ? "the sequence number hook" : "the anomaly engine");
    return true;
}

void nodes_hook_unusable(void)
{
    atomic_store(&hook_unusable, true);
}

bool nodes_hooked(void)
{
    return t.hooked;
}

/* Drops the reference get_current_node gave. The engine's own two (its NodeTask's and its
 * NodeGuard's) outlive ours, so the count never falls to 1 or 0 here, where c10's reset_ would
 * release the node's PyObject or the node itself. */
static void release(struct node_ref *r)
{
    if (r->node)
        atomic_fetch_sub_explicit((_Atomic uint64_t *)r->node + NODE_REFCOUNT_WORD, 1,
                                  memory_order_acq_rel);
}

bool nodes_probe_pynode(PyObject *ctx)
{
    if (!t.current || t.tid_word < 0)
        return false;
    struct node_ref cur = {0};
    t.current(&cur);
    if (!cur.node)
        return false;
    int found = -1;
    for (int w = t.tid_word + 1; w < PYNODE_WORDS_SCAN && found < 0; w++)
        if (((void *const *)cur.node)[w] == (void *)ctx)
            found = w;
    t.pyobj_word = found;
    t.pynode_vtable = *(void **)cur.node;
    release(&cur);
    dbg(2, "anomaly engine: a PyNode's Python object at word %d", found);
    if (found >= 0)
        atomic_store_explicit(&t.ready, true, memory_order_release);
    return found >= 0;
}

/* ---- turning it on and off ------------------------------------------------------------------ */

bool nodes_set_active(bool on)
{
    if (!nodes_ready())
        return false;
    if (on == nodes_active())
        return true;
    if (t.hooked) {
        if (on && atomic_load(t.enabled))
            return false; /* the program's own anomaly mode: the mode engine's step (autograd_attr.py) */
        atomic_store(&t.active, on);
        atomic_store(&t.watching, on);
        return true;
    }
    if (on) {
        if (atomic_load(t.enabled))
            return false; /* the program's own anomaly mode: not ours to change */
        t.saved_check_nan = atomic_load(t.check_nan);
        atomic_store(t.check_nan, false);
        atomic_store(&t.active, true);
        atomic_store(t.enabled, true);
        return true;
    }
    atomic_store(&t.active, false);
    if (!atomic_load(t.check_nan)) { /* still ours (the program's detect_anomaly checks nan) */
        atomic_store(t.enabled, false);
        atomic_store(t.check_nan, t.saved_check_nan);
    }
    return true;
}

bool nodes_backward_begin(void)
{
    atomic_fetch_add_explicit(&backward_calls, 1, memory_order_relaxed); /* rings may be reused */
    if (t.hooked) {
        if (!nodes_active())
            return false;
        atomic_store(&t.watching, false);
        return true;
    }
    if (!nodes_active() || atomic_load(t.check_nan) || !atomic_load(t.enabled))
        return false;
    atomic_store(t.enabled, false);
    return true;
}

void nodes_backward_end(bool restore)
{
    if (restore && nodes_active())
        atomic_store(t.hooked ? &t.watching : t.enabled, true);
}

/* ---- forward: a node is made ---------------------------------------------------------------- */

/* pthread-key destructor: a thread that held a ring ends; the ring may go to a newer thread. */
static void thread_ended(void *arg)
{
    struct ring *r = arg;
    if (r && mine.ring == r) {
        atomic_store(&r->backwards, atomic_load(&backward_calls));
        uint64_t order = atomic_fetch_add(&rings_ended, 1) + 1;
        atomic_store_explicit(&r->ended, order, memory_order_release);
    }
    mine.ring = NULL;
}

static void left_out_mark(uint64_t tid1, unsigned why)
{
    atomic_store_explicit(&left_out[tid1 % LEFT_OUT_MAX], tid1 << 2 | why, memory_order_release);
}

/* Why the thread tid1's node is in no ring (LEFT_OUT_*), 0 when not known. */
static unsigned left_out_of(uint64_t tid1)
{
    uint64_t e = atomic_load_explicit(&left_out[tid1 % LEFT_OUT_MAX], memory_order_acquire);
    return e >> 2 == tid1 ? (unsigned)(e & 3) : 0;
}

/* A ring for the calling thread (tid1: its id + 1), under the lock: one never given, else the
 * one whose thread ended first before a backward call began; NULL when there is none (every
 * ring's thread lives, or ended since the last backward call) or no memory. */
static struct ring *ring_take(uint64_t tid1)
{
    struct ring *r = NULL, *oldest = NULL;
    uint64_t backwards = atomic_load(&backward_calls);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < RINGS_MAX && !r; i++) {
        uint64_t have = atomic_load(&rings[i].tid1), ended = atomic_load(&rings[i].ended);
        if (have == 0)
            r = &rings[i];
        else if (ended && atomic_load(&rings[i].backwards) < backwards &&
                 (!oldest || ended < atomic_load(&oldest->ended)))
            oldest = &rings[i];
    }
    struct slot *s = NULL;
    if (r && (s = arena_alloc(&arena, RING_SLOTS * sizeof *s))) {
        atomic_store(&r->slots, s);
    } else if (!r && oldest) {
        r = oldest;
        left_out_mark(atomic_load(&r->tid1), LEFT_OUT_REUSED);
        atomic_store(&r->tid1, 0); /* a reader that saw the old owner sees the change */
        atomic_store(&r->ended, 0);
    } else {
        r = NULL;
    }
    if (r)
        atomic_store_explicit(&r->tid1, tid1, memory_order_release);
    else
        left_out_mark(tid1, LEFT_OUT_REFUSED);
    pthread_mutex_unlock(&lock);
    if (r && ring_key_made)
        pthread_setspecific(ring_key, r); /* thread_ended gives it up */
    return r;
}

/* The calling thread's ring: taken at its first node kept; a refused thread asks again only
 * after another thread ended holding one or a backward call began (what frees one). */
static struct ring *own_ring(void)
{
    if (likely(mine.ring != NULL))
        return mine.ring;
    if (!mine.tid1)
        mine.tid1 = t.thread_id() + 1;
    uint64_t now = atomic_load_explicit(&rings_ended, memory_order_relaxed) +
                   atomic_load_explicit(&backward_calls, memory_order_relaxed);
    if (mine.refused_at == now + 1)
        return NULL;
    mine.ring = ring_take(mine.tid1);
    mine.refused_at = mine.ring ? 0 : now + 1;
    return mine.ring;
}

static uint32_t origin_hash(uintptr_t code, uint32_t lasti)
{
    return (uint32_t)((((uint64_t)code >> 4) ^ ((uint64_t)lasti << 20)) * 0x9e3779b97f4a7c15ull >>
                      40) &
           (ORIGINS_MAX - 1);
}

/* Origin (code, lasti) in its probe run: its index, else -1 and *empty the run's first free
 * slot (-1: none). Lock-free: an entry is whole once its code is seen (acquire). */
static int origin_lookup(uintptr_t code, uint32_t lasti, int *empty)
{
    uint32_t k = origin_hash(code, lasti);
    *empty = -1;
    for (int i = 0; i < ORIGIN_PROBES; i++, k = (k + 1) & (ORIGINS_MAX - 1)) {
        uintptr_t c = atomic_load_explicit(&origins[k].code, memory_order_acquire);
        if (c == 0) {
            *empty = (int)k;
            return -1;
        }
        if (c == code && atomic_load_explicit(&origins[k].lasti, memory_order_relaxed) == lasti)
            return (int)k;
    }
    return -1;
}

/* The index of origin (code, lasti), added at its first node (the lock: first sight only); -1
 * when its probe run is full (its nodes are then all kept). */
static int origin_of(uintptr_t code, uint32_t lasti)
{
    int empty, k = origin_lookup(code, lasti, &empty);
    if (likely(k >= 0) || empty < 0)
        return k;
    pthread_mutex_lock(&lock);
    k = origin_lookup(code, lasti, &empty);
    if (k < 0 && empty >= 0) {
        struct origin *o = &origins[empty];
        atomic_store_explicit(&o->lasti, lasti, memory_order_relaxed);
        atomic_store_explicit(&o->syncs, false, memory_order_relaxed);
        atomic_store_explicit(&o->seen_at, atomic_load(&backward_calls), memory_order_relaxed);
        atomic_store_explicit(&o->code, code, memory_order_release);
        k = empty;
    }
    pthread_mutex_unlock(&lock);
    return k;
}

/* Whether the node made now on this thread is to have its stack kept; when not, *origin gets
 * where it was made (the innermost Python frame's origin index). */
static bool wanted(uint32_t *origin)
{
    if (!atomic_load_explicit(&origins_gate, memory_order_relaxed))
        return true;
    uintptr_t code;
    uint32_t lasti;
    if (!pyframes_innermost(&code, &lasti))
        return true; /* no Python frame: nothing to key (the capture keeps nothing either) */
    int k = origin_of(code, lasti);
    if (k < 0)
        return true;
    const struct origin *o = &origins[k];
    if (atomic_load_explicit(&o->syncs, memory_order_relaxed) ||
        atomic_load_explicit(&backward_calls, memory_order_relaxed) -
                atomic_load_explicit(&o->seen_at, memory_order_relaxed) <
            ORIGIN_YOUNG)
        return true;
    *origin = (uint32_t)k;
    return false;
}

/* At a backward sync, the running node's origin: from then on its nodes are kept whole. id: the
 * slot's word (SLOT_ORIGIN | index) or the kept stack (its innermost frame is the origin). */
static void origin_synced(uint32_t id)
{
    int k = -1, empty;
    if (id & SLOT_ORIGIN) {
        k = (int)(id & ~SLOT_ORIGIN);
    } else {
        uintptr_t code;
        uint32_t lasti;
        if (autograd_kept_innermost(id, &code, &lasti))
            k = origin_lookup(code, lasti, &empty);
    }
    if (k >= 0 && k < ORIGINS_MAX && !atomic_load_explicit(&origins[k].syncs, memory_order_relaxed))
        atomic_store_explicit(&origins[k].syncs, true, memory_order_relaxed);
}

void nodes_keep_every_node(bool every)
{
    atomic_store_explicit(&origins_gate, !every, memory_order_relaxed);
}

/* The creating thread's Python stack, kept for the node (this thread, seq); gate: only where
 * wanted() says (the sequence number hook), else always (the anomaly engine). */
static void keep(uint64_t seq, bool gate)
{
    struct ring *r = own_ring();
    struct slot *s =
        r ? &atomic_load_explicit(&r->slots, memory_order_relaxed)[seq & (RING_SLOTS - 1)] : NULL;
    uint32_t owner = (uint32_t)mine.tid1;
    /* first writer wins: a node made with an explicit number (AccumulateGrad's UINT64_MAX)
     * inside an op finds its op's node's slot already filled */
    if (s && (atomic_load_explicit(&s->seq1, memory_order_relaxed) != seq + 1 ||
              atomic_load_explicit(&s->owner, memory_order_relaxed) != owner)) {
        uint32_t origin = 0;
        uint32_t id =
            !gate || wanted(&origin) ? autograd_capture_python_outside() : SLOT_ORIGIN | origin;
        atomic_store_explicit(&s->seq1, 0, memory_order_release);
        atomic_store_explicit(&s->stack, id, memory_order_release);
        atomic_store_explicit(&s->owner, owner, memory_order_release);
        atomic_store_explicit(&s->seq1, seq + 1, memory_order_release);
        if (!(id & SLOT_ORIGIN))
            atomic_fetch_add_explicit(&n_stored, 1, memory_order_relaxed);
    }
}

void nodes_set_format_stack(PyObject *original, PyObject *fx, PyObject *py_true)
{
    pyapi.incref(original);
    pyapi.incref(fx);
    original_format_stack = original;
    fx_dict = fx;
    true_object = py_true;
}

/* Not ours to answer: the program's own anomaly mode (it checks nan; we never do), or fx/dynamo
 * tracing that keeps node metadata (torch/_functorch/_aot_autograd runs detect_anomaly inside
 * preserve_node_meta). */
static bool delegate(void)
{
    if (!nodes_active() || atomic_load_explicit(t.check_nan, memory_order_relaxed))
        return true;
    return fx_dict && pyapi.dict_get(fx_dict, "should_preserve_node_meta") == true_object;
}

PyObject *nodes_format_stack(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    if (delegate())
        return original_format_stack ? pyapi.call_object(original_format_stack, NULL)
                                     : pyapi.tuple_new(0);
    keep(t.peek() - 1, false); /* the constructor took peek() - 1 */
    return pyapi.tuple_new(0); /* print_stack joins it: "" */
}

void nodes_made(uint64_t seq)
{
    last_made1 = seq + 1;
    if (!atomic_load_explicit(&t.watching, memory_order_relaxed))
        return;
    int saved = errno; /* inside torch's Node constructor: nothing of ours shows */
    keep(seq, true);
    errno = saved;
}

pthread_mutex_t *nodes_lock(void)
{
    return &lock;
}

/* The child's one thread (the lock it held across fork() released). */
void nodes_atfork_child(void)
{
    uint64_t order = atomic_load(&rings_ended);
    for (int i = 0; i < RINGS_MAX; i++)
        if (&rings[i] != mine.ring && atomic_load(&rings[i].tid1) && !atomic_load(&rings[i].ended))
            atomic_store(&rings[i].ended, ++order);
    atomic_store(&rings_ended, order);
}

/* ---- backward: which node runs -------------------------------------------------------------- */

/* "N5torch8autograd9generated12MulBackward0E" -> "MulBackward0" (the last name of a nested
 * name; a template's own name before its arguments). */
static bool short_type_name(const char *m, char *out, size_t cap)
{
    const char *last = NULL;
    size_t len = 0;
    if (*m == '*') /* GCC's mark of a type_info name not merged across libraries */
        m++;
    if (*m == 'N')
        m++;
    while (*m >= '1' && *m <= '9') {
        size_t n = 0;
        while (*m >= '0' && *m <= '9')
            n = n * 10 + (size_t)(*m++ - '0');
        if (strnlen(m, n) < n)
            return false;
        last = m;
        len = n;
        m += n;
    }
    if (!last || len + 1 > cap)
        return false;
    memcpy(out, last, len);
    out[len] = 0;
    return true;
}

struct py_head { /* PyObject_HEAD and the start of PyTypeObject (stable in 3.11..3.13) */
    intptr_t refcnt;
    struct py_head *type;
    intptr_t size;
    const char *tp_name;
};

/* The name id of a node's type: cached by vtable (a C++ node) or by Python type (a custom
 * Function's PyNode: its Python class, as PyNode::name() says). */
static uint32_t type_name_id(void *node)
{
    void *vt = *(void **)node;
    const void *key = vt;
    const char *pyname = NULL;
    if (vt == t.pynode_vtable && t.pyobj_word >= 0) {
        const struct py_head *obj = ((void *const *)node)[t.pyobj_word];
        if (!obj || !obj->type)
            return 0;
        key = obj->type;
        pyname = obj->type->tp_name;
    }
    uint32_t h = (uint32_t)(((uintptr_t)key >> 4) * 2654435761u) & (TYPES_MAX - 1);
    for (uint32_t i = 0; i < TYPES_MAX; i++, h = (h + 1) & (TYPES_MAX - 1)) {
        const void *k = atomic_load_explicit(&types[h].key, memory_order_acquire);
        if (k == key)
            return atomic_load_explicit(&types[h].name, memory_order_relaxed);
        if (k == NULL)
            break;
    }
    /* first sight of this type: named once (autograd_name_id takes its own lock) */
    char name[96];
    const void *const *vtable = vt;
    const char *mangled =
        pyname ? NULL : *(const char *const *)((const char *)vtable[-1] + sizeof(void *));
    if (pyname) {
        const char *dot = strrchr(pyname, '.');
        snprintf(name, sizeof name, "%s", dot ? dot + 1 : pyname);
    } else if (!mangled || !short_type_name(mangled, name, sizeof name)) {
        return 0;
    }
    uint32_t id = autograd_name_id(name);
    pthread_mutex_lock(&lock);
    for (uint32_t i = 0; i < TYPES_MAX; i++, h = (h + 1) & (TYPES_MAX - 1)) {
        const void *k = atomic_load_explicit(&types[h].key, memory_order_relaxed);
        if (k == key)
            break;
        if (k == NULL) {
            atomic_store_explicit(&types[h].name, id, memory_order_relaxed);
            atomic_store_explicit(&types[h].key, key, memory_order_release);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return id;
}

/* The forward stack kept for node (tid, seq), 0 when none: *cause then says why when the
 * rings know (BACKWARD_CAUSE_NO_RING, _RING_REUSED), else 0. The ring's owner is read before
 * and after the slot: a ring given to another thread meanwhile gives nothing. */
static uint32_t forward_of(uint64_t tid, uint64_t seq, uint32_t *cause)
{
    uint64_t tid1 = tid + 1;
    struct ring *r = NULL;
    for (int i = 0; i < RINGS_MAX && !r; i++)
        if (atomic_load_explicit(&rings[i].tid1, memory_order_acquire) == tid1)
            r = &rings[i];
    unsigned why = left_out_of(tid1);
    *cause = why == LEFT_OUT_REFUSED        ? BACKWARD_CAUSE_NO_RING
             : why == LEFT_OUT_REUSED && !r ? BACKWARD_CAUSE_RING_REUSED
                                            : 0;
    struct slot *slots = r ? atomic_load_explicit(&r->slots, memory_order_acquire) : NULL;
    if (!slots)
        return 0;
    struct slot *s = &slots[seq & (RING_SLOTS - 1)];
    if (atomic_load_explicit(&s->seq1, memory_order_acquire) != seq + 1)
        return 0;
    uint32_t owner = atomic_load_explicit(&s->owner, memory_order_acquire);
    uint32_t id = atomic_load_explicit(&s->stack, memory_order_acquire);
    if (atomic_load_explicit(&s->seq1, memory_order_acquire) != seq + 1 ||
        owner != (uint32_t)tid1 || atomic_load_explicit(&r->tid1, memory_order_acquire) != tid1)
        return 0;
    origin_synced(id);
    if (id & SLOT_ORIGIN) {
        *cause = BACKWARD_CAUSE_UNTAGGED; /* its origin had not synced: kept from the next node */
        return 0;
    }
    *cause = 0;
    return id;
}

bool nodes_current(uint32_t *forward, uint32_t *name, uint32_t *cause)
{
    if (!nodes_ready())
        return false;
    /* With the program's anomaly mode checking nan, the engine syncs after each node's apply, the
     * node still current (Engine::evaluate_function): that wait is not the node's. Those steps
     * are the mode engine's (its node hooks span the apply alone). */
    if (t.hooked && atomic_load_explicit(t.enabled, memory_order_relaxed) &&
        atomic_load_explicit(t.check_nan, memory_order_relaxed))
        return false;
    struct node_ref cur = {0};
    t.current(&cur);
    if (!cur.node)
        return false;
    const uint64_t *w = cur.node;
    *forward = forward_of(w[t.tid_word], w[t.seq_word], cause);
    *name = type_name_id(cur.node);
    release(&cur);
    atomic_fetch_add_explicit(*forward ? &n_found : &n_missed, 1, memory_order_relaxed);
    return true;
}
