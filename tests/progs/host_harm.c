/* tests/progs/host_harm.c: what a program does with its signals, locks, libraries and streams,
 * run with and without the agent by tests/e2e/test_host_harm.py (issue 13), which compares
 * status, output and timing. argv[1] is the case; each prints what it saw and says "ready"
 * (flushed) when the test may send its signal. Every sync is in harm_sync(). */
#include "common.h"
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static void k_short(void) {}
static void k_long(void) {}
static void k_fork(void) {}

__attribute__((noinline)) void harm_sync(const void *kernel)
{
    launch(kernel, 0);
    CHECK(cudaStreamSynchronize(0));
}

static void say(const char *s)
{
    ssize_t n = write(1, s, strlen(s));
    (void)n;
}

static void ready(void)
{
    printf("ready\n");
    fflush(stdout);
}

/* sigaction(sig) with handler h and flags, no mask. */
static void set_handler(int sig, void (*h)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigaction(sig, &sa, NULL);
}

static int ready_then_sync_forever(void)
{
    ready();
    for (;;)
        harm_sync((const void *)k_short);
    return 0;
}

static void steps_of_syncs(int steps)
{
    for (int s = 0; s < steps; s++) {
        harm_sync((const void *)k_short);
        mark_step();
    }
}

/* ---- signal registration ------------------------------------------------------------------ */

static void on_term_note(int sig)
{
    (void)sig;
    say("handler\n");
}

/* read() on a pipe nobody writes, with a SIGTERM handler installed without SA_RESTART before
 * (argv[2] "before") or after the first CUDA call: the signal makes read() fail with EINTR. */
static int read_eintr(const char *when)
{
    if (!strcmp(when, "before"))
        set_handler(SIGTERM, on_term_note, 0);
    steps_of_syncs(3);
    if (strcmp(when, "before"))
        set_handler(SIGTERM, on_term_note, 0);
    int p[2];
    if (pipe(p) != 0)
        return 98;
    ready();
    char c;
    ssize_t n = read(p[0], &c, 1);
    printf("read: %zd %s\n", n, n < 0 ? strerror(errno) : "");
    return 0;
}

/* SA_NODEFER|SA_RESETHAND: the handler raises the signal again (the default action by then) and
 * would _exit(42) if that did not end the process. */
static void on_term_reraise(int sig)
{
    raise(sig);
    _exit(42);
}

static int resethand(void)
{
    steps_of_syncs(3);
    set_handler(SIGTERM, on_term_reraise, SA_NODEFER | SA_RESETHAND);
    return ready_then_sync_forever();
}

/* No CUDA call at all: siginterrupt(SIGALRM, 1), signal(), alarm(1), read(): EINTR. */
static void on_alarm_note(int sig)
{
    (void)sig;
}

static int siginterrupt_read(void)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    siginterrupt(SIGALRM, 1); /* what older programs do; the test is that it still works */
#pragma GCC diagnostic pop
    signal(SIGALRM, on_alarm_note);
    alarm(1);
    int p[2];
    if (pipe(p) != 0)
        return 98;
    char c;
    ssize_t n = read(p[0], &c, 1);
    printf("read: %zd %s\n", n, n < 0 ? strerror(errno) : "");
    return 0;
}

/* A SIGTERM handler that arms alarm(1) as a watchdog and waits; the watchdog _exit(9)s. */
static void on_alarm_exit(int sig)
{
    (void)sig;
    _exit(9);
}

static void on_term_watchdog(int sig)
{
    (void)sig;
    alarm(1);
    for (;;)
        pause();
}

static int watchdog(void)
{
    signal(SIGALRM, on_alarm_exit);
    set_handler(SIGTERM, on_term_watchdog, 0);
    steps_of_syncs(3);
    return ready_then_sync_forever();
}

/* Which of two handlers runs: signal(h1) then, after the first CUDA call, sigaction(h2). */
static void on_term_h1(int sig)
{
    (void)sig;
    say("h1\n");
}

static void on_term_h2(int sig)
{
    (void)sig;
    say("h2\n");
}

