/* SPDX-License-Identifier: MIT */
/* Busy vprocs even their queues out, under every policy: one thread
 * computes on the second vproc, then 9 more are spawned on the first while
 * the second is busy (an idle vproc would steal them; this one is not
 * idle). Each of the 10 gets about a fifth of a vproc — not 9 sharing one
 * while one has the other to itself (prio, affinity and ws once let it be
 * so: only idle vprocs took threads from others). Shares in CPU work units over
 * 2 s of the process's CPU time; the bound says whether balancing works,
 * not how well. */
#include "common.h"

#include <stdatomic.h>

enum { NBAL = 10 };
static atomic_uint_fast64_t work[NBAL];
static atomic_int stop;

static void *busy(void *arg)
{
    int i = (int)(intptr_t)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (volatile int k = 0; k < 1000; k++)
            ;
        atomic_fetch_add_explicit(&work[i], 1, memory_order_relaxed);
    }
    return NULL;
}

static void part_balance(void)
{
    OK(ito_set_priority(ito_self(), ITO_PRIO_MAX));   /* main sleeps, then stops them */
    ito_thread_t t[NBAL];
    OK(ito_spawn(&t[0], NULL, busy, (void *)(intptr_t)0));
    while (!atomic_load(&work[0]))
        ito_sleep_ns(1000000);   /* the second vproc runs it */
    for (int i = 1; i < NBAL; i++)
        OK(ito_spawn(&t[i], NULL, busy, (void *)(intptr_t)i));
    test_sleep_cpu_time(2000);
    atomic_store(&stop, 1);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < NBAL; i++) {
        OK(ito_join(t[i], NULL));
        uint64_t w = atomic_load(&work[i]);
        lo = w < lo ? w : lo;
        hi = w > hi ? w : hi;
    }
    printf("balance (%s): 10 equal threads on 2 vprocs, work least / most: %llu / %llu\n",
           getenv("ITO_POLICY") ? getenv("ITO_POLICY") : "ws", (unsigned long long)lo, (unsigned long long)hi);
    fflush(stdout);
    CHECK(hi < 3 * lo);   /* unbalanced: 9 to 1 */
}

int main(void)
{
    const char *const slices[] = { "ITO_TIMESLICE_US", "1000", NULL };
    test_run_part("balance", "10 threads, 9 spawned beside a busy vproc", part_balance, 2, slices);
    puts("balance: ok");
    return 0;
}
