/* SPDX-License-Identifier: MIT */
/* Stack overflow: an ito thread that recurses without bound dies with a
 * clear report — the process is killed by SIGABRT and stderr says the thread
 * "overflowed its stack", gives its name and tells how to raise the size
 * (ITO_STACK_SIZE). Each case runs in a child process (this executable with
 * an argument): default, custom and minimum stack sizes, a thread that
 * switches on the way down, and threads that are joined (by another ito
 * thread, by main) rather than detached; and (test stack_overflow_unguarded)
 * a thread whose stack has no guard page because so many stacks exist that
 * guard pages would exhaust vm.max_map_count. Not under sanitizers: ASan
 * reports overflows itself. */
#include "common.h"

static volatile int sink;

#pragma GCC diagnostic ignored "-Winfinite-recursion"
static int __attribute__((noinline)) recurse(int depth)
{
    volatile char pad[512];
    pad[0] = (char)depth;
    pad[511] = (char)depth;
    int r = recurse(depth + 1) + pad[0] + pad[511];
    sink = r;
    return r;
}

static int __attribute__((noinline)) recurse_switching(int depth)
{
    volatile char pad[1024];
    pad[0] = (char)depth;
    if (depth % 16 == 0)
        ito_yield();
    int r = recurse_switching(depth + 1) + pad[0];
    sink = r;
    return r;
}

/* Switches at every level, so that an overflow of a stack without a guard
 * page is caught when the thread switches out, before it goes far. */
static int __attribute__((noinline)) recurse_yield_each(int depth)
{
    volatile char pad[256];
    pad[0] = (char)depth;
    ito_yield();
    int r = recurse_yield_each(depth + 1) + pad[0];
    sink = r;
    return r;
}

static void *runaway(void *a) { return (void *)(intptr_t)recurse(0); }
static void *runaway_yield_each(void *a) { return (void *)(intptr_t)recurse_yield_each(0); }
static void *runaway_switching(void *a) { return (void *)(intptr_t)recurse_switching(0); }

enum how { DETACHED, JOINED_BY_MAIN, JOINED_BY_THREAD, UNGUARDED };

static void *spin_yield(void *a)
{
    for (;;)
        ito_yield();
    return NULL;
}

static ito_sem_t never;
static atomic_long blocked_started;
static void *block(void *a)
{
    atomic_fetch_add(&blocked_started, 1);
    ito_sem_wait(&never);
    return NULL;
}

static ito_thread_t runaway_t;
static void *joiner(void *a)
{
    ito_join(runaway_t, NULL);
    return NULL;
}

static void spawn_named(const char *name, size_t stack, void *(*fn)(void *), enum how how)
{
    ito_attr_t a;
    OK(ito_attr_init(&a));
    OK(ito_attr_set_name(&a, name));
    if (stack)
        OK(ito_attr_set_stack_size(&a, stack));
    if (how == UNGUARDED) {
        /* Guard pages cost kernel mappings (vm.max_map_count): beyond a
         * quarter of max_map_count stacks, new stacks have none, and an
         * overflow is caught when the thread switches out. Make that many
         * stacks exist (threads that run, then block), then overflow. */
        long max_maps = 65530;
        FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
        if (f) {
            if (fscanf(f, "%ld", &max_maps) != 1)
                max_maps = 65530;
            fclose(f);
        }
        long n = max_maps / 4 + 2048;
        OK(ito_sem_init(&never, 0));
        ito_attr_t b;
        OK(ito_attr_init(&b));
        OK(ito_attr_set_detached(&b, true));
        for (long i = 0; i < n; i++)
            OK(ito_spawn(NULL, &b, block, NULL));

        WAIT_UNTIL(atomic_load(&blocked_started) == n, 60);
        /* The check happens when the thread really switches: give its
         * ito_yield() calls other threads to switch to. */
        for (int i = 0; i < 4 * ito_vproc_count(); i++)
            OK(ito_spawn(NULL, &b, spin_yield, NULL));
        ito_sleep_ns(10000000);
        how = DETACHED;
    }
    if (how == DETACHED) {
        OK(ito_attr_set_detached(&a, true));
        OK(ito_spawn(NULL, &a, fn, NULL));
        ito_sleep_ns(30000000000ull);
    } else if (how == JOINED_BY_MAIN) {
        OK(ito_spawn(&runaway_t, &a, fn, NULL));
        ito_join(runaway_t, NULL);
    } else {
        /* The joiner is detached (main does not join it) and has a large
         * stack: the runaway may run on the joiner's stack (an inline join). */
        OK(ito_spawn(&runaway_t, &a, fn, NULL));
        ito_attr_t ja;
        OK(ito_attr_init(&ja));
        OK(ito_attr_set_detached(&ja, true));
        OK(ito_attr_set_stack_size(&ja, 1 << 20));
        OK(ito_spawn(NULL, &ja, joiner, NULL));
        ito_sleep_ns(30000000000ull);
    }
    fprintf(stderr, "the runaway thread returned\n");
}

static const struct {
    const char *arg;
    const char *thread_name;
    size_t stack;
    void *(*fn)(void *);
    enum how how;
} cases[] = {
    { "default", "runaway-default", 0, runaway, DETACHED },
    { "custom", "runaway-64k", 64 * 1024, runaway, DETACHED },
    { "minimum", "runaway-min", ITO_STACK_MIN, runaway, DETACHED },
    { "switching", "runaway-switching", 0, runaway_switching, DETACHED },
    { "joined_by_thread", "runaway-joined-by-t", 0, runaway, JOINED_BY_THREAD },
    { "joined_by_main", "runaway-joined-by-main", 0, runaway, JOINED_BY_MAIN },
    { "custom_joined_by_main", "runaway-64k-main", 64 * 1024, runaway, JOINED_BY_MAIN },
    { "unguarded", "runaway-unguarded", 0, runaway_yield_each, UNGUARDED },
};

int main(int argc, char **argv)
{
    enum { NCASES = sizeof cases / sizeof cases[0] };
    if (argc == 2) {
        for (int i = 0; i < NCASES; i++)
            if (strcmp(argv[1], cases[i].arg) == 0) {
                spawn_named(cases[i].thread_name, cases[i].stack, cases[i].fn, cases[i].how);
                return 0;
            }
        return 2;
    }
    /* STACK_CASES=unguarded: only the cases of stacks without guard pages,
     * five times (where the stack lies decides what an overflow runs
     * into before it is noticed); otherwise every other case. */
    const char *which = getenv("STACK_CASES");
    bool unguarded_only = which && strcmp(which, "unguarded") == 0;
    int failed = 0;
    for (int i = 0; i < NCASES; i++) for (int rep = 0; rep < (unguarded_only ? 5 : 1); rep++) {
        if ((cases[i].how == UNGUARDED) != unguarded_only)
            continue;
        static char err[16384];
        int st = test_run_self(cases[i].arg, err, sizeof err);
        char sb[128];
        /* The report for a stack without a guard page says "overflowed its
         * <size>-byte stack". */
        const char *needles[] = { cases[i].how == UNGUARDED ? "overflowed its" : "overflowed its stack",
                                  cases[i].thread_name, "ITO_STACK_SIZE" };
        bool ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
        for (int k = 0; k < 3; k++)
            ok = ok && strstr(err, needles[k]);
        if (!ok) {
            fprintf(stderr, "case %s: child %s (expected SIGABRT and a report naming \"%s\"); "
                            "its stderr:\n%s\n", cases[i].arg, test_status_str(st, sb, sizeof sb),
                    cases[i].thread_name, err);
            failed++;
        }
    }
    CHECK_EQ(failed, 0);
    return 0;
}
