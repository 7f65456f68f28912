/* SPDX-License-Identifier: MIT */
/* ito_sleep_ns sleeps at least the time asked, from ito threads (many at
 * once, different lengths) and foreign kernel threads; 0 returns at once.
 * While threads sleep, others run on. No upper bounds: the machine is shared. */
#include <pthread.h>

#include "common.h"

static void *sleeper(void *a)
{
    uint64_t ns = (uint64_t)(intptr_t)a;
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = ito_now_ns();
        struct timespec ts0;
        clock_gettime(CLOCK_MONOTONIC, &ts0);
        OK(ito_sleep_ns(ns));
        uint64_t t1 = ito_now_ns();
        struct timespec ts1;
        clock_gettime(CLOCK_MONOTONIC, &ts1);
        CHECK(t1 - t0 >= ns);
        uint64_t k = (uint64_t)(ts1.tv_sec - ts0.tv_sec) * 1000000000u + (uint64_t)ts1.tv_nsec -
                     (uint64_t)ts0.tv_nsec;
        CHECK(k >= ns);
    }
    return NULL;
}

static atomic_long spins;
static atomic_int stop;
static void *busy(void *a)
{
    while (!atomic_load(&stop)) {
        atomic_fetch_add(&spins, 1);
        ito_yield();
    }
    return NULL;
}

static atomic_int woke_from_forever;
static void *forever(void *a)
{
    ito_sleep_ns((uint64_t)(uintptr_t)a);
    atomic_store(&woke_from_forever, 1);
    return NULL;
}

static void *foreign_sleeper(void *a)
{
    uint64_t t0 = ito_now_ns();
    OK(ito_sleep_ns(3000000));
    CHECK(ito_now_ns() - t0 >= 3000000);
    OK(ito_sleep_ns(0));
    return NULL;
}

int main(void)
{
    /* ito_now_ns is CLOCK_MONOTONIC. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t a = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    uint64_t b = ito_now_ns();
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t c = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    CHECK(a <= b && b <= c);

    OK(ito_sleep_ns(0));
    uint64_t t0 = ito_now_ns();
    OK(ito_sleep_ns(1));
    CHECK(ito_now_ns() - t0 >= 1);

    /* Many sleepers of various lengths at once, with busy threads running
     * beside them. */
    enum { N = 50, NB = 2 };
    ito_thread_t ts_[N], bs[NB];
    for (int i = 0; i < NB; i++)
        OK(ito_spawn(&bs[i], NULL, busy, NULL));
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts_[i], NULL, sleeper, (void *)(intptr_t)(1000 + (i % 10) * 700000)));
    pthread_t p;
    CHECK_EQ(pthread_create(&p, NULL, foreign_sleeper, NULL), 0);
    long s0 = atomic_load(&spins);
    OK(ito_sleep_ns(20000000));
    /* The busy threads go on running while others sleep (not necessarily
     * during these 20 ms: the sleepers' wake-ups may come first). */
    WAIT_UNTIL(atomic_load(&spins) > s0, 60);
    for (int i = 0; i < N; i++)
        OK(ito_join(ts_[i], NULL));
    atomic_store(&stop, 1);
    for (int i = 0; i < NB; i++)
        OK(ito_join(bs[i], NULL));
    CHECK_EQ(pthread_join(p, NULL), 0);

    /* A huge request must not wrap around into a short sleep: the thread is
     * never waited for (returning from main ends the process). */
    ito_attr_t at;
    OK(ito_attr_init(&at));
    OK(ito_attr_set_detached(&at, true));
    OK(ito_spawn(NULL, &at, forever, (void *)(uintptr_t)UINT64_MAX));
    OK(ito_spawn(NULL, &at, forever, (void *)(uintptr_t)(UINT64_MAX - ito_now_ns() + 5)));
    OK(ito_sleep_ns(20000000));
    CHECK_EQ(atomic_load(&woke_from_forever), 0);
    return 0;
}
