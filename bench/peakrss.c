/* bench/peakrss.c: runs a command and prints its peak RSS (wait4's ru_maxrss, KiB) and exit
 * status on stderr's last line as JSON. A small launcher, because ru_maxrss also counts the
 * forked child before its exec: forked from Python it would start at the interpreter's RSS. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: peakrss COMMAND [ARGS...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        perror("peakrss: exec");
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0)
        return 2;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    fprintf(stderr, "\n{\"peakrss_kib\": %ld, \"status\": %d}\n", ru.ru_maxrss, code);
    return code;
}
