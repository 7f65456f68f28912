/* SPDX-License-Identifier: MIT */
/* The scheduler trace (api/schedtrace.c), in a child process: with
 * ITO_SCHEDTRACE=50, about one line per 50 ms naming the processors, the
 * threads by state, and each vproc with what it runs and its counts; a bad
 * value gets one warning line and no trace. */
#include "common.h"

static _Atomic bool stop;

/* Computes without calling ito, so that the trace sees it running (a
 * thread that only yields is as often seen ready, between its enqueue and
 * its pick: the check below then failed now and then). Time slices keep main
 * running beside it. */
static void *spin(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        ;
    return NULL;
}

static void child(void)
{
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, spin, NULL));
    OK(ito_sleep_ns(400 * 1000 * 1000));
    atomic_store(&stop, true);
    OK(ito_join(t, NULL));
}

int main(int argc, char **argv)
{
    if (argc == 2) {
        child();
        return 0;
    }
    static char err[65536];
    char sb[128];
    setenv("ITO_SCHEDTRACE", "50", 1);
    setenv("ITO_VPROCS", "2", 1);
    int st = test_run_self("child", err, sizeof err);
    int lines = test_count(err, "ito: schedtrace ");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || lines < 3 ||
        test_count(err, "procs held ") != lines || test_count(err, " | vp0 ") != lines || test_count(err, " | vp1 ") != lines ||
        !strstr(err, " running 1 ") || !(strstr(err, "vp0 run t") || strstr(err, "vp1 run t"))) {
        fprintf(stderr, "trace: %s, %d lines; stderr:\n%s\n", test_status_str(st, sb, sizeof sb), lines, err);
        return 1;
    }
    setenv("ITO_SCHEDTRACE", "abc", 1);
    st = test_run_self("child", err, sizeof err);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || test_count(err, "ignoring ITO_SCHEDTRACE='abc'") != 1 ||
        strstr(err, "ito: schedtrace ")) {
        fprintf(stderr, "bad value: %s; stderr:\n%s\n", test_status_str(st, sb, sizeof sb), err);
        return 1;
    }
    return 0;
}
