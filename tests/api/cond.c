/* SPDX-License-Identifier: MIT */
/* Condition variables: EPERM without the mutex, timedwait (ETIMEDOUT with an
 * absolute CLOCK_MONOTONIC deadline, the mutex held again afterwards, EINVAL
 * for a bad timespec), signal wakes one waiter per call, broadcast wakes all,
 * EBUSY on destroy while waited on, foreign kernel threads waiting. */
#include <pthread.h>

#include "common.h"

static ito_mutex_t m = ITO_MUTEX_INIT;
static ito_cond_t c = ITO_COND_INIT;

/* ---- EPERM, timedwait ---- */

static ito_sem_t held, release;
static void *hold_mutex(void *a)
{
    OK(ito_mutex_lock(&m));
    OK(ito_sem_post(&held));
    OK(ito_sem_wait(&release));
    OK(ito_mutex_unlock(&m));
    return NULL;
}

static void test_errors_and_timeouts(void)
{
    /* Not holding the mutex. */
    CHECK_EQ(ito_cond_wait(&c, &m), EPERM);
    struct timespec dl = test_deadline_in(1000000);
    CHECK_EQ(ito_cond_timedwait(&c, &m, &dl), EPERM);
    /* Held by another thread. */
    OK(ito_sem_init(&held, 0));
    OK(ito_sem_init(&release, 0));
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, hold_mutex, NULL));
    OK(ito_sem_wait(&held));
    CHECK_EQ(ito_cond_wait(&c, &m), EPERM);
    CHECK_EQ(ito_cond_timedwait(&c, &m, &dl), EPERM);
    OK(ito_sem_post(&release));
    OK(ito_join(t, NULL));

    /* Timed out: ETIMEDOUT no earlier than the deadline, mutex held again. */
    OK(ito_mutex_lock(&m));
    for (int i = 0; i < 5; i++) {
        uint64_t wait_ns = 1000000ull * (1 + i * 5);
        dl = test_deadline_in(wait_ns);
        uint64_t dl_ns = (uint64_t)dl.tv_sec * 1000000000u + (uint64_t)dl.tv_nsec;
        int e;
        do
            e = ito_cond_timedwait(&c, &m, &dl);   /* spurious wake-ups allowed */
        while (e == 0);
        CHECK_EQ(e, ETIMEDOUT);
        CHECK(ito_now_ns() >= dl_ns);
        CHECK_EQ(ito_mutex_lock(&m), EDEADLK);   /* we own it */
    }
    /* A deadline already past. */
    struct timespec past = { 0, 1 };
    CHECK_EQ(ito_cond_timedwait(&c, &m, &past), ETIMEDOUT);
    CHECK_EQ(ito_mutex_lock(&m), EDEADLK);
    /* Bad timespecs. */
    struct timespec bad[] = { { 0, -1 }, { 0, 1000000000 }, { -1, 0 } };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(ito_cond_timedwait(&c, &m, &bad[i]), EINVAL);
    CHECK_EQ(ito_cond_timedwait(&c, &m, NULL), EINVAL);
    OK(ito_mutex_unlock(&m));
    CHECK_EQ(ito_cond_init(NULL), EINVAL);
    CHECK_EQ(ito_cond_signal(NULL), EINVAL);
    CHECK_EQ(ito_cond_broadcast(NULL), EINVAL);

    /* Signal and broadcast with no waiter: nothing happens. */
    OK(ito_cond_signal(&c));
    OK(ito_cond_broadcast(&c));
    OK(ito_sem_destroy(&held));
    OK(ito_sem_destroy(&release));
}

/* ---- signal wakes one, broadcast wakes all ---- */

enum { NWAITERS = 16 };
static int tokens;         /* m */
static int waiting;        /* m: waiters inside the wait loop */
static int consumed;       /* m */
static bool go_all;        /* m */

static void *consumer(void *a)
{
    OK(ito_mutex_lock(&m));
    waiting++;
    while (tokens == 0)
        OK(ito_cond_wait(&c, &m));
    tokens--;
    consumed++;
    waiting--;
    OK(ito_mutex_unlock(&m));
    return NULL;
}

static void *all_waiter(void *a)
{
    OK(ito_mutex_lock(&m));
    waiting++;
    while (!go_all)
        OK(ito_cond_wait(&c, &m));
    consumed++;
    OK(ito_mutex_unlock(&m));
    return NULL;
}

static int locked_read(int *p)
{
    OK(ito_mutex_lock(&m));
    int v = *p;
    OK(ito_mutex_unlock(&m));
    return v;
}

