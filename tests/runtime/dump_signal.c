/* SPDX-License-Identifier: MIT */
/* The thread dump on demand (runtime/dump_signal.c): with ITO_DUMP_SIGNAL
 * set, the signal prints every thread — a parked one with what it waits on
 * and its backtrace, a running one with its vproc — while every vproc
 * sleeps and while one computes, and the program goes on to end normally.
 * A bad value gets one warning line and no dump. */
#include <signal.h>

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

/* The child: a waiter parked for 1.5 s, a spinner for the second half. */
static void child(void)
{
    OK(ito_sem_init(&go, 0));
    ito_thread_t w = test_spawn_named("waiter", waiter_fn);
    OK(ito_sleep_ns(750 * 1000 * 1000));
    ito_thread_t s = test_spawn_named("spinner", spinner_fn);
    OK(ito_sleep_ns(750 * 1000 * 1000));
    atomic_store(&stop, true);
    OK(ito_sem_post(&go));
    OK(ito_join(w, NULL));
    OK(ito_join(s, NULL));
    fprintf(stderr, "child: went on\n");
}

static int sig_to_send, sent;

/* At 0.4 s: all asleep; at 0.8 s: the spinner runs. */
static void send_dump_signal(pid_t pid)
{
    if (sig_to_send && sent < 2) {
        kill(pid, sig_to_send);
        sent++;
    }
}

static int run(const char *sigenv, int sig, char *err, size_t errlen)
{
    setenv("ITO_DUMP_SIGNAL", sigenv, 1);
    sig_to_send = sig;
    sent = 0;
    return test_run_self_watched("child", err, errlen, 0, 400, send_dump_signal);
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
              test_count(err, "ito: thread dump (SIGUSR2):\n") == 2 && test_count(err, "ito: end of thread dump") == 2 &&
              test_count(err, "\"waiter\" blocked on semaphore") == 2 && test_count(err, "waiter_fn") >= 2 &&
              strstr(err, "\"main\" asleep") && strstr(err, "\"spinner\" running on vproc");
    if (!ok) {
        char sb[128];
        fprintf(stderr, "dump: %s; stderr:\n%s\n", test_status_str(st, sb, sizeof sb), err);
        return 1;
    }
    st = run("SIGNOPE", 0, err, sizeof err);
    ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && test_count(err, "ignoring ITO_DUMP_SIGNAL='SIGNOPE'") == 1 &&
         !strstr(err, "ito: thread dump (");
    if (!ok) {
        char sb[128];
        fprintf(stderr, "bad value: %s; stderr:\n%s\n", test_status_str(st, sb, sizeof sb), err);
        return 1;
    }
    return 0;
}