static int handler_order(void)
{
    signal(SIGTERM, on_term_h1);
    steps_of_syncs(2);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term_h2;
    sigaction(SIGTERM, &sa, &old);
    printf("old is h1: %d\n", old.sa_handler == on_term_h1);
    raise(SIGTERM);
    /* the default back with signal(): what signal() says was there, and the default action */
    printf("signal() returned h2: %d\n", signal(SIGTERM, SIG_DFL) == on_term_h2);
    fflush(stdout);
    return 0;
}

/* What the program sees of a default disposition after the first CUDA call. */
static int default_view(void)
{
    steps_of_syncs(1);
    struct sigaction old;
    sigaction(SIGTERM, NULL, &old);
    printf("sigaction: default %d, flags %#x\n", old.sa_handler == SIG_DFL, (unsigned)old.sa_flags);
    void (*prev)(int) = signal(SIGINT, on_term_note);
    printf("signal: default %d\n", prev == SIG_DFL);
    prev = signal(SIGINT, SIG_DFL);
    printf("signal again: handler %d\n", prev == on_term_note);
    sigaction(SIGINT, NULL, &old);
    printf("sigaction again: default %d\n", old.sa_handler == SIG_DFL);
    return 0;
}

/* ---- signal deferral ---------------------------------------------------------------------- */

static void on_term_caught(int sig)
{
    (void)sig;
    say("caught\n");
    _exit(7);
}

/* A 20 s kernel, then its cudaStreamSynchronize: the test signals 0.5 s into it. argv[2]
 * "handler": the program's own SIGTERM handler says "caught" and _exit(7)s. */
static int long_sync(const char *how)
{
    if (!strcmp(how, "handler"))
        signal(SIGTERM, on_term_caught);
    steps_of_syncs(3);
    simcuda_set_kernel_ns((const void *)k_long, 20000 * MS);
    launch((const void *)k_long, 0);
    ready();
    CHECK(cudaStreamSynchronize(0));
    printf("sync returned\n");
    return 0;
}

static volatile sig_atomic_t usr1_count;

/* Writes when it ran (CLOCK_MONOTONIC ns, one line) to stdout with write(2): async-signal-safe,
 * and the test's acknowledgment that this signal was handled. */
static void on_usr1_time(int sig)
{
    (void)sig;
    int saved = errno;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    uint64_t ns = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
    char buf[32];
    size_t i = sizeof buf;
    buf[--i] = '\n';
    do {
        buf[--i] = (char)('0' + ns % 10);
        ns /= 10;
    } while (ns && i > 0);
    ssize_t w = write(STDOUT_FILENO, buf + i, sizeof buf - i);
    (void)w;
    usr1_count++;
    errno = saved;
}

/* Until n SIGUSR1s were handled, while the program syncs and marks steps (mostly agent code:
 * where a held signal would wait), each handled one acknowledged on stdout at once. The test
 * sends the next only after the last one's line: standard signals coalesce, so a count of
 * signals sent in a burst is not what arrives. */
static int usr1_latency(int n)
{
    set_handler(SIGUSR1, on_usr1_time, SA_RESTART);
    steps_of_syncs(2);
    ready();
    while (usr1_count < n) {
        harm_sync((const void *)k_short);
        for (int i = 0; i < 200; i++)
            mark_step();
    }
    return 0;
}

static sigjmp_buf watchdog_jmp;
static void on_alarm_jump(int sig)
{
    (void)sig;
    siglongjmp(watchdog_jmp, 1);
}

/* A SIGALRM watchdog (at 200 ms) siglongjmps out of a 1.5 s sync; then 5 syncs (the first waits
 * for the long kernel), and sleeps until killed. */
static int longjmp_out(void)
{
    steps_of_syncs(2);
    signal(SIGALRM, on_alarm_jump);
    simcuda_set_kernel_ns((const void *)k_long, 1500 * MS);
    if (sigsetjmp(watchdog_jmp, 1) == 0) {
        ualarm(200000, 0);
        harm_sync((const void *)k_long);
        printf("not interrupted\n");
        return 1;
    }
    printf("jumped out\n");
    for (int i = 0; i < 5; i++)
        harm_sync((const void *)k_short);
    ready();
    for (;;)
        usleep(10000);
    return 0;
}

