/* SPDX-License-Identifier: MIT */
/* Foreign kernel threads (pthreads that ito did not create) mixed with ito
 * threads: they lock ito mutexes against ito threads (exact count), wait on
 * ito conditions, post and wait on semaphores, spawn ito threads (joinable
 * and detached), join ito threads, and touch futures — all at once. */
#include <pthread.h>

#include "common.h"

enum { NPTHREADS = 4, NITO = 8 };

static ito_mutex_t m = ITO_MUTEX_INIT;
static long counter;   /* m */
static long per_thread;

static void add_many(void)
{
    for (long i = 0; i < per_thread; i++) {
        if (i % 3 == 0) {
            int e;
            while ((e = ito_mutex_trylock(&m)) == EBUSY)
                ito_yield();
            OK(e);
        } else if (i % 3 == 1) {
            struct timespec dl = test_deadline_in(5000000);
            int e;
            while ((e = ito_mutex_timedlock(&m, &dl)) == ETIMEDOUT)
                dl = test_deadline_in(5000000);
            OK(e);
        } else {
            OK(ito_mutex_lock(&m));
        }
        counter++;
        OK(ito_mutex_unlock(&m));
    }
}

static void *ito_adder(void *a) { add_many(); return NULL; }

/* ---- ping-pong between a pthread and an ito thread over a condition ---- */

static ito_cond_t c = ITO_COND_INIT;
static long turn;   /* m: even: the pthread's turn, odd: the ito thread's */
static long rounds;

static void *ito_ponger(void *a)
{
    OK(ito_mutex_lock(&m));
    while (turn < 2 * rounds) {
        while (turn % 2 == 0)
            OK(ito_cond_wait(&c, &m));
        turn++;
        OK(ito_cond_signal(&c));
    }
    OK(ito_mutex_unlock(&m));
    return NULL;
}

/* ---- semaphores both ways ---- */

static ito_sem_t to_ito, to_foreign;
static void *ito_echo(void *a)
{
    for (long i = 0; i < rounds; i++) {
        OK(ito_sem_wait(&to_ito));
        OK(ito_sem_post(&to_foreign));
    }
    return NULL;
}

static void *child_fn(void *a) { ito_yield(); return (void *)((intptr_t)a + 1); }

static atomic_int detached_from_foreign;
static void *detached_fn(void *a)
{
    ito_sleep_ns(1000);
    atomic_fetch_add(&detached_from_foreign, 1);
    return NULL;
}

static ito_future_t fut;
static ito_thread_t joinable_by_foreign[NPTHREADS];

static void *foreign_main(void *arg)
{
    int id = (int)(intptr_t)arg;
    CHECK(ito_thread_equal(ito_self(), ITO_THREAD_NULL));
    CHECK_EQ(ito_vproc_self(), -1);

    /* Spawn ito threads, join them. */
    ito_thread_t kids[16];
    for (int i = 0; i < 16; i++)
        OK(ito_spawn(&kids[i], NULL, child_fn, (void *)(intptr_t)i));
    for (int i = 0; i < 16; i++) {
        void *r;
        OK(ito_join(kids[i], &r));
        CHECK_EQ((intptr_t)r, i + 1);
    }
    /* Detached, without a handle. */
    ito_attr_t at;
    OK(ito_attr_init(&at));
    OK(ito_attr_set_detached(&at, true));
    for (int i = 0; i < 10; i++)
        OK(ito_spawn(NULL, &at, detached_fn, NULL));
    /* Join an ito thread that main spawned. */
    void *r;
    OK(ito_join(joinable_by_foreign[id], &r));
    CHECK_EQ((intptr_t)r, 100 + id + 1);
    /* Touch a future. */
    OK(ito_future_touch(fut, &r));
    CHECK_EQ((intptr_t)r, 8);
    /* Contend on the mutex. */
    add_many();
    return NULL;
}

static void *foreign_pinger(void *a)
{
    OK(ito_mutex_lock(&m));
    while (turn < 2 * rounds) {
        while (turn % 2 == 1)
            OK(ito_cond_wait(&c, &m));
        if (turn >= 2 * rounds)
            break;
        turn++;
        OK(ito_cond_signal(&c));
    }
    OK(ito_mutex_unlock(&m));
    return NULL;
}

static void *foreign_sem_driver(void *a)
{
    for (long i = 0; i < rounds; i++) {
        OK(ito_sem_post(&to_ito));
        OK(ito_sem_wait(&to_foreign));
    }
    return NULL;
}

static void *slow_future(void *a)
{
    ito_sleep_ns(5000000);
    return (void *)8;
}

int main(void)
{
    per_thread = test_scaled(20000);
    rounds = test_scaled(5000);
    OK(ito_sem_init(&to_ito, 0));
    OK(ito_sem_init(&to_foreign, 0));
    OK(ito_future_spawn(&fut, NULL, slow_future, NULL));
    for (int i = 0; i < NPTHREADS; i++)
        OK(ito_spawn(&joinable_by_foreign[i], NULL, child_fn, (void *)(intptr_t)(100 + i)));

    pthread_t ps[NPTHREADS], pinger, driver;
    ito_thread_t adders[NITO], ponger, echo;
    for (int i = 0; i < NPTHREADS; i++)
        CHECK_EQ(pthread_create(&ps[i], NULL, foreign_main, (void *)(intptr_t)i), 0);
    CHECK_EQ(pthread_create(&pinger, NULL, foreign_pinger, NULL), 0);
    CHECK_EQ(pthread_create(&driver, NULL, foreign_sem_driver, NULL), 0);
    for (int i = 0; i < NITO; i++)
        OK(ito_spawn(&adders[i], NULL, ito_adder, NULL));
    OK(ito_spawn(&ponger, NULL, ito_ponger, NULL));
    OK(ito_spawn(&echo, NULL, ito_echo, NULL));

    for (int i = 0; i < NITO; i++)
        OK(ito_join(adders[i], NULL));
    OK(ito_join(ponger, NULL));
    OK(ito_join(echo, NULL));
    for (int i = 0; i < NPTHREADS; i++)
        CHECK_EQ(pthread_join(ps[i], NULL), 0);
    CHECK_EQ(pthread_join(pinger, NULL), 0);
    CHECK_EQ(pthread_join(driver, NULL), 0);

    CHECK_EQ(counter, (NITO + NPTHREADS) * per_thread);
    CHECK_EQ(turn, 2 * rounds);
    WAIT_UNTIL(atomic_load(&detached_from_foreign) == 10 * NPTHREADS, 30);
    unsigned v;
    OK(ito_sem_get_value(&to_ito, &v));
    CHECK_EQ(v, 0);
    OK(ito_sem_get_value(&to_foreign, &v));
    CHECK_EQ(v, 0);
    OK(ito_future_destroy(fut));
    return 0;
}
