/* SPDX-License-Identifier: MIT */
/* Preemption fairness: on one vproc, two threads that loop without ever
 * calling ito and a third ready thread all make progress; a sleeping thread
 * wakes up (its timer is seen at the next switch). With ITO_TIMESLICE_US=0
 * the first busy thread keeps the vproc until it is done. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ito.h>

#include "common.h"

static _Atomic bool stop;
static volatile uint64_t spins[2];
static _Atomic bool third_ran;
static _Atomic uint64_t busy_done_ns, third_ns;

static void *busy(void *arg)
{
    int i = (int)(intptr_t)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        spins[i]++;   /* no ito call: only a time slice can take the vproc */
    return NULL;
}

static void *third(void *arg);
static ito_thread_t third_thread;

/* Make the third thread ready, then stay busy for `ms` of wall time (the
 * "off" variant). */
static void *busy_bounded(void *arg)
{
    OK(ito_spawn(&third_thread, NULL, third, NULL));
    uint64_t end = ito_now_ns() + (uint64_t)(intptr_t)arg * 1000000u;
    while (ito_now_ns() < end)
        spins[0]++;
    atomic_store(&busy_done_ns, ito_now_ns());
    return NULL;
}

static void *third(void *arg)
{
    (void)arg;
    atomic_store(&third_ns, ito_now_ns());
    atomic_store(&third_ran, true);
    return NULL;
}

static void fair(void)
{
    ito_thread_t a, b, c;
    OK(ito_spawn(&a, NULL, busy, (void *)0));
    OK(ito_spawn(&b, NULL, busy, (void *)1));
    OK(ito_spawn(&c, NULL, third, NULL));
    /* main sleeps between its looks: it runs again only when a slice ends
     * (its timer is looked at when the vproc picks). Each round, both busy
     * threads must have advanced (a guard against hangs, not a timing). */
    for (int round = 0; round < 5; round++) {
        uint64_t s0 = spins[0], s1 = spins[1];
        WAIT_UNTIL(spins[0] > s0 && spins[1] > s1 && atomic_load(&third_ran), 60);
    }
    atomic_store(&stop, true);
    OK(ito_join(a, NULL));
    OK(ito_join(b, NULL));
    OK(ito_join(c, NULL));
    ito_stats_t st;
    OK(ito_stats_get(&st));
    CHECK(st.preemptions > 0);
    printf("preempt_fairness: spins %llu / %llu, %llu preemptions, %llu recoveries\n",
           (unsigned long long)spins[0], (unsigned long long)spins[1],
           (unsigned long long)st.preemptions, (unsigned long long)st.recoveries);
}

static void off(void)
{
    ito_thread_t a;
    OK(ito_spawn(&a, NULL, busy_bounded, (void *)(intptr_t)300));
    OK(ito_join(a, NULL));
    OK(ito_join(third_thread, NULL));
    /* Without time slices the third thread ran only after the busy one. */
    CHECK(atomic_load(&third_ns) >= atomic_load(&busy_done_ns));
    ito_stats_t st;
    OK(ito_stats_get(&st));
    CHECK_EQ(st.preemptions, 0);
    printf("preempt_fairness off: the busy thread kept the vproc for 300 ms\n");
}

int main(void)
{
    ito_config_t cfg = ITO_CONFIG_INIT;
    cfg.vprocs = 1;
    OK(ito_init(&cfg));
    const char *slice = getenv("ITO_TIMESLICE_US");
    if (slice && !strcmp(slice, "0"))
        off();
    else
        fair();
    return 0;
}
