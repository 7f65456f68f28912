/* SPDX-License-Identifier: MIT */
/* Counting semaphore: counts, trywait (EAGAIN), timedwait (ETIMEDOUT,
 * EINVAL), EOVERFLOW at ITO_SEM_VALUE_MAX, EINVAL above it at init, EBUSY
 * on destroy while waited on, an error after destroy, every post consumed
 * exactly once, and foreign kernel threads posting and waiting. */
#include <pthread.h>

#include "common.h"

static void test_counts(void)
{
    ito_sem_t s;
    unsigned v = 99;
    CHECK_EQ(ito_sem_init(&s, ITO_SEM_VALUE_MAX + 1u), EINVAL);
    CHECK_EQ(ito_sem_init(&s, UINT32_MAX), EINVAL);
    CHECK_EQ(ito_sem_init(NULL, 0), EINVAL);
    OK(ito_sem_init(&s, 3));
    OK(ito_sem_get_value(&s, &v));
    CHECK_EQ(v, 3);
    OK(ito_sem_trywait(&s));
    OK(ito_sem_wait(&s));
    struct timespec dl = test_deadline_in(1000000000);
    OK(ito_sem_timedwait(&s, &dl));
    OK(ito_sem_get_value(&s, &v));
    CHECK_EQ(v, 0);
    CHECK_EQ(ito_sem_trywait(&s), EAGAIN);
    CHECK_EQ(ito_sem_trywait(&s), EAGAIN);
    for (int i = 0; i < 5; i++)
        OK(ito_sem_post(&s));
    OK(ito_sem_get_value(&s, &v));
    CHECK_EQ(v, 5);
    for (int i = 0; i < 5; i++)
        OK(ito_sem_trywait(&s));
    CHECK_EQ(ito_sem_trywait(&s), EAGAIN);

    /* timedwait on zero: ETIMEDOUT no earlier than the deadline. */
    dl = test_deadline_in(20000000);
    uint64_t dl_ns = (uint64_t)dl.tv_sec * 1000000000u + (uint64_t)dl.tv_nsec;
    CHECK_EQ(ito_sem_timedwait(&s, &dl), ETIMEDOUT);
    CHECK(ito_now_ns() >= dl_ns);
    struct timespec past = { 0, 1 };
    CHECK_EQ(ito_sem_timedwait(&s, &past), ETIMEDOUT);
    OK(ito_sem_post(&s));
    OK(ito_sem_timedwait(&s, &past));   /* available: no timeout */
    struct timespec bad[] = { { 0, -1 }, { 0, 1000000000 }, { -1, 0 } };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(ito_sem_timedwait(&s, &bad[i]), EINVAL);
    CHECK_EQ(ito_sem_timedwait(&s, NULL), EINVAL);

    /* EOVERFLOW */
    ito_sem_t big;
    OK(ito_sem_init(&big, ITO_SEM_VALUE_MAX));
    CHECK_EQ(ito_sem_post(&big), EOVERFLOW);
    OK(ito_sem_get_value(&big, &v));
    CHECK_EQ(v, ITO_SEM_VALUE_MAX);
    OK(ito_sem_trywait(&big));
    OK(ito_sem_post(&big));
    CHECK_EQ(ito_sem_post(&big), EOVERFLOW);
    OK(ito_sem_destroy(&big));

    /* Destroyed: the header documents "EINVAL after destroy" for mutexes
     * only; for a semaphore demand an error (no hang, no success). */
    OK(ito_sem_destroy(&s));
    CHECK(ito_sem_post(&s) != 0);
    CHECK(ito_sem_wait(&s) != 0);
    CHECK(ito_sem_trywait(&s) != 0);
    CHECK(ito_sem_get_value(&s, &v) != 0);
    CHECK(ito_sem_destroy(&s) != 0);
    OK(ito_sem_init(&s, 0));
    OK(ito_sem_post(&s));
    OK(ito_sem_wait(&s));
    OK(ito_sem_destroy(&s));
}

/* ---- waiters, EBUSY ---- */

static ito_sem_t ws;
static atomic_int woke;
static void *waiter(void *a)
{
    atomic_fetch_add((atomic_int *)a, 1);
    OK(ito_sem_wait(&ws));
    atomic_fetch_add(&woke, 1);
    return NULL;
}

static void test_waiters(void)
{
    enum { N = 10 };
    OK(ito_sem_init(&ws, 0));
    atomic_int arrived = 0;
    ito_thread_t ts[N];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, waiter, &arrived));
    WAIT_UNTIL(atomic_load(&arrived) == N, 30);
    ito_sleep_ns(10000000);
    CHECK_EQ(atomic_load(&woke), 0);
    CHECK_EQ(ito_sem_destroy(&ws), EBUSY);
    /* Each post wakes exactly one (the count stays 0 while some wait). */
    for (int k = 1; k <= N; k++) {
        OK(ito_sem_post(&ws));
        WAIT_UNTIL(atomic_load(&woke) == k, 30);
        unsigned v;
        OK(ito_sem_get_value(&ws, &v));
        CHECK_EQ(v, 0);
    }
    for (int i = 0; i < N; i++)
        OK(ito_join(ts[i], NULL));
    OK(ito_sem_destroy(&ws));
}

