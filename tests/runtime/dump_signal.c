/* SPDX-License-Identifier: MIT */
/* The thread dump on demand (runtime/dump_signal.c): with ITO_DUMP_SIGNAL
 * set, the signal prints every thread — a parked one with what it waits on
 * and its backtrace, a running one with its vproc — while every vproc
 * sleeps and while one computes, and the program goes on to end normally.
 * A bad value gets one warning line and no dump. */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "common.h"

static ito_sem_t go;
static _Atomic bool stop;

__attribute__((noinline)) static void *waiter_fn(void *arg)
{
    (void)arg;
    OK(ito_sem_wait(&go));
    return NULL;
}

__attribute__((noinline)) static void *spinner_fn(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        ;
    return NULL;
}

static ito_thread_t spawn_named(const char *name, void *(*fn)(void *))
{
    ito_attr_t at;
    OK(ito_attr_init(&at));
    OK(ito_attr_set_name(&at, name));
    ito_thread_t t;
    OK(ito_spawn(&t, &at, fn, NULL));
    return t;
}

/* The child: a waiter parked for 1.5 s, a spinner for the second half. */
static void child(void)
{
    OK(ito_sem_init(&go, 0));
    ito_thread_t w = spawn_named("waiter", waiter_fn);
    OK(ito_sleep_ns(750 * 1000 * 1000));
    ito_thread_t s = spawn_named("spinner", spinner_fn);
    OK(ito_sleep_ns(750 * 1000 * 1000));
    atomic_store(&stop, true);
    OK(ito_sem_post(&go));
    OK(ito_join(w, NULL));
    OK(ito_join(s, NULL));
    fprintf(stderr, "child: went on\n");
}

static int run(const char *sigenv, int sig, char *err, size_t errlen)
{
    int fd[2];
    CHECK(pipe(fd) == 0);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        setenv("ITO_DUMP_SIGNAL", sigenv, 1);
        char *argv[] = { (char *)"self", (char *)"child", NULL };
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0;
    int sent = 0;
    for (;;) {
        struct pollfd p = { .fd = fd[0], .events = POLLIN };
        int r = poll(&p, 1, 400);
        if (r == 0 && sig && sent < 2) {
            kill(pid, sig);   /* at 0.4 s: all asleep; at 0.8 s: the spinner runs */
            sent++;
            continue;
        }
        char tmp[4096];
        ssize_t k = read(fd[0], tmp, sizeof tmp);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        for (ssize_t i = 0; i < k && n + 1 < errlen; i++)
            err[n++] = tmp[i];
    }
    err[n] = 0;
    close(fd[0]);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    return st;
}

static int count(const char *hay, const char *needle)
{
    int c = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        c++;
    return c;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "child") == 0) {
        child();
        return 0;
    }
    static char err[65536];
    int st = run("SIGUSR2", SIGUSR2, err, sizeof err);
    bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(err, "child: went on") &&
              count(err, "ito: thread dump (SIGUSR2):\n") == 2 && count(err, "ito: end of thread dump") == 2 &&
              count(err, "\"waiter\" blocked on semaphore") == 2 && count(err, "waiter_fn") >= 2 &&
              strstr(err, "\"main\" asleep") && strstr(err, "\"spinner\" running on vproc");
    if (!ok) {
        char sb[128];
        fprintf(stderr, "dump: %s; stderr:\n%s\n", test_status_str(st, sb, sizeof sb), err);
        return 1;
    }
    st = run("SIGNOPE", 0, err, sizeof err);
    ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && count(err, "ignoring ITO_DUMP_SIGNAL='SIGNOPE'") == 1 &&
         !strstr(err, "ito: thread dump (");
    if (!ok) {
        char sb[128];
        fprintf(stderr, "bad value: %s; stderr:\n%s\n", test_status_str(st, sb, sizeof sb), err);
        return 1;
    }
    return 0;
}
