/* SPDX-License-Identifier: MIT */
/* POSIX conformance: pthread_barrier_* and pthread_barrierattr_* (one serial
 * thread per cycle over many cycles, count 0, pshared), and pthread_spin_*
 * (init, lock, trylock, unlock, destroy, mutual exclusion under contention).
 *
 * Left out because glibc deviates from POSIX: none known.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>

#include "conform.h"

/* ---- barriers ---- */

enum { PARTIES = 4, CYCLES = 1000 };

struct cycles {
    pthread_barrier_t b;
    atomic_int serial[CYCLES]; /* serial returns seen in each cycle */
    atomic_int others[CYCLES]; /* zero returns seen in each cycle */
};

static void *cycle_many(void *arg)
{
    struct cycles *c = arg;
    for (int i = 0; i < CYCLES; i++) {
        int r = pthread_barrier_wait(&c->b);
        if (r == PTHREAD_BARRIER_SERIAL_THREAD)
            atomic_fetch_add(&c->serial[i], 1);
        else if (r == 0)
            atomic_fetch_add(&c->others[i], 1);
        else
            CHECK_EQ(r, 0);
    }
    return NULL;
}

/* "Upon successful completion, the pthread_barrier_wait() function shall
 * return PTHREAD_BARRIER_SERIAL_THREAD for a single (arbitrary) thread
 * synchronized at the barrier and zero for each of the other threads." The
 * barrier then resets to its initial count, so it is used CYCLES times. */
static void barrier_serial_thread(void)
{
    static struct cycles c;
    pthread_t t[PARTIES];
    for (int i = 0; i < CYCLES; i++) {
        atomic_init(&c.serial[i], 0);
        atomic_init(&c.others[i], 0);
    }
    OK(pthread_barrier_init(&c.b, NULL, PARTIES));
    for (int i = 0; i < PARTIES; i++)
        OK(pthread_create(&t[i], NULL, cycle_many, &c));
    for (int i = 0; i < PARTIES; i++)
        OK(pthread_join(t[i], NULL));
    for (int i = 0; i < CYCLES; i++) {
        CHECK_EQ(atomic_load(&c.serial[i]), 1);
        CHECK_EQ(atomic_load(&c.others[i]), PARTIES - 1);
    }
    OK(pthread_barrier_destroy(&c.b));
}

struct phases {
    pthread_barrier_t b;
    atomic_int arrived;
};

static void *arrive_then_wait(void *arg)
{
    struct phases *p = arg;
    for (int round = 1; round <= 50; round++) {
        atomic_fetch_add(&p->arrived, 1);
        int r = pthread_barrier_wait(&p->b);
        CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
        /* "the calling thread shall block until the required number of
         * threads have called pthread_barrier_wait()" */
        CHECK_EQ(atomic_load(&p->arrived), round * PARTIES);
        r = pthread_barrier_wait(&p->b); /* nobody starts the next round early */
        CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
    }
    return NULL;
}

static void barrier_blocks_until_all_arrive(void)
{
    struct phases p;
    pthread_t t[PARTIES];
    atomic_init(&p.arrived, 0);
    OK(pthread_barrier_init(&p.b, NULL, PARTIES));
    for (int i = 0; i < PARTIES; i++)
        OK(pthread_create(&t[i], NULL, arrive_then_wait, &p));
    for (int i = 0; i < PARTIES; i++)
        OK(pthread_join(t[i], NULL));
    CHECK_EQ(atomic_load(&p.arrived), 50 * PARTIES);
    OK(pthread_barrier_destroy(&p.b));
}

/* A barrier of one: every wait completes at once and is the serial one. */
static void barrier_count_one(void)
{
    pthread_barrier_t b;
    OK(pthread_barrier_init(&b, NULL, 1));
    for (int i = 0; i < 3; i++)
        CHECK_EQ(pthread_barrier_wait(&b), PTHREAD_BARRIER_SERIAL_THREAD);
    OK(pthread_barrier_destroy(&b));
}

/* pthread_barrier_init "shall fail [EINVAL] The value specified by count is
 * equal to zero." */
