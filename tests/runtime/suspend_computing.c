/* SPDX-License-Identifier: MIT */
/* ito_suspend of a thread that computes on another vproc without calling ito
 * returns, and the thread then makes no progress until ito_resume: it is
 * interrupted (the time-slice signal), also with time slices off
 * (ITO_TIMESLICE_US=0, the second registration), where it used to wait for
 * ever. Rounds of suspend, check, resume. */
#include "common.h"

static atomic_long progress;
static atomic_int stop;

static void *computing(void *arg)
{
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);   /* no ito call */
    return arg;
}

int main(void)
{
    ito_config_t c = ITO_CONFIG_INIT;
    c.vprocs = 2;
    OK(ito_init(&c));
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, computing, (void *)5));
    for (int round = 0; round < (int)test_scaled(20); round++) {
        long p0 = atomic_load(&progress);
        WAIT_UNTIL(atomic_load(&progress) > p0 + 1000, 30);   /* it runs */
        OK(ito_suspend(t));
        long p1 = atomic_load(&progress);
        OK(ito_sleep_ns(5000000));
        CHECK_EQ(atomic_load(&progress), p1);
        OK(ito_resume(t));
    }
    atomic_store(&stop, 1);
    void *r;
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 5);
    printf("suspend_computing: %d rounds\n", (int)test_scaled(20));
    return 0;
}
