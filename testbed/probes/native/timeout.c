/* See timeout.h. */
#include "timeout.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t expired;

static void on_alarm(int sig) {
    (void)sig;
    expired = 1;
}

int timeout_main(int argc, char **argv) {
    if (argc < 2) {
        fputs("usage: tbprobe timeout SECONDS COMMAND [ARG...]\n", stderr);
        return 125;
    }
    char *end;
    long secs = strtol(argv[0], &end, 10);
    if (*end || secs <= 0) {
        fprintf(stderr, "tbprobe timeout: invalid time interval '%s'\n", argv[0]);
        return 125;
    }
    setpgid(0, 0);
    pid_t child = fork();
    if (child < 0) return 125;
    if (child == 0) {
        execvp(argv[1], argv + 1);
        int e = errno;
        fprintf(stderr, "timeout: failed to run command '%s': %s\n", argv[1], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm((unsigned)secs);
    int status;
    for (;;) {
        pid_t r = waitpid(child, &status, 0);
        if (r == child) break;
        if (r < 0 && errno == EINTR && expired) {
            signal(SIGTERM, SIG_IGN);
            kill(child, SIGTERM);
            kill(0, SIGTERM);
            kill(child, SIGCONT);
            while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
            }
            return 124;
        }
        if (r < 0 && errno != EINTR) return 125;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        /* as coreutils: end by the same signal (no core file of our own), else 128 + it */
        int sig = WTERMSIG(status);
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        return 128 + sig;
    }
    return 125;
}
