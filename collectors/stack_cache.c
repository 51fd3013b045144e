/* collectors/stack_cache.c: the validated per-thread stack cache (see stack_cache.h). Inside a
 * CUDA call on the application's thread: no malloc, no locks, no stdio; a thread's storage is
 * mmap'ed on its first cacheable stack and goes back to a fixed pool when the thread exits.
 *
 * What a chain is. On a miss, the capture's registers (rip, rsp, rbp at one point of the
 * capturing function) are unwound with the CFI rules of collectors/cfi.c. For each frame: the
 * stack slot that holds its return address and the value there; and for each frame whose CFA
 * is RBP-based, the source of that RBP: the slot (and value) where the nearest inner frame that
 * saved RBP saved it, or, when no inner frame did, the snapshot's RBP itself. (A saved RBP that
 * no outer CFA is based on is not checked: in code without frame pointers RBP holds data, which
 * changes from call to call without changing the frames.) The chain is kept only when the pcs it yields are exactly
 * libunwind's list (same values, same count; when libunwind stopped at its limit, the chain
 * stops there too); any rule the reader does not model anywhere in it: not kept.
 *
 * Why a check of the slots is enough (soundness). A capture with the same rsp starts at the
 * same pc (the snapshot's point is fixed) and so the same CFA rule: the innermost frame's CFA
 * and return-address slot are those of the chain. By induction, a frame whose pc and CFA equal
 * the chain's has the same rule (the CFI is a function of the pc), so its return-address slot
 * and saved-RBP slot are the chain's; a check that the slot holds the recorded value makes the
 * caller's pc equal. A frame's CFA is its rsp (the CFA of the frame below) plus an offset
 * (RSP-based rule), or RBP plus an offset (RBP-based), that RBP coming from the slot saved by
 * the nearest known inner frame that saved it (its address fixed by that frame's CFA) or from
 * the snapshot's register: both are checked. So when every check passes, every frame's pc and
 * CFA equal the chain's, and libunwind, whose list is a function of the pcs and the CFAs (its
 * frame rules come from the pcs; the return addresses from the CFAs; RBP only matters where a
 * CFA is based on it), would return the same list. The frames of the capture's own call into libunwind (the first entries
 * of its list, before the chain's first pc) are those of one fixed call site: constant.
 *
 * A stack is walked on its second miss (a one-off neither pays the walk nor evicts a chain),
 * with the CFI rules memoized by pc (the process's, kept across threads, dropped at dlclose).
 *
 * The loads of a validation do not depend on one another (an OR of load ^ expected): about one
 * round of cache misses instead of ~40 dependent ones. Only the current thread's own entries are
 * read (a pool slot is cleared when another thread takes it), and only slots that held return
 * addresses or saved RBPs of live frames at or above the current rsp.
 *
 * Why every load is of mapped memory (issue 22: a coroutine whose stack's top had been unmapped
 * reached a cached sync at the same rsp, and the check read the unmapped part). The cache works
 * on the thread's own stack only, [lo, hi): glibc's bounds of the thread (pthread_getattr_np;
 * for the process's first thread the mapping of its stack, from /proc/self/maps), taken at the
 * thread's first walk. A capture whose rsp is outside them (a makecontext coroutine, a
 * sigaltstack handler, any stack the program switched to) neither reads nor keeps a chain: it
 * unwinds. A chain keeps slots below hi only, so a check at rsp in [lo, hi) reads inside
 * [rsp, hi): the live part of the thread's stack, mapped for as long as the thread runs (glibc's
 * stacks are mapped whole; the first thread's mapping only grows). Two compares a capture, no
 * system call. */
#include "collectors/stack_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/compiler.h"

#if STACK_CACHE_BUILT

#define SC_ENTRIES 8 /* chains per thread, round-robin */
#define SC_CHECKS (2 * STACK_CACHE_FRAMES + 2)
#define SC_POOL 256     /* threads with a cache at once; later ones go without */
#define SC_PREFIX_MAX 3 /* libunwind's frames before the chain's first pc */
#define SC_RULES 512    /* the thread's memo of CFI rules by pc, direct-mapped */
#define SC_SEEN 16      /* hashes of stacks missed once: a second miss walks */

struct sc_check {
    uintptr_t slot, val;
};

struct sc_entry {
    int n, nchecks;
    bool need_rbp;
    uintptr_t rbp;
    void *raw[STACK_CACHE_FRAMES];
    struct sc_check chk[SC_CHECKS];
};