/* ---- locks -------------------------------------------------------------------------------- */

static void *step_loop(void *arg)
{
    int type;
    pthread_setcanceltype(*(const int *)arg, &type);
    for (;;) {
        harm_sync((const void *)k_short);
        for (int i = 0; i < 100; i++)
            mark_step();
    }
    return NULL;
}

/* A thread marking steps is cancelled (argv[2]: deferred or async); the process exits. */
static int cancel_steps(const char *how)
{
    steps_of_syncs(1);
    int type = !strcmp(how, "async") ? PTHREAD_CANCEL_ASYNCHRONOUS : PTHREAD_CANCEL_DEFERRED;
    pthread_t t;
    pthread_create(&t, NULL, step_loop, &type);
    usleep(200000);
    pthread_cancel(t);
    pthread_join(t, NULL);
    printf("joined\n");
    return 0;
}

/* A SIGTERM handler that calls exit(3) while the main loop syncs and marks steps. */
static void on_term_exit(int sig)
{
    (void)sig;
    exit(3);
}

static int exit_in_handler(void)
{
    signal(SIGTERM, on_term_exit);
    steps_of_syncs(3);
    ready();
    for (;;) { /* mostly inside syncspy_step(), where the agent takes its step lock */
        harm_sync((const void *)k_short);
        for (int i = 0; i < 5000; i++)
            mark_step();
    }
    return 0;
}

/* ---- lifetimes ---------------------------------------------------------------------------- */

/* Syncs, waits for the flusher, then execs itself (same pid) to sync again. */
static int exec_self(char **argv, const char *again)
{
    steps_of_syncs(!strcmp(again, "again") ? 2 : 3);
    if (!strcmp(again, "again")) {
        printf("second image\n");
        return 0;
    }
    fflush(stdout);
    usleep(300000); /* three flusher ticks */
    char *args[] = {argv[0], "exec", "again", NULL};
    execv("/proc/self/exe", args);
    return 99;
}

/* A forked child syncs 5 times in its first step, waits for the flusher and _exit()s. */
static int exit_child(void)
{
    steps_of_syncs(1);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 5; i++)
            harm_sync((const void *)k_short);
        usleep(300000); /* three flusher ticks */
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("child: %d\n", WEXITSTATUS(st));
    return 0;
}

/* ---- streams ------------------------------------------------------------------------------ */

/* Prints nothing itself: only the agent would write to stdout or stderr. */
static int silent(void)
{
    steps_of_syncs(3);
    return 0;
}

/* 64 sites, each in a function of its own: a report of some 10 KB. */
#define SITE(n)                                                                                 \
    __attribute__((noinline)) static void site_##n(void)                                        \
    {                                                                                           \
        CHECK(cudaStreamSynchronize(0));                                                        \
        __asm__ volatile("" ::: "memory");                                                      \
    }
#define EIGHT(a) SITE(a##0) SITE(a##1) SITE(a##2) SITE(a##3) SITE(a##4) SITE(a##5) SITE(a##6) SITE(a##7)
EIGHT(0) EIGHT(1) EIGHT(2) EIGHT(3) EIGHT(4) EIGHT(5) EIGHT(6) EIGHT(7)
#define CALL8(a) site_##a##0(); site_##a##1(); site_##a##2(); site_##a##3(); site_##a##4(); \
    site_##a##5(); site_##a##6(); site_##a##7();

static int many_sites(void)
{
    CALL8(0) CALL8(1) CALL8(2) CALL8(3) CALL8(4) CALL8(5) CALL8(6) CALL8(7)
    mark_step();
    printf("many sites\n");
    return 0;
}

/* Three functions defined on one line, each a sync (issue 36: `top`'s last-10-s column put all
 * three on one row); ONE_LINE_STEPS steps of one call each, 1 ms apart. */
// clang-format off
__attribute__((noinline)) void line_a(void) { CHECK(cudaStreamSynchronize(0)); } __attribute__((noinline)) void line_b(void) { CHECK(cudaStreamSynchronize(0)); } __attribute__((noinline)) void line_c(void) { CHECK(cudaStreamSynchronize(0)); }
// clang-format on

