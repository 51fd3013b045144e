/* tests/unit/agent_fixture.h: what the unit tests of the agent's core (test_core.c,
 * test_budget_counts.c, test_counts.c, the fork tests) share: one sync through the entry layer's calls, a
 * child forked to run checks, and a run of the test in a
 * private output folder with no report (the agent reads its configuration in its constructor, so
 * the test executes itself again with it set). */
#ifndef SYNCSPY_TEST_AGENT_FIXTURE_H
#define SYNCSPY_TEST_AGENT_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/process/lifecycle.h"
#include "agent/record/core.h"
#include "entry/start.h"

/* One cudaStreamSynchronize of `blocked` ns at the caller's site. */
__attribute__((noinline, unused)) static void one_sync(uint64_t blocked)
{
    struct agent_call k;
    if (!agent_enter(&k))
        return;
    struct sync_call c = {
        .api = API_cudaStreamSynchronize, .start_ns = 1000, .end_ns = 1000 + blocked};
    agent_sync(&c);
    agent_leave(&k);
    __asm__ volatile("" ::: "memory");
}

/* A child forked to run checks, which _exits with what they return (0: all held); its pid. */
__attribute__((unused)) static pid_t agent_fixture_fork(int (*checks)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(checks());
    return pid;
}

/* Waits for that child: 0 when it exited 0; else its exit status, 1000 + the signal that killed
 * it, or -1 when there is no such child. */
__attribute__((unused)) static int agent_fixture_child_failure(pid_t pid)
{
    int st = 0;
    if (pid <= 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

/* Returns 0 to go on with the tests (SYNCSPY_OUT is set), else executes the test again with a
 * fresh SYNCSPY_OUT under /tmp, SYNCSPY_REPORT=off, no SYNCSPY_SCHEDULE and the variable var set
 * to value (var NULL: none) (1 if that fails). */
static inline int agent_fixture_private_output(char **argv, const char *var, const char *value)
{
    if (getenv("SYNCSPY_OUT")) {
        /* The library starts its entry layer, then the agent, from their constructors
         * (entry/start.c, agent/process/lifecycle.c); a test links the archives, whose start
         * files only these references bring in for a test that calls nothing else of them. */
        entry_start();
        agent_init_once();
        return 0;
    }
    char dir[] = "/tmp/syncspy-test-agent-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    setenv("SYNCSPY_OUT", dir, 1);
    setenv("SYNCSPY_REPORT", "off", 1);
    unsetenv("SYNCSPY_SCHEDULE");
    if (var)
        setenv(var, value, 1);
    execv("/proc/self/exe", argv);
    return 1;
}

#endif