/* A CFI rule found for a pc (ok false: unsupported), kept for the walks of later misses: most
 * frames of a new stack are frames of stacks walked before. */
struct sc_rule {
    uintptr_t pc; /* 0: empty */
    bool ok;
    struct cfi_rule rule;
};

struct stack_cache {
    uintptr_t key[SC_ENTRIES]; /* the snapshot's rsp; 0: empty */
    int limit[SC_ENTRIES];
    unsigned gen[SC_ENTRIES]; /* sc_generation when it was walked */
    struct sc_entry *slot[SC_ENTRIES];
    struct sc_entry *spare; /* a walk is built here, then swapped in */
    unsigned next;
    uint64_t seen[SC_SEEN]; /* a stack is walked on its second miss, not on a one-off */
    unsigned seen_next;
    unsigned rules_gen; /* sc_generation the memo's rules are of */
    struct sc_rule rules[SC_RULES];
    struct sc_entry store[SC_ENTRIES + 1];
};

struct sc_thread {
    struct stack_cache *sc;
    int pool_index;
    bool busy;   /* inside a capture: a nested one (a signal handler's) does without */
    bool exited; /* after the thread's exit: no new storage */
    bool bounds_tried;
    uintptr_t stack_lo, stack_hi; /* the thread's own stack; both 0: not known (no cache) */
    struct stack_cache_stats stats;
};

static SYNCSPY_TLS struct sc_thread sct = {.pool_index = -1};
static bool sc_enabled = true;
/* Bumped after every dlclose: a chain walked before it may hold pcs (and rules) of an object
 * gone, which another one mapped at the same address could repeat. */
static _Atomic unsigned sc_generation;
/* The counts of the threads that exited (SYNCSPY_DEBUG's line at exit). */
static _Atomic uint64_t retired_hits, retired_misses, retired_uncacheable;
static struct stack_cache *pool[SC_POOL]; /* pool[i] written only by the holder of i */
static _Atomic bool pool_busy[SC_POOL];

void stack_cache_set_enabled(bool on)
{
    sc_enabled = on;
}

bool stack_cache_begin(void)
{
    if (!sc_enabled || sct.busy)
        return false;
    sct.busy = true;
    atomic_signal_fence(memory_order_seq_cst);
    return true;
}

void stack_cache_end(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    sct.busy = false;
}

static void cache_reset(struct stack_cache *sc)
{
    for (int i = 0; i < SC_ENTRIES; i++) {
        sc->key[i] = 0;
        sc->slot[i] = &sc->store[i];
    }
    sc->spare = &sc->store[SC_ENTRIES];
    sc->next = 0; /* the memo's rules stay: they are the process's, not the thread's */
}

/* A free pool slot for this thread (its storage mapped on the slot's first use), or NULL. */
static struct stack_cache *cache_claim(void)
{
    for (int i = 0; i < SC_POOL; i++) {
        if (atomic_load_explicit(&pool_busy[i], memory_order_relaxed) ||
            atomic_exchange_explicit(&pool_busy[i], true, memory_order_acquire))
            continue;
        if (!pool[i]) {
            void *p = mmap(NULL, sizeof(struct stack_cache), PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) {
                atomic_store_explicit(&pool_busy[i], false, memory_order_release);
                return NULL;
            }
            pool[i] = p;
        }
        cache_reset(pool[i]);
        sct.pool_index = i;
        return sct.sc = pool[i];
    }
    return NULL;
}

void stack_cache_thread_exit(void)
{
    atomic_fetch_add_explicit(&retired_hits, sct.stats.hits, memory_order_relaxed);
    atomic_fetch_add_explicit(&retired_misses, sct.stats.misses, memory_order_relaxed);
    atomic_fetch_add_explicit(&retired_uncacheable, sct.stats.uncacheable, memory_order_relaxed);
    sct.stats = (struct stack_cache_stats){0, 0, 0};
    sct.exited = true;
    if (!sct.sc)
        return;
    sct.sc = NULL;
    atomic_store_explicit(&pool_busy[sct.pool_index], false, memory_order_release);
    sct.pool_index = -1;
}

void stack_cache_atfork_child(void)
{
    for (int i = 0; i < SC_POOL; i++)
        if (i != sct.pool_index)
            atomic_store_explicit(&pool_busy[i], false, memory_order_relaxed);
}

void stack_cache_stats(struct stack_cache_stats *out)
{
    *out = sct.stats;
}

void stack_cache_stats_exited(struct stack_cache_stats *out)
{
    *out = (struct stack_cache_stats){
        atomic_load_explicit(&retired_hits, memory_order_relaxed),
        atomic_load_explicit(&retired_misses, memory_order_relaxed),
        atomic_load_explicit(&retired_uncacheable, memory_order_relaxed)};
}