static void barrier_count_zero(void)
{
    pthread_barrier_t b;
    FAILS(pthread_barrier_init(&b, NULL, 0), EINVAL);
}

static void barrierattr_pshared(void)
{
    pthread_barrierattr_t a;
    pthread_barrier_t b;
    int pshared = -1;
    OK(pthread_barrierattr_init(&a));
    OK(pthread_barrierattr_getpshared(&a, &pshared));
    CHECK_EQ(pshared, PTHREAD_PROCESS_PRIVATE);
    OK(pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
    OK(pthread_barrierattr_getpshared(&a, &pshared));
    CHECK_EQ(pshared, PTHREAD_PROCESS_SHARED);
    OK(pthread_barrier_init(&b, &a, 1));
    CHECK_EQ(pthread_barrier_wait(&b), PTHREAD_BARRIER_SERIAL_THREAD);
    OK(pthread_barrier_destroy(&b));
    OK(pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE));
    OK(pthread_barrierattr_getpshared(&a, &pshared));
    CHECK_EQ(pshared, PTHREAD_PROCESS_PRIVATE);
    OK(pthread_barrierattr_destroy(&a));
}

/* ---- spin locks ---- */

static void *do_spin_trylock(void *l)
{
    int r = pthread_spin_trylock(l);
    if (r == 0)
        OK(pthread_spin_unlock(l));
    return (void *)(intptr_t)r;
}

static int spin_trylock_on_thread(pthread_spinlock_t *l)
{
    pthread_t t;
    void *r;
    OK(pthread_create(&t, NULL, do_spin_trylock, (void *)l)); /* drops volatile */
    OK(pthread_join(t, &r));
    return (int)(intptr_t)r;
}

/* trylock "shall fail [EBUSY] A thread currently holds the lock." */
static void spin_basic(void)
{
    static const int pshared[] = { PTHREAD_PROCESS_PRIVATE, PTHREAD_PROCESS_SHARED };
    for (unsigned i = 0; i < sizeof pshared / sizeof pshared[0]; i++) {
        pthread_spinlock_t l;
        OK(pthread_spin_init(&l, pshared[i]));
        OK(pthread_spin_lock(&l));
        FAILS(spin_trylock_on_thread(&l), EBUSY);
        OK(pthread_spin_unlock(&l));
        OK(spin_trylock_on_thread(&l));
        OK(pthread_spin_trylock(&l));
        FAILS(spin_trylock_on_thread(&l), EBUSY);
        OK(pthread_spin_unlock(&l));
        OK(pthread_spin_destroy(&l));
    }
}

enum { SPINNERS = 4, SPINS = 50000 };

struct spin_counter {
    pthread_spinlock_t l;
    long value; /* guarded by l */
};

static void *spin_increment(void *arg)
{
    struct spin_counter *c = arg;
    for (int i = 0; i < SPINS; i++) {
        OK(pthread_spin_lock(&c->l));
        long v = c->value;
        c->value = v + 1;
        OK(pthread_spin_unlock(&c->l));
    }
    return NULL;
}

static void spin_contention(void)
{
    struct spin_counter c = { .value = 0 };
    pthread_t t[SPINNERS];
    OK(pthread_spin_init(&c.l, PTHREAD_PROCESS_PRIVATE));
    for (int i = 0; i < SPINNERS; i++)
        OK(pthread_create(&t[i], NULL, spin_increment, &c));
    for (int i = 0; i < SPINNERS; i++)
        OK(pthread_join(t[i], NULL));
    CHECK_EQ(c.value, (long)SPINNERS * SPINS);
    OK(pthread_spin_destroy(&c.l));
}

int main(void)
{
    RUN_CASE(barrier_serial_thread, 30);
    RUN_CASE(barrier_blocks_until_all_arrive, 10);
    RUN_CASE(barrier_count_one, 10);
    RUN_CASE(barrier_count_zero, 10);
    RUN_CASE(barrierattr_pshared, 10);
    RUN_CASE(spin_basic, 10);
    RUN_CASE(spin_contention, 30);
    return 0;
}