/* ---- many producers and consumers, ito and foreign ---- */

static ito_sem_t items;
static atomic_long consumed_count, produced_count;
static long per_producer;
static atomic_int stop_consumers;

static void produce(void)
{
    for (long i = 0; i < per_producer; i++) {
        OK(ito_sem_post(&items));
        atomic_fetch_add(&produced_count, 1);
        if (i % 32 == 0)
            ito_yield();
    }
}
static void consume(uint64_t seed)
{
    for (;;) {
        int e;
        switch (test_rand(&seed) % 3) {
        case 0:
            e = ito_sem_trywait(&items);
            CHECK(e == 0 || e == EAGAIN);
            if (e)
                ito_yield();
            break;
        case 1: {
            struct timespec dl = test_deadline_in(100000);
            e = ito_sem_timedwait(&items, &dl);
            CHECK(e == 0 || e == ETIMEDOUT);
            break;
        }
        default: {
            /* Blocking wait, but only when something is surely coming. */
            if (atomic_load(&stop_consumers)) {
                e = ito_sem_trywait(&items);
                break;
            }
            struct timespec dl = test_deadline_in(2000000);
            e = ito_sem_timedwait(&items, &dl);
            break;
        }
        }
        if (e == 0)
            atomic_fetch_add(&consumed_count, 1);
        else if (atomic_load(&stop_consumers)) {
            unsigned v;
            OK(ito_sem_get_value(&items, &v));
            if (v == 0)
                return;
        }
    }
}
static void *ito_producer(void *a) { produce(); return NULL; }
static void *ito_consumer(void *a) { consume((uint64_t)(intptr_t)a); return NULL; }
static void *foreign_producer(void *a) { produce(); return NULL; }
static void *foreign_consumer(void *a) { consume((uint64_t)(intptr_t)a); return NULL; }

static void test_prodcons(void)
{
    enum { NP = 4, NC = 4, FP = 1, FC = 1 };
    per_producer = test_scaled(20000);
    OK(ito_sem_init(&items, 0));
    ito_thread_t p[NP], c[NC];
    pthread_t fp[FP], fc[FC];
    for (int i = 0; i < NC; i++)
        OK(ito_spawn(&c[i], NULL, ito_consumer, (void *)(intptr_t)(i + 1)));
    for (int i = 0; i < FC; i++)
        CHECK_EQ(pthread_create(&fc[i], NULL, foreign_consumer, (void *)(intptr_t)(100 + i)), 0);
    for (int i = 0; i < NP; i++)
        OK(ito_spawn(&p[i], NULL, ito_producer, NULL));
    for (int i = 0; i < FP; i++)
        CHECK_EQ(pthread_create(&fp[i], NULL, foreign_producer, NULL), 0);
    for (int i = 0; i < NP; i++)
        OK(ito_join(p[i], NULL));
    for (int i = 0; i < FP; i++)
        CHECK_EQ(pthread_join(fp[i], NULL), 0);
    atomic_store(&stop_consumers, 1);
    for (int i = 0; i < NC; i++)
        OK(ito_join(c[i], NULL));
    for (int i = 0; i < FC; i++)
        CHECK_EQ(pthread_join(fc[i], NULL), 0);
    CHECK_EQ(atomic_load(&produced_count), (NP + FP) * per_producer);
    CHECK_EQ(atomic_load(&consumed_count), (NP + FP) * per_producer);
    unsigned v;
    OK(ito_sem_get_value(&items, &v));
    CHECK_EQ(v, 0);
    OK(ito_sem_destroy(&items));
}

/* A foreign kernel thread blocked in ito_sem_wait, woken by an ito thread,
 * and a foreign timedwait that times out. */
static ito_sem_t fs;
static void *foreign_wait(void *a)
{
    OK(ito_sem_wait(&fs));
    struct timespec dl = test_deadline_in(2000000);
    CHECK_EQ(ito_sem_timedwait(&fs, &dl), ETIMEDOUT);
    return NULL;
}
static void *ito_post(void *a)
{
    ito_sleep_ns(5000000);
    OK(ito_sem_post(&fs));
    return NULL;
}

static void test_foreign_wait(void)
{
    OK(ito_sem_init(&fs, 0));
    pthread_t p;
    ito_thread_t t;
    CHECK_EQ(pthread_create(&p, NULL, foreign_wait, NULL), 0);
    OK(ito_spawn(&t, NULL, ito_post, NULL));
    OK(ito_join(t, NULL));
    CHECK_EQ(pthread_join(p, NULL), 0);
    OK(ito_sem_destroy(&fs));
}

int main(void)
{
    test_counts();
    test_waiters();
    test_prodcons();
    test_foreign_wait();
    return 0;
}