static int one_line(int steps)
{
    for (int s = 0; s < steps; s++) {
        line_a();
        line_b();
        line_c();
        mark_step();
        usleep(1000);
    }
    printf("one line: %d steps\n", steps);
    return 0;
}

/* 64 new sites and a step mark, then 8 children forked 0.1 ms to 16 ms later while the flusher
 * names them (the first naming reads the program's DWARF): each child syncs 3 times and
 * _exit()s. Prints how many ended with status 0. */
static int fork_busy(void)
{
    pid_t pids[8];
    int ok = 0;
    CALL8(0) CALL8(1) CALL8(2) CALL8(3) CALL8(4) CALL8(5) CALL8(6) CALL8(7)
    mark_step(); /* the flusher wakes now */
    for (int i = 0; i < 8; i++) {
        usleep((useconds_t)(250 << i) / 2);
        pids[i] = fork();
        if (pids[i] == 0) {
            for (int k = 0; k < 3; k++)
                harm_sync((const void *)k_short);
            _exit(0);
        }
    }
    for (int i = 0; i < 8; i++) {
        int st;
        if (pids[i] > 0 && waitpid(pids[i], &st, 0) == pids[i] && WIFEXITED(st) && !WEXITSTATUS(st))
            ok++;
    }
    printf("children ok: %d\n", ok);
    return 0;
}

/* Four threads sync and mark steps and a fifth sets SIGTERM's disposition over and over (every
 * lock of the agent's taken somewhere) while the main thread forks 40 children, 2 ms apart: each
 * child syncs twice on its main thread and twice on a thread of its own, then ends, by _exit or
 * exit() in turn. Prints how many children ended with status 0. */
static _Atomic bool fork_threads_stop;

static void *fork_threads_syncer(void *arg)
{
    (void)arg;
    while (!atomic_load(&fork_threads_stop)) {
        fork_quiet_point();
        harm_sync((const void *)k_fork);
        mark_step();
    }
    fork_quiet_leave();
    return NULL;
}

static void *fork_threads_sigaction(void *arg)
{
    (void)arg;
    while (!atomic_load(&fork_threads_stop)) {
        fork_quiet_point();
        set_handler(SIGTERM, SIG_DFL, 0);
        usleep(100);
    }
    fork_quiet_leave();
    return NULL;
}

static void *fork_threads_child_sync(void *arg)
{
    (void)arg;
    harm_sync((const void *)k_fork);
    harm_sync((const void *)k_fork);
    return NULL;
}

static int fork_threads(void)
{
    /* the simulator registers its fork handlers at its first use: the quiescence's (under ASan),
     * registered after them, runs first and parks the threads before the simulator locks */
    harm_sync((const void *)k_fork);
    fork_quiet_install();
    pthread_t t[5];
    for (int i = 0; i < 5; i++) {
        fork_quiet_enter(); /* counted before it starts: a fork may come first */
        pthread_create(&t[i], NULL, i < 4 ? fork_threads_syncer : fork_threads_sigaction, NULL);
    }
    enum { CHILDREN = 40 };
    pid_t pids[CHILDREN];
    for (int i = 0; i < CHILDREN; i++) {
        usleep(2000);
        fflush(stdout);
        pids[i] = fork();
        if (pids[i] == 0) {
            pthread_t c;
            harm_sync((const void *)k_fork);
            bool ok = pthread_create(&c, NULL, fork_threads_child_sync, NULL) == 0 &&
                      pthread_join(c, NULL) == 0;
            harm_sync((const void *)k_fork);
            if (i % 2)
                exit(ok ? 0 : 1);
            _exit(ok ? 0 : 1);
        }
    }
    int ok = 0;
    for (int i = 0; i < CHILDREN; i++) {
        int st;
        if (pids[i] > 0 && waitpid(pids[i], &st, 0) == pids[i] && WIFEXITED(st) && !WEXITSTATUS(st))
            ok++;
    }
    atomic_store(&fork_threads_stop, true);
    for (int i = 0; i < 5; i++)
        pthread_join(t[i], NULL);
    printf("children ok: %d\n", ok);
    return 0;
}

