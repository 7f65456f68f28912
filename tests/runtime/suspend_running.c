/* SPDX-License-Identifier: MIT */
/* ito_suspend of a thread that is ready (spawned, not yet run) or running on
 * another vproc: "when ito_suspend returns, t is not running user code", so
 * its progress counter must not move until ito_resume. Suspensions do not
 * nest. */
#include "common.h"

/* ---- suspend a thread that has not run yet / a running thread ---- */

static atomic_long progress;
static atomic_int stop;
static void *spinner(void *a)
{
    atomic_fetch_add(&progress, 1);
    while (!atomic_load(&stop)) {
        atomic_fetch_add(&progress, 1);
        ito_yield();
    }
    return a;
}

static void check_frozen(ito_thread_t t)
{
    long p0 = atomic_load(&progress);
    ito_sleep_ns(20000000);
    CHECK_EQ(atomic_load(&progress), p0);
    ito_yield();
    CHECK_EQ(atomic_load(&progress), p0);
    (void)t;
}

static void test_suspend_ready_and_running(void)
{
    /* A thread spawned on main's vproc is ready but cannot run before main
     * switches; suspended then, it never runs until resumed. Where it did
     * get to run (another vproc took it), it must at least stop. */
    ito_attr_t a;
    OK(ito_attr_init(&a));
    OK(ito_attr_set_vproc(&a, ito_vproc_self()));
    for (int round = 0; round < 20; round++) {
        atomic_store(&progress, 0);
        atomic_store(&stop, 0);
        ito_thread_t t;
        OK(ito_spawn(&t, &a, spinner, (void *)7));
        OK(ito_suspend(t));
        long p0 = atomic_load(&progress);
        check_frozen(t);
        /* Suspensions do not nest: one resume undoes several suspends. */
        OK(ito_suspend(t));
        OK(ito_suspend(t));
        check_frozen(t);
        CHECK_EQ(atomic_load(&progress), p0);
        OK(ito_resume(t));
        WAIT_UNTIL(atomic_load(&progress) > p0 + 10, 30);
        /* Now it runs, perhaps on another vproc: suspend it while running. */
        OK(ito_suspend(t));
        check_frozen(t);
        OK(ito_resume(t));
        OK(ito_resume(t));   /* not suspended: 0 */
        long p1 = atomic_load(&progress);
        WAIT_UNTIL(atomic_load(&progress) > p1 + 10, 30);
        atomic_store(&stop, 1);
        void *r;
        OK(ito_join(t, &r));
        CHECK_EQ((intptr_t)r, 7);
    }
}

/* Many running spinners on all vprocs, suspended and resumed at once. */
static void test_suspend_many_running(void)
{
    enum { N = 16 };
    atomic_store(&stop, 0);
    ito_thread_t ts[N];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, spinner, NULL));
    for (int round = 0; round < (int)test_scaled(50); round++) {
        for (int i = 0; i < N; i++)
            OK(ito_suspend(ts[i]));
        long p0 = atomic_load(&progress);
        ito_yield();
        CHECK_EQ(atomic_load(&progress), p0);
        for (int i = 0; i < N; i++)
            OK(ito_resume(ts[i]));
        WAIT_UNTIL(atomic_load(&progress) > p0 + N, 30);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < N; i++)
        OK(ito_join(ts[i], NULL));
}

int main(void)
{
    test_suspend_ready_and_running();
    test_suspend_many_running();
    return 0;
}
