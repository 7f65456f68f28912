/* SPDX-License-Identifier: MIT */
/* Barrier: exactly one ITO_BARRIER_SERIAL per round over many rounds, nobody
 * leaves a round before everyone arrived, count 1, count 0 (EINVAL), EBUSY
 * on destroy while waited on, EINVAL after destroy, foreign kernel threads
 * among the parties. */
#include <pthread.h>

#include "common.h"

enum { NITO = 7, NFOREIGN = 2, NPARTIES = NITO + NFOREIGN };

static ito_barrier_t b;
static long rounds;
static atomic_int *serials;          /* [rounds] */
static atomic_int *arrivals;         /* [rounds] */

static void run_rounds(void)
{
    for (long r = 0; r < rounds; r++) {
        atomic_fetch_add(&arrivals[r], 1);
        int e = ito_barrier_wait(&b);
        CHECK(e == 0 || e == ITO_BARRIER_SERIAL);
        /* Everyone has arrived at round r before anyone leaves it. */
        CHECK_EQ(atomic_load(&arrivals[r]), NPARTIES);
        if (e == ITO_BARRIER_SERIAL)
            atomic_fetch_add(&serials[r], 1);
        if (r % 8 == 0)
            ito_yield();
    }
}

static void *ito_party(void *a) { run_rounds(); return NULL; }
static void *foreign_party(void *a) { run_rounds(); return NULL; }

static void test_rounds(void)
{
    rounds = test_scaled(2000);
    serials = calloc((size_t)rounds, sizeof *serials);
    arrivals = calloc((size_t)rounds, sizeof *arrivals);
    CHECK(serials && arrivals);
    OK(ito_barrier_init(&b, NPARTIES));
    ito_thread_t ts[NITO];
    pthread_t ps[NFOREIGN];
    for (int i = 0; i < NITO; i++)
        OK(ito_spawn(&ts[i], NULL, ito_party, NULL));
    for (int i = 0; i < NFOREIGN; i++)
        CHECK_EQ(pthread_create(&ps[i], NULL, foreign_party, NULL), 0);
    for (int i = 0; i < NITO; i++)
        OK(ito_join(ts[i], NULL));
    for (int i = 0; i < NFOREIGN; i++)
        CHECK_EQ(pthread_join(ps[i], NULL), 0);
    for (long r = 0; r < rounds; r++) {
        CHECK_EQ(atomic_load(&serials[r]), 1);
        CHECK_EQ(atomic_load(&arrivals[r]), NPARTIES);
    }
    OK(ito_barrier_destroy(&b));
    free(serials);
    free(arrivals);
}

static atomic_int passed;
static void *wait_once(void *a)
{
    int e = ito_barrier_wait(a);
    CHECK(e == 0 || e == ITO_BARRIER_SERIAL);
    atomic_fetch_add(&passed, 1);
    return (void *)(intptr_t)e;
}

static void test_misc(void)
{
    ito_barrier_t x;
    CHECK_EQ(ito_barrier_init(&x, 0), EINVAL);
    CHECK_EQ(ito_barrier_init(NULL, 1), EINVAL);

    /* count 1: every wait is the serial one. */
    OK(ito_barrier_init(&x, 1));
    for (int i = 0; i < 10; i++)
        CHECK_EQ(ito_barrier_wait(&x), ITO_BARRIER_SERIAL);
    OK(ito_barrier_destroy(&x));
    CHECK_EQ(ito_barrier_wait(&x), EINVAL);   /* "or an errno value (EINVAL)" */
    CHECK(ito_barrier_destroy(&x) != 0);

    /* Waited on: EBUSY; then the last party releases it. */
    OK(ito_barrier_init(&x, 3));
    ito_thread_t t1, t2;
    OK(ito_spawn(&t1, NULL, wait_once, &x));
    OK(ito_spawn(&t2, NULL, wait_once, &x));
    ito_sleep_ns(10000000);
    CHECK_EQ(atomic_load(&passed), 0);   /* 2 of 3 arrived at most */
    CHECK_EQ(ito_barrier_destroy(&x), EBUSY);
    int e = ito_barrier_wait(&x);
    CHECK(e == 0 || e == ITO_BARRIER_SERIAL);
    void *r1, *r2;
    OK(ito_join(t1, &r1));
    OK(ito_join(t2, &r2));
    CHECK_EQ(atomic_load(&passed), 2);
    int nserial = (e == ITO_BARRIER_SERIAL) + ((intptr_t)r1 == ITO_BARRIER_SERIAL) +
                  ((intptr_t)r2 == ITO_BARRIER_SERIAL);
    CHECK_EQ(nserial, 1);
    OK(ito_barrier_destroy(&x));

    /* Reinitialized after destroy. */
    OK(ito_barrier_init(&x, 2));
    OK(ito_spawn(&t1, NULL, wait_once, &x));
    e = ito_barrier_wait(&x);
    OK(ito_join(t1, &r1));
    CHECK_EQ((e == ITO_BARRIER_SERIAL) + ((intptr_t)r1 == ITO_BARRIER_SERIAL), 1);
    OK(ito_barrier_destroy(&x));
}

int main(void)
{
    test_misc();
    test_rounds();
    return 0;
}