void stack_cache_forget_all(void)
{
    atomic_fetch_add_explicit(&sc_generation, 1, memory_order_release);
}

/* Every recorded slot still holds its value: loads without dependencies between them, in
 * blocks of 8 (a block that differs ends the check: another stack at the same depth; the
 * branch predicted as equal keeps the next blocks' loads in flight). */
__attribute__((no_sanitize_address)) static bool entry_valid(const struct sc_entry *e,
                                                             uintptr_t rbp)
{
    if (e->need_rbp && rbp != e->rbp)
        return false;
    const struct sc_check *c = e->chk;
    int i = 0;
    for (; i + 8 <= e->nchecks; i += 8) {
        uintptr_t d0 = 0, d1 = 0;
        for (int k = 0; k < 8; k += 2) {
            d0 |= *(const volatile uintptr_t *)c[i + k].slot ^ c[i + k].val;
            d1 |= *(const volatile uintptr_t *)c[i + k + 1].slot ^ c[i + k + 1].val;
        }
        if (unlikely(d0 | d1))
            return false;
    }
    uintptr_t d = 0;
    for (; i < e->nchecks; i++)
        d |= *(const volatile uintptr_t *)c[i].slot ^ c[i].val;
    return d == 0;
}

/* rsp is on the thread's own stack (not a coroutine's, not a sigaltstack handler's); false
 * while its bounds are not known. */
static inline bool on_own_stack(uintptr_t rsp)
{
    return rsp - sct.stack_lo < sct.stack_hi - sct.stack_lo;
}

int stack_cache_find(const struct sc_regs *r, void **raw, int limit)
{
    struct stack_cache *sc = sct.sc;
    if (sc && on_own_stack(r->rsp)) {
        unsigned gen = atomic_load_explicit(&sc_generation, memory_order_acquire);
        for (int i = 0; i < SC_ENTRIES; i++) {
            if (sc->key[i] != r->rsp || sc->limit[i] != limit || sc->gen[i] != gen)
                continue;
            const struct sc_entry *e = sc->slot[i];
            if (!entry_valid(e, r->rbp))
                continue;
            memcpy(raw, e->raw, (size_t)e->n * sizeof *raw);
            sct.stats.hits++;
            return e->n;
        }
    }
    sct.stats.misses++;
    return -1;
}

/* ---- the walk ------------------------------------------------------------------------------- */

struct walk {
    struct stack_cache *sc;
    uintptr_t pc, cfa_floor, rsp, rbp;
    /* Where rbp came from: a saved slot (rbp_slot != 0) or the snapshot's register; checked
     * only once a frame's CFA is based on it (an RBP that is not a frame pointer is data). */
    uintptr_t rbp_slot;
    bool rbp_checked;
    struct sc_entry *e;
};

static void add_check(struct sc_entry *e, uintptr_t slot, uintptr_t val)
{
    e->chk[e->nchecks++] = (struct sc_check){slot, val};
}

__attribute__((no_sanitize_address)) static uintptr_t load_slot(uintptr_t slot)
{
    return *(const uintptr_t *)slot;
}

/* A slot the walk may read and a check may read again: 8 bytes between the capture's rsp and
 * the thread's stack top. */
static bool slot_ok(uintptr_t slot, uintptr_t stack_lo)
{
    return slot >= stack_lo && slot < sct.stack_hi - 8 && !(slot & 7);
}

/* The RBP a frame's CFA is based on: its source (a saved slot or the snapshot's register)
 * joins the checks, once. */
static void use_rbp(struct walk *w)
{
    if (w->rbp_checked)
        return;
    w->rbp_checked = true;
    if (w->rbp_slot) {
        add_check(w->e, w->rbp_slot, w->rbp);
    } else {
        w->e->need_rbp = true;
        w->e->rbp = w->rbp;
    }
}

/* The rule at pc: the memo's, else the CFI reader's (then memoized). */
static bool rule_at(struct stack_cache *sc, uintptr_t pc, struct cfi_rule *out)
{
    struct sc_rule *m = &sc->rules[(pc ^ (pc >> 9)) % SC_RULES];
    if (m->pc != pc) {
        m->ok = cfi_rule_at(pc, &m->rule) == 0;
        m->pc = pc;
    }
    *out = m->rule;
    return m->ok;
}

/* One frame: from its pc and registers, its caller's pc and registers. 1: stepped; 0: the
 * outermost frame (return address undefined); -1: a rule not modelled or a bad address. */