static int has_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const char *want = arg, *name = strrchr(info->dlpi_name, '/');
    return !strcmp(name ? name + 1 : info->dlpi_name, want);
}

/* Right after the first CUDA call (before any flush): whether libz.so.1 is loaded. The agent's
 * symbolizer needs it later; it must be loaded on the program's thread at the first call, never
 * first by the flusher (a fork during the flusher's dlopen breaks the child's loader). */
static int helpers_loaded(void)
{
    CHECK(cudaStreamSynchronize(0));
    printf("libz loaded: %d\n", dl_iterate_phdr(has_object, (void *)"libz.so.1") != 0);
    return 0;
}

/* cudaMemsetAsync into pinned memory after a 20 ms kernel (the host does not wait: "always
 * asynchronous"), then cudaDeviceReset after another (it waits for the work). Prints the host
 * time each took, in ms. */
static int memset_reset(void)
{
    unsigned char *pinned;
    CHECK(cudaMallocHost((void **)&pinned, 4096));
    simcuda_set_kernel_ns((const void *)k_long, 20 * MS);
    launch((const void *)k_long, 0);
    unsigned long long t0 = simcuda_now_ns();
    CHECK(cudaMemsetAsync(pinned, 1, 4096, 0));
    unsigned long long t1 = simcuda_now_ns();
    CHECK(cudaDeviceSynchronize());
    launch((const void *)k_long, 0);
    unsigned long long t2 = simcuda_now_ns();
    CHECK(cudaDeviceReset());
    unsigned long long t3 = simcuda_now_ns();
    printf("memset async waited 20 ms: %d\n", t1 - t0 >= 19 * MS);
    printf("reset waited 20 ms: %d\n", t3 - t2 >= 19 * MS);
    return 0;
}

/* Another user's move, made here after the agent checked and opened the process folder: the
 * folder is renamed to "moved" and a link to target put in its place, then 3 steps more. The
 * agent's files must land in "moved", never in target. */
static int swap_folder(const char *target)
{
    steps_of_syncs(3);
    const char *out = getenv("SYNCSPY_OUT");
    char dir[4096], moved[4096];
    snprintf(dir, sizeof dir, "%s/pid%d", out ? out : ".", (int)getpid());
    snprintf(moved, sizeof moved, "%s/moved", out ? out : ".");
    if (out && rename(dir, moved) == 0 && symlink(target, dir) == 0)
        say("swapped\n");
    steps_of_syncs(3);
    return 0;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    const char *arg = argc > 2 ? argv[2] : "";
    simcuda_set_kernel_ns((const void *)k_short, 1 * MS);
    simcuda_set_kernel_ns((const void *)k_fork, MS / 20);
    if (!strcmp(c, "read-eintr")) return read_eintr(arg);
    if (!strcmp(c, "resethand")) return resethand();
    if (!strcmp(c, "siginterrupt")) return siginterrupt_read();
    if (!strcmp(c, "watchdog")) return watchdog();
    if (!strcmp(c, "handler-order")) return handler_order();
    if (!strcmp(c, "default-view")) return default_view();
    if (!strcmp(c, "long-sync")) return long_sync(arg);
    if (!strcmp(c, "usr1-latency")) return usr1_latency(atoi(arg));
    if (!strcmp(c, "longjmp")) return longjmp_out();
    if (!strcmp(c, "cancel")) return cancel_steps(arg);
    if (!strcmp(c, "exit-in-handler")) return exit_in_handler();
    if (!strcmp(c, "exec")) return exec_self(argv, arg);
    if (!strcmp(c, "exit-child")) return exit_child();
    if (!strcmp(c, "silent")) return silent();
    if (!strcmp(c, "many-sites")) return many_sites();
    if (!strcmp(c, "one-line")) return one_line(atoi(arg));
    if (!strcmp(c, "fork-busy")) return fork_busy();
    if (!strcmp(c, "fork-threads")) return fork_threads();
    if (!strcmp(c, "memset-reset")) return memset_reset();
    if (!strcmp(c, "helpers-loaded")) return helpers_loaded();
    if (!strcmp(c, "swap-folder")) return swap_folder(arg);
    fprintf(stderr, "host_harm: unknown case '%s'\n", c);
    return 2;
}
