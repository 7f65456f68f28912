/* SPDX-License-Identifier: MIT */
/* What the cancellation programs (cancel.c, cancel_points.c) share: a
 * cleanup handler that counts, waiting until the threads got where they
 * block, a join that must yield PTHREAD_CANCELED, and a condition waiter
 * whose cleanup handler gives the (error-checking) mutex back. */
#ifndef ITO_TESTS_POSIX_CANCEL_H
#define ITO_TESTS_POSIX_CANCEL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "conform.h"

#define MS 1000000ull

static atomic_int cleanups, destructors, reached;

static inline void count_cleanup(void *arg) { atomic_fetch_add(&cleanups, 1); }

static inline void reset(void)
{
    atomic_store(&cleanups, 0);
    atomic_store(&destructors, 0);
    atomic_store(&reached, 0);
}

static inline void pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Wait until `reached` is at least n (the threads got to where they block). */
static inline void wait_reached(int n)
{
    uint64_t give_up = conform_now(CLOCK_MONOTONIC) + 5000 * MS;
    while (atomic_load(&reached) < n) {
        CHECK(conform_now(CLOCK_MONOTONIC) < give_up);
        pause_ms(1);
    }
}

static inline void join_cancelled(pthread_t t)
{
    void *r = NULL;
    OK(pthread_join(t, &r));
    CHECK(r == PTHREAD_CANCELED);
}

struct cv_case {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready;
};

static inline void unlock_cleanup(void *arg)
{
    /* An error-checking mutex: unlock succeeds only for its owner. */
    OK(pthread_mutex_unlock(arg));
    atomic_fetch_add(&cleanups, 1);
}

static inline void *cond_waiter(void *arg)
{
    struct cv_case *c = arg;
    OK(pthread_mutex_lock(&c->mu));
    pthread_cleanup_push(unlock_cleanup, &c->mu);
    atomic_fetch_add(&reached, 1);
    while (!c->ready)
        OK(pthread_cond_wait(&c->cv, &c->mu));
    c->ready--;
    pthread_cleanup_pop(1);
    return (void *)1;
}

static inline void cv_case_init(struct cv_case *c)
{
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK));
    OK(pthread_mutex_init(&c->mu, &a));
    OK(pthread_mutexattr_destroy(&a));
    OK(pthread_cond_init(&c->cv, NULL));
    c->ready = 0;
}

static inline void cv_case_destroy(struct cv_case *c)
{
    OK(pthread_cond_destroy(&c->cv));
    OK(pthread_mutex_destroy(&c->mu));
}

/* The waiter is asleep in the wait (it holds no mutex: we can take it). */
static inline void wait_asleep(struct cv_case *c, int n)
{
    wait_reached(n);
    OK(pthread_mutex_lock(&c->mu));
    OK(pthread_mutex_unlock(&c->mu));
    pause_ms(10);
}

#endif