static int walk_step(struct walk *w, bool innermost, uintptr_t stack_lo)
{
    struct cfi_rule rule;
    if (!rule_at(w->sc, innermost ? w->pc : w->pc - 1, &rule))
        return -1;
    if (rule.end)
        return 0;
    if (rule.cfa_base == CFI_CFA_RBP)
        use_rbp(w);
    uintptr_t cfa =
        (rule.cfa_base == CFI_CFA_RBP ? w->rbp : w->rsp) + (uintptr_t)(intptr_t)rule.cfa_off;
    uintptr_t ra_slot = cfa + (uintptr_t)(intptr_t)rule.ra_off;
    uintptr_t rbp_slot = cfa + (uintptr_t)(intptr_t)rule.rbp_off;
    if (cfa <= w->cfa_floor || !slot_ok(cfa, stack_lo) || !slot_ok(ra_slot, stack_lo) ||
        (rule.rbp_saved && !slot_ok(rbp_slot, stack_lo)) || w->e->nchecks + 2 > SC_CHECKS)
        return -1;
    uintptr_t ra = load_slot(ra_slot);
    add_check(w->e, ra_slot, ra);
    if (rule.rbp_saved) {
        w->rbp = load_slot(rbp_slot);
        w->rbp_slot = rbp_slot;
        w->rbp_checked = false;
    }
    w->rsp = w->cfa_floor = cfa;
    w->pc = ra;
    return 1;
}

/* The walk from r matched against raw[0..n): true when it yields exactly that list. */
static bool walk_matches(struct stack_cache *sc, const struct sc_regs *r, void *const *raw, int n,
                         int limit, struct sc_entry *e)
{
    struct walk w = {sc, r->rip, r->rsp, r->rsp, r->rbp, 0, false, e};
    e->nchecks = 0;
    e->need_rbp = false;
    int idx = -1; /* the raw entry the last caller's pc matched */
    for (;;) {
        int s = walk_step(&w, idx < 0, r->rsp);
        if (s < 0)
            return false;
        if (s == 0) /* the outermost frame: libunwind must have stopped there, short of its limit */
            return idx >= 0 && idx == n - 1 && n < limit;
        if (idx < 0) { /* the chain's first pc: after the constant frames into libunwind */
            while (++idx < n && idx <= SC_PREFIX_MAX && (uintptr_t)raw[idx] != w.pc)
                ;
            if (idx >= n || idx > SC_PREFIX_MAX)
                return false;
        } else if (++idx >= n || (uintptr_t)raw[idx] != w.pc) {
            return false;
        }
        if (idx == n - 1 && n == limit)
            return true; /* libunwind stopped at its limit: so does the chain */
    }
}

/* True on the second miss of the stack raw[0..n) at r (seen among the last SC_SEEN first
 * misses): worth a walk. A first one is noted: a stack seen once (a one-off) neither pays the
 * walk nor evicts a chain. */
static bool seen_before(struct stack_cache *sc, const struct sc_regs *r, void *const *raw, int n,
                        int limit)
{
    uint64_t h = (uint64_t)r->rsp * 0x9e3779b97f4a7c15u ^ (uint64_t)limit;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(uintptr_t)raw[i]) * 0x100000001b3u;
    h |= 1; /* 0: an empty slot */
    for (int i = 0; i < SC_SEEN; i++) {
        if (sc->seen[i] == h) {
            sc->seen[i] = 0;
            return true;
        }
    }
    sc->seen[sc->seen_next++ % SC_SEEN] = h;
    return false;
}

/* The [lo, hi) of the mapping in /proc/self/maps that holds addr (read with a fixed buffer,
 * no stdio, no malloc): false when not found. */
static bool mapping_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    static char buf[4096]; /* the first thread's, once: not on its stack (issue 22, item 2) */
    static _Atomic bool buf_busy; /* a signal handler's capture inside the first one's */
    if (atomic_exchange(&buf_busy, true))
        return false;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        atomic_store(&buf_busy, false);
        return false;
    }
    bool found = false;
    size_t have = 0;
    for (;;) {
        ssize_t got = read(fd, buf + have, sizeof buf - have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        have += (size_t)got;
        char *line = buf, *end;
        while ((end = memchr(line, '\n', have - (size_t)(line - buf)))) {
            uintptr_t a = 0, b = 0;
            const char *c = line;
            for (; c < end && *c != '-'; c++)
                a = a * 16 + (uintptr_t)(*c <= '9' ? *c - '0' : (*c | 32) - 'a' + 10);
            for (c++; c < end && *c != ' '; c++)
                b = b * 16 + (uintptr_t)(*c <= '9' ? *c - '0' : (*c | 32) - 'a' + 10);
            if (addr >= a && addr < b) {
                *lo = a;
                *hi = b;
                found = true;
                goto done;
            }
            line = end + 1;
        }
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
        if (have == sizeof buf)
            break; /* a line longer than the buffer: not a maps file we know */
    }
done:
    close(fd);
    atomic_store(&buf_busy, false);
    return found;
}