static void test_signal_broadcast(void)
{
    ito_thread_t ts[NWAITERS];
    for (int i = 0; i < NWAITERS; i++)
        OK(ito_spawn(&ts[i], NULL, consumer, NULL));
    WAIT_UNTIL(locked_read(&waiting) == NWAITERS, 30);
    /* All are queued on c (they queue before releasing m): destroy is EBUSY. */
    CHECK_EQ(ito_cond_destroy(&c), EBUSY);
    for (int k = 1; k <= NWAITERS; k++) {
        OK(ito_mutex_lock(&m));
        tokens++;
        OK(ito_cond_signal(&c));
        OK(ito_mutex_unlock(&m));
        /* That signal must wake one waiter, who takes the token. */
        WAIT_UNTIL(locked_read(&consumed) == k, 30);
        CHECK_EQ(locked_read(&tokens), 0);
    }
    for (int i = 0; i < NWAITERS; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(waiting, 0);

    /* broadcast */
    consumed = 0;
    for (int i = 0; i < NWAITERS; i++)
        OK(ito_spawn(&ts[i], NULL, all_waiter, NULL));
    WAIT_UNTIL(locked_read(&waiting) == NWAITERS, 30);
    CHECK_EQ(ito_cond_destroy(&c), EBUSY);
    OK(ito_mutex_lock(&m));
    go_all = true;
    OK(ito_cond_broadcast(&c));
    OK(ito_mutex_unlock(&m));
    for (int i = 0; i < NWAITERS; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(consumed, NWAITERS);
    OK(ito_cond_destroy(&c));
    /* Destroyed (undocumented beyond EBUSY): an error, never a hang. */
    CHECK(ito_cond_signal(&c) != 0);
    CHECK(ito_cond_broadcast(&c) != 0);
    OK(ito_mutex_lock(&m));
    CHECK(ito_cond_wait(&c, &m) != 0);
    CHECK_EQ(ito_mutex_lock(&m), EDEADLK);   /* still holding m */
    OK(ito_mutex_unlock(&m));
    CHECK(ito_cond_destroy(&c) != 0);
    OK(ito_cond_init(&c));
}

/* ---- a signal is not lost to a waiter that times out ---- */

static int items;   /* m */
static int got;     /* m */
static void *timed_consumer(void *a)
{
    int mine = 0;
    OK(ito_mutex_lock(&m));
    for (;;) {
        while (items == 0 && got < (int)(intptr_t)a) {
            struct timespec dl = test_deadline_in(50000 + (uint64_t)(mine % 7) * 20000);
            int e = ito_cond_timedwait(&c, &m, &dl);
            CHECK(e == 0 || e == ETIMEDOUT);
        }
        if (items == 0)
            break;
        items--;
        got++;
        mine++;
    }
    OK(ito_mutex_unlock(&m));
    return NULL;
}

static void test_signal_vs_timeout(void)
{
    enum { NC = 4 };
    int total = (int)test_scaled(5000);
    items = got = 0;
    ito_thread_t ts[NC];
    for (int i = 0; i < NC; i++)
        OK(ito_spawn(&ts[i], NULL, timed_consumer, (void *)(intptr_t)total));
    uint64_t seed = 7;
    for (int i = 0; i < total; i++) {
        OK(ito_mutex_lock(&m));
        items++;
        OK(ito_cond_signal(&c));
        OK(ito_mutex_unlock(&m));
        if (test_rand(&seed) % 4 == 0)
            ito_sleep_ns(test_rand(&seed) % 100000);
    }
    for (int i = 0; i < NC; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(got, total);
    CHECK_EQ(items, 0);
}

/* ---- foreign kernel threads wait and signal ---- */

static bool foreign_go;   /* m */
static int foreign_woken; /* m */
static void *foreign_waiter(void *a)
{
    OK(ito_mutex_lock(&m));
    waiting++;
    while (!foreign_go)
        OK(ito_cond_wait(&c, &m));
    foreign_woken++;
    /* and a timed wait from a foreign thread */
    struct timespec dl = test_deadline_in(2000000);
    int e;
    do
        e = ito_cond_timedwait(&c, &m, &dl);
    while (e == 0);
    CHECK_EQ(e, ETIMEDOUT);
    OK(ito_mutex_unlock(&m));
    return NULL;
}

static void *ito_waiter_for_foreign(void *a)
{
    OK(ito_mutex_lock(&m));
    waiting++;
    while (!foreign_go)
        OK(ito_cond_wait(&c, &m));
    foreign_woken++;
    OK(ito_mutex_unlock(&m));
    return NULL;
}

static void *foreign_broadcaster(void *a)
{
    OK(ito_mutex_lock(&m));
    foreign_go = true;
    OK(ito_cond_broadcast(&c));
    OK(ito_mutex_unlock(&m));
    return NULL;
}

static void test_foreign(void)
{
    enum { NP = 3, NI = 3 };
    waiting = 0;
    pthread_t ps[NP];
    ito_thread_t is[NI];
    for (int i = 0; i < NP; i++)
        CHECK_EQ(pthread_create(&ps[i], NULL, foreign_waiter, NULL), 0);
    for (int i = 0; i < NI; i++)
        OK(ito_spawn(&is[i], NULL, ito_waiter_for_foreign, NULL));
    WAIT_UNTIL(locked_read(&waiting) == NP + NI, 30);
    CHECK_EQ(ito_cond_destroy(&c), EBUSY);
    pthread_t b;
    CHECK_EQ(pthread_create(&b, NULL, foreign_broadcaster, NULL), 0);
    CHECK_EQ(pthread_join(b, NULL), 0);
    for (int i = 0; i < NP; i++)
        CHECK_EQ(pthread_join(ps[i], NULL), 0);
    for (int i = 0; i < NI; i++)
        OK(ito_join(is[i], NULL));
    CHECK_EQ(foreign_woken, NP + NI);
}

int main(void)
{
    test_errors_and_timeouts();
    test_signal_broadcast();
    test_signal_vs_timeout();
    test_foreign();
    OK(ito_cond_destroy(&c));
    OK(ito_mutex_destroy(&m));
    return 0;
}
