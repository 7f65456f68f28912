/* SPDX-License-Identifier: MIT */
/* Crashes name the thread (runtime/crash.c), each case in a fresh process:
 * a bad access, a division by zero and abort() in an ito thread still kill
 * the process with their signal, after a report on stderr naming the thread
 * and the signal, with a backtrace through the program's functions. */
#include <signal.h>

#include "common.h"

static volatile int zero, seven = 7;

__attribute__((noinline)) static void *write_null(void *arg)
{
    (void)arg;
    *(volatile int *)(uintptr_t)zero = 1;
    return NULL;
}

__attribute__((noinline)) static void *divide_by_zero(void *arg)
{
    (void)arg;
    printf("%d\n", seven / zero);
    return NULL;
}

__attribute__((noinline)) static void *call_abort(void *arg)
{
    (void)arg;
    abort();
}

static void run_named(void *(*fn)(void *))
{
    OK(ito_join(test_spawn_named("crasher", fn), NULL));
}

static void case_segv(void) { run_named(write_null); }
static void case_fpe(void) { run_named(divide_by_zero); }
static void case_abort(void) { run_named(call_abort); }

static const struct {
    const char *name;
    void (*fn)(void);
    int sig;
    const char *says, *frame;
} cases[] = {
    { "segv", case_segv, SIGSEGV, "\"crasher\" on vproc", "write_null" },
    { "fpe", case_fpe, SIGFPE, "got FPE (at address", "divide_by_zero" },
    { "abort", case_abort, SIGABRT, "got ABRT:", "call_abort" },
};

int main(int argc, char **argv)
{
    enum { N = sizeof cases / sizeof cases[0] };
    if (argc == 2) {
        for (int i = 0; i < N; i++)
            if (strcmp(argv[1], cases[i].name) == 0) {
                cases[i].fn();
                return 0;
            }
        return 3;
    }
    for (int i = 0; i < N; i++) {
        static char err[16384];
        int st = test_run_self(cases[i].name, err, sizeof err);
        CHECK_DIED_WITH(st, cases[i].sig, err, cases[i].says);
        CHECK_DIED_WITH(st, cases[i].sig, err, cases[i].frame);
        CHECK_DIED_WITH(st, cases[i].sig, err, "ito: thread ");
    }
    return 0;
}