extern void *__libc_stack_end; /* ld.so's: the first thread's stack pointer at its start */

/* The calling thread's stack, learned once at its first capture (pthread_getattr_np frees
 * what it allocates; a system call or two). The first thread's is its stack's mapping as it
 * is now: it only grows, and a capture below it (a stack grown since) unwinds. */
static void learn_bounds(void)
{
    uintptr_t lo = 0, hi = 0;
    if (syscall(SYS_gettid) == getpid()) {
        if (!mapping_of((uintptr_t)__libc_stack_end, &lo, &hi))
            return; /* tried again at the next capture */
        sct.bounds_tried = true;
    } else {
        sct.bounds_tried = true;
        pthread_attr_t a;
        void *addr;
        size_t size;
        if (pthread_getattr_np(pthread_self(), &a) != 0)
            return;
        bool ok = pthread_attr_getstack(&a, &addr, &size) == 0;
        pthread_attr_destroy(&a);
        if (!ok)
            return;
        lo = (uintptr_t)addr;
        hi = lo + size;
    }
    sct.stack_lo = lo;
    sct.stack_hi = hi;
}

void stack_cache_thread_bounds(void)
{
    if (!sct.bounds_tried)
        learn_bounds();
}

bool stack_cache_room(uintptr_t rsp, size_t bytes)
{
    return !on_own_stack(rsp) || rsp - sct.stack_lo >= bytes;
}

void stack_cache_learn(const struct sc_regs *r, void *const *raw, int n, int limit)
{
    if (n <= 0 || n > STACK_CACHE_FRAMES || sct.exited) {
        sct.stats.uncacheable++;
        return;
    }
    if (!on_own_stack(r->rsp)) { /* a stack the program switched to: always unwound */
        sct.stats.uncacheable++;
        return;
    }
    struct stack_cache *sc = sct.sc ? sct.sc : cache_claim();
    if (!sc) {
        sct.stats.uncacheable++;
        return;
    }
    if (!seen_before(sc, r, raw, n, limit))
        return;
    unsigned gen = atomic_load_explicit(&sc_generation, memory_order_acquire);
    if (sc->rules_gen != gen) { /* a dlclose since: the rules may be of objects gone */
        memset(sc->rules, 0, sizeof sc->rules);
        sc->rules_gen = gen;
    }
    struct sc_entry *e = sc->spare;
    if (!walk_matches(sc, r, raw, n, limit, e)) {
        sct.stats.uncacheable++;
        return;
    }
    e->n = n;
    memcpy(e->raw, raw, (size_t)n * sizeof *raw);
    unsigned i = sc->next++ % SC_ENTRIES;
    sc->spare = sc->slot[i];
    sc->slot[i] = e;
    sc->limit[i] = limit;
    sc->gen[i] = gen;
    sc->key[i] = r->rsp;
}

#else /* not built: every capture unwinds */

void stack_cache_set_enabled(bool on)
{
    (void)on;
}
bool stack_cache_begin(void)
{
    return false;
}
void stack_cache_end(void)
{
}
int stack_cache_find(const struct sc_regs *r, void **raw, int limit)
{
    (void)r, (void)raw, (void)limit;
    return -1;
}
void stack_cache_learn(const struct sc_regs *r, void *const *raw, int n, int limit)
{
    (void)r, (void)raw, (void)n, (void)limit;
}
void stack_cache_thread_exit(void)
{
}
void stack_cache_atfork_child(void)
{
}
void stack_cache_thread_bounds(void)
{
}
bool stack_cache_room(uintptr_t rsp, size_t bytes)
{
    (void)rsp, (void)bytes;
    return true;
}
void stack_cache_forget_all(void)
{
}
void stack_cache_stats(struct stack_cache_stats *out)
{
    *out = (struct stack_cache_stats){0, 0, 0};
}
void stack_cache_stats_exited(struct stack_cache_stats *out)
{
    *out = (struct stack_cache_stats){0, 0, 0};
}

#endif
