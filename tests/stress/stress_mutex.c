/* SPDX-License-Identifier: MIT */
/* Stress: 10^7 mutex-protected increments (scaled) by threads spread over
 * every vproc, with an exact final count. The counter is a plain variable:
 * only mutual exclusion keeps the count exact. Some threads use trylock or
 * timedlock, and a few switch while holding the mutex, so that waiters queue
 * and park. */
#include "common.h"

static ito_mutex_t m = ITO_MUTEX_INIT;
static long counter;
static long per_thread;

static void *adder(void *a)
{
    int kind = (int)(intptr_t)a % 4;
    for (long i = 0; i < per_thread; i++) {
        if (kind == 1 && i % 2) {
            int e;
            while ((e = ito_mutex_trylock(&m)) == EBUSY)
                ;
            OK(e);
        } else if (kind == 2 && i % 2) {
            struct timespec dl = test_deadline_in(1000000);
            int e;
            while ((e = ito_mutex_timedlock(&m, &dl)) == ETIMEDOUT)
                dl = test_deadline_in(1000000);
            OK(e);
        } else {
            OK(ito_mutex_lock(&m));
        }
        long v = counter;
        if (kind == 3 && i % 1024 == 0)
            ito_yield();   /* hold it across a switch */
        counter = v + 1;
        OK(ito_mutex_unlock(&m));
    }
    return NULL;
}

int main(void)
{
    int n = 4 * ito_vproc_count();
    if (n < 8)
        n = 8;
    long total = test_scaled(10000000);
    per_thread = total / n;
    ito_thread_t *ts = malloc((size_t)n * sizeof *ts);
    CHECK(ts);
    uint64_t t0 = ito_now_ns();
    for (int i = 0; i < n; i++)
        OK(ito_spawn(&ts[i], NULL, adder, (void *)(intptr_t)i));
    for (int i = 0; i < n; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(counter, per_thread * n);
    printf("stress_mutex: %ld increments by %d threads in %.2f s\n", per_thread * n, n,
           (ito_now_ns() - t0) / 1e9);
    free(ts);
    OK(ito_mutex_destroy(&m));
    return 0;
}
