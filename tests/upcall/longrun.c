/* SPDX-License-Identifier: MIT */
/* Long-running threads (upcall/longrun.c), in child processes: with
 * ITO_LONGRUN_MS=50, a thread that computes for 400 ms without a switch is
 * reported once, with its backtrace through the function that loops (also
 * with time slices off); one that yields all along is not; with
 * ITO_ACTIVATIONS=0 the report comes without a backtrace; a bad value gets
 * one warning line. */
#include "common.h"

/* The frame the backtrace must show. Under ThreadSanitizer, which delivers
 * the signal from its runtime (inside the read of ito_now_ns's clock), the
 * unwinding sometimes stops at ito_now_ns, the function the loop calls. */
static bool looping_frame(const char *err)
{
#if defined(__SANITIZE_THREAD__)
    if (strstr(err, "ito_now_ns"))
        return true;
#endif
    return strstr(err, "compute_long") != NULL;
}

static volatile uint64_t sink;

__attribute__((noinline)) static void *compute_long(void *arg)
{
    (void)arg;
    uint64_t end = ito_now_ns() + 400 * 1000 * 1000;
    while (ito_now_ns() < end)
        sink++;
    return NULL;
}

__attribute__((noinline)) static void *compute_yielding(void *arg)
{
    (void)arg;
    uint64_t end = ito_now_ns() + 400 * 1000 * 1000;
    while (ito_now_ns() < end)
        ito_yield();
    return NULL;
}

static void run_named(void *(*fn)(void *))
{
    OK(ito_join(test_spawn_named("busy", fn), NULL));
}

static int failed;

static void expect(bool ok, const char *what, int st, const char *err)
{
    if (ok)
        return;
    char sb[128];
    fprintf(stderr, "%s: %s; stderr:\n%s\n", what, test_status_str(st, sb, sizeof sb), err);
    failed++;
}

int main(int argc, char **argv)
{
    if (argc == 2) {
        run_named(strcmp(argv[1], "yielding") == 0 ? compute_yielding : compute_long);
        return 0;
    }
    static char err[65536];
    setenv("ITO_LONGRUN_MS", "50", 1);
    int st = test_run_self("long", err, sizeof err);
    expect(WIFEXITED(st) && WEXITSTATUS(st) == 0 && test_count(err, "\"busy\" has run for ") == 1 &&
               strstr(err, "without a switch:\n") && looping_frame(err),
           "long", st, err);
    /* The yielding thread is never reported. (Its joiner, main, may be: a
     * loaded machine can hold main's start, under ASan, past 50 ms without a
     * switch — seen once in make test.) */
    st = test_run_self("yielding", err, sizeof err);
    expect(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !strstr(err, "\"busy\" has run for"), "yielding", st, err);
    setenv("ITO_TIMESLICE_US", "0", 1);   /* the signal still takes the backtrace */
    st = test_run_self("long", err, sizeof err);
    expect(WIFEXITED(st) && WEXITSTATUS(st) == 0 && test_count(err, "\"busy\" has run for ") == 1 &&
               strstr(err, "without a switch:\n") && looping_frame(err),
           "slices off", st, err);
    unsetenv("ITO_TIMESLICE_US");
    setenv("ITO_ACTIVATIONS", "0", 1);   /* no handler: no backtrace */
    st = test_run_self("long", err, sizeof err);
    expect(WIFEXITED(st) && WEXITSTATUS(st) == 0 && test_count(err, "\"busy\" has run for ") == 1 &&
               strstr(err, "(no backtrace: ITO_ACTIVATIONS=0)"),
           "activations off", st, err);
    unsetenv("ITO_ACTIVATIONS");
    setenv("ITO_LONGRUN_MS", "soon", 1);
    st = test_run_self("yielding", err, sizeof err);
    expect(WIFEXITED(st) && WEXITSTATUS(st) == 0 && test_count(err, "ignoring ITO_LONGRUN_MS='soon'") == 1, "bad value",
           st, err);
    CHECK_EQ(failed, 0);
    return 0;
}
