/* SPDX-License-Identifier: MIT */
/* The smallest end-to-end check: spawn, join, a mutex, a sleep. */
#include "common.h"

static ito_mutex_t m = ITO_MUTEX_INIT;
static long counter;

static void *twice(void *a) { return (void *)((intptr_t)a * 2); }

static void *inc(void *a)
{
    long n = (long)(intptr_t)a;
    for (long i = 0; i < n; i++) {
        OK(ito_mutex_lock(&m));
        counter++;
        OK(ito_mutex_unlock(&m));
    }
    return NULL;
}

int main(void)
{
    ito_thread_t t;
    void *r;
    OK(ito_spawn(&t, NULL, twice, (void *)21));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 42);

    long n = test_scaled(100000);
    ito_thread_t ts[8];
    for (int i = 0; i < 8; i++)
        OK(ito_spawn(&ts[i], NULL, inc, (void *)(intptr_t)n));
    for (int i = 0; i < 8; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(counter, 8 * n);

    uint64_t t0 = ito_now_ns();
    OK(ito_sleep_ns(2000000));
    CHECK(ito_now_ns() - t0 >= 2000000);
    return 0;
}
