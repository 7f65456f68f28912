/* SPDX-License-Identifier: MIT */
/* Cancellation: pthread_cancel, pthread_setcancelstate, pthread_setcanceltype,
 * pthread_testcancel, cleanup handlers, and the waits that are cancellation
 * points (each other kind of cancellation point: cancel_points.c).
 *
 * "The cancellation processing in the target thread shall run
 * asynchronously with respect to the calling thread returning from
 * pthread_cancel()." (pthread_cancel) "When a cancellation request is acted
 * upon, [...] the cancellation cleanup handlers shall be called [...] the
 * thread-specific data destructor functions shall be called [...] the
 * thread shall be terminated" and a join of it yields PTHREAD_CANCELED.
 * "A side-effect of acting upon a cancellation request while in a condition
 * wait is that the mutex is (in effect) re-acquired before calling the first
 * cancellation cleanup handler." (pthread_cond_wait) A condition signal that
 * a cancelled waiter could have taken is not lost. Cancellation points are
 * listed in XSH 2.9.5: among them pthread_cond_wait, pthread_cond_timedwait,
 * pthread_join, sem_wait, sem_timedwait, pthread_testcancel, read, nanosleep.
 *
 * No case is left out for a glibc deviation. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "cancel.h"

/* ------------------------------------------------------------- cases */

static void *spin_testcancel(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    atomic_fetch_add(&reached, 1);
    for (;;)
        pthread_testcancel();
    pthread_cleanup_pop(0);
    return NULL;
}

static void testcancel_acts(void)
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, NULL, spin_testcancel, NULL));
    wait_reached(1);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&cleanups), 1);
}

static pthread_key_t key;

static void key_destructor(void *v) { atomic_fetch_add(&destructors, 1); }

static void nested_cleanup(void *arg)
{
    /* Handlers run last pushed first: arg is the order this one must see. */
    CHECK_EQ(atomic_fetch_add(&cleanups, 1), (int)(intptr_t)arg);
}

static void *three_handlers(void *arg)
{
    OK(pthread_setspecific(key, (void *)1));
    pthread_cleanup_push(nested_cleanup, (void *)2);
    pthread_cleanup_push(nested_cleanup, (void *)1);
    pthread_cleanup_push(nested_cleanup, (void *)0);
    atomic_fetch_add(&reached, 1);
    for (;;)
        pthread_testcancel();
    pthread_cleanup_pop(0);
    pthread_cleanup_pop(0);
    pthread_cleanup_pop(0);
    return NULL;
}

static void handlers_then_destructors(void)
{
    reset();
    OK(pthread_key_create(&key, key_destructor));
    pthread_t t;
    OK(pthread_create(&t, NULL, three_handlers, NULL));
    wait_reached(1);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&cleanups), 3);
    CHECK_EQ(atomic_load(&destructors), 1);
    OK(pthread_key_delete(key));
}


static void cond_wait_cancelled_with_mutex(void)
{
    reset();
    struct cv_case c;
    cv_case_init(&c);
    pthread_t t;
    OK(pthread_create(&t, NULL, cond_waiter, &c));
    wait_asleep(&c, 1);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&cleanups), 1);
    OK(pthread_mutex_lock(&c.mu)); /* the handler released it */
    OK(pthread_mutex_unlock(&c.mu));
    cv_case_destroy(&c);
}

static void *timed_cond_waiter(void *arg)
{
    struct cv_case *c = arg;
    OK(pthread_mutex_lock(&c->mu));
    pthread_cleanup_push(unlock_cleanup, &c->mu);
    atomic_fetch_add(&reached, 1);
    struct timespec until = conform_deadline(CLOCK_REALTIME, 60000 * MS);
    while (!c->ready)
        CHECK(pthread_cond_timedwait(&c->cv, &c->mu, &until) != ETIMEDOUT);
    pthread_cleanup_pop(1);
    return NULL;
}

static void cond_timedwait_cancelled(void)
{
    reset();
    struct cv_case c;
    cv_case_init(&c);
    pthread_t t;
    OK(pthread_create(&t, NULL, timed_cond_waiter, &c));
    wait_asleep(&c, 1);
    uint64_t t0 = conform_now(CLOCK_MONOTONIC);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 < 10000 * MS); /* not at the deadline */
    CHECK_EQ(atomic_load(&cleanups), 1);
    cv_case_destroy(&c);
}

/* A cancelled waiter does not swallow a signal: of two waiters, one is
 * cancelled and one signal still wakes the other. */
static void cond_signal_not_lost(void)
{
    reset();
    struct cv_case c;
    cv_case_init(&c);
    pthread_t a, b;
    OK(pthread_create(&a, NULL, cond_waiter, &c));
    OK(pthread_create(&b, NULL, cond_waiter, &c));
    wait_asleep(&c, 2);
    OK(pthread_mutex_lock(&c.mu));
    OK(pthread_cancel(a));
    c.ready = 1;
    OK(pthread_cond_signal(&c.cv));
    OK(pthread_mutex_unlock(&c.mu));
    void *ra, *rb;
    OK(pthread_join(a, &ra));
    if (ra == PTHREAD_CANCELED) {
        OK(pthread_join(b, &rb)); /* the signal went to b */
        CHECK(rb == (void *)1);
    } else {
        CHECK(ra == (void *)1); /* a took the signal before the request acted */
        OK(pthread_cancel(b));
        join_cancelled(b);
    }
    cv_case_destroy(&c);
}

static sem_t sem;

static void *sem_waiter(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    atomic_fetch_add(&reached, 1);
    CHECK_EQ(sem_wait(&sem), 0);
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void sem_wait_cancelled(void)
{
    reset();
    OK(sem_init(&sem, 0, 0));
    pthread_t t;
    OK(pthread_create(&t, NULL, sem_waiter, NULL));
    wait_reached(1);
    pause_ms(10);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&cleanups), 1);
    /* The semaphore is as it was: a post is there for the next waiter. */
    OK(sem_post(&sem));
    OK(sem_trywait(&sem));
    OK(sem_destroy(&sem));
}

static pthread_t join_target;

static void *joiner(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    atomic_fetch_add(&reached, 1);
    OK(pthread_join(join_target, NULL));
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void *wait_sem_then_return(void *arg)
{
    CHECK_EQ(sem_wait(&sem), 0);
    return (void *)7;
}

static void join_cancelled_target_stays_joinable(void)
{
    reset();
    OK(sem_init(&sem, 0, 0));
    OK(pthread_create(&join_target, NULL, wait_sem_then_return, NULL));
    pthread_t j;
    OK(pthread_create(&j, NULL, joiner, NULL));
    wait_reached(1);
    pause_ms(10);
    OK(pthread_cancel(j));
    join_cancelled(j);
    CHECK_EQ(atomic_load(&cleanups), 1);
    OK(sem_post(&sem));
    void *r;
    OK(pthread_join(join_target, &r)); /* "the target thread shall not be detached" */
    CHECK(r == (void *)7);
    OK(sem_destroy(&sem));
}

static int pipe_fds[2];

static void *reader(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    atomic_fetch_add(&reached, 1);
    char c;
    CHECK(read(pipe_fds[0], &c, 1) >= 0);
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void read_cancelled(void)
{
    reset();
    CHECK_EQ(pipe(pipe_fds), 0);
    pthread_t t;
    OK(pthread_create(&t, NULL, reader, NULL));
    wait_reached(1);
    pause_ms(20);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&cleanups), 1);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

static void *sleeper(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    atomic_fetch_add(&reached, 1);
    struct timespec ts = { 60, 0 };
    nanosleep(&ts, NULL);
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void nanosleep_cancelled(void)
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, NULL, sleeper, NULL));
    wait_reached(1);
    pause_ms(20);
    uint64_t t0 = conform_now(CLOCK_MONOTONIC);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 < 10000 * MS);
    CHECK_EQ(atomic_load(&cleanups), 1);
}


static atomic_int disabled_phase;

static void *disables(void *arg)
{
    int old;
    OK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old));
    CHECK_EQ(old, PTHREAD_CANCEL_ENABLE);
    atomic_fetch_add(&reached, 1);
    /* Cancelled now, but disabled: the cancellation points below do not act. */
    while (atomic_load(&disabled_phase) == 0)
        pthread_testcancel();
    CHECK_EQ(sem_wait(&sem), 0); /* posted by the main thread: not interrupted */
    pause_ms(5);
    atomic_store(&disabled_phase, 2);
    OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old));
    CHECK_EQ(old, PTHREAD_CANCEL_DISABLE);
    pthread_testcancel(); /* acts here */
    return (void *)1;
}

static void disabled_then_enabled(void)
{
    reset();
    atomic_store(&disabled_phase, 0);
    OK(sem_init(&sem, 0, 0));
    pthread_t t;
    OK(pthread_create(&t, NULL, disables, NULL));
    wait_reached(1);
    OK(pthread_cancel(t));
    pause_ms(10);
    atomic_store(&disabled_phase, 1);
    pause_ms(10);
    OK(sem_post(&sem));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&disabled_phase), 2);
    OK(sem_destroy(&sem));
}

static volatile unsigned long spin_sink;

static void *async_spinner(void *arg)
{
    int old;
    pthread_cleanup_push(count_cleanup, NULL);
    OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old));
    CHECK_EQ(old, PTHREAD_CANCEL_DEFERRED);
    atomic_fetch_add(&reached, 1);
    for (;;) /* no cancellation point */
        spin_sink++;
    pthread_cleanup_pop(0);
    return NULL;
}

static void asynchronous_compute_loop(void)
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, NULL, async_spinner, NULL));
    wait_reached(1);
    pause_ms(5);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&cleanups), 1);
}

static void *first_thing_testcancel(void *arg)
{
    pthread_testcancel();
    return (void *)1;
}

static void cancelled_before_it_runs(void)
{
    pthread_t t;
    OK(pthread_create(&t, NULL, first_thing_testcancel, NULL));
    OK(pthread_cancel(t));
    void *r;
    OK(pthread_join(t, &r));
    /* It may have passed its only cancellation point before the request. */
    CHECK(r == PTHREAD_CANCELED || r == (void *)1);
}

static void *returns_seven(void *arg) { return (void *)7; }

static void cancel_after_exit(void)
{
    pthread_t t;
    OK(pthread_create(&t, NULL, returns_seven, NULL));
    pause_ms(20);
    OK(pthread_cancel(t)); /* exited, not joined: still a valid ID */
    void *r;
    OK(pthread_join(t, &r));
    CHECK(r == (void *)7);
}

static void *cancels_itself(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    OK(pthread_cancel(pthread_self()));
    atomic_fetch_add(&reached, 1); /* deferred: nothing happens yet */
    pthread_testcancel();
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void self_cancel_deferred(void)
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, NULL, cancels_itself, NULL));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&reached), 1);
    CHECK_EQ(atomic_load(&cleanups), 1);
}

static void bad_arguments(void)
{
    int old;
    FAILS(pthread_setcancelstate(42, &old), EINVAL);
    FAILS(pthread_setcanceltype(42, &old), EINVAL);
    OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL));
    OK(pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL));
}

#define MANY 1000

static void many_cond_waiters(void)
{
    reset();
    struct cv_case c;
    cv_case_init(&c);
    static pthread_t ts[MANY];
    pthread_attr_t a;
    OK(pthread_attr_init(&a));
    OK(pthread_attr_setstacksize(&a, 64 * 1024));
    for (int i = 0; i < MANY; i++)
        OK(pthread_create(&ts[i], &a, cond_waiter, &c));
    OK(pthread_attr_destroy(&a));
    wait_asleep(&c, MANY);
    for (int i = 0; i < MANY; i++)
        OK(pthread_cancel(ts[i]));
    for (int i = 0; i < MANY; i++)
        join_cancelled(ts[i]);
    CHECK_EQ(atomic_load(&cleanups), MANY);
    cv_case_destroy(&c);
}

int main(void)
{
    RUN_CASE(testcancel_acts, 10);
    RUN_CASE(handlers_then_destructors, 10);
    RUN_CASE(cond_wait_cancelled_with_mutex, 10);
    RUN_CASE(cond_timedwait_cancelled, 20);
    RUN_CASE(cond_signal_not_lost, 10);
    RUN_CASE(sem_wait_cancelled, 10);
    RUN_CASE(join_cancelled_target_stays_joinable, 10);
    RUN_CASE(read_cancelled, 10);
    RUN_CASE(nanosleep_cancelled, 20);
    RUN_CASE(disabled_then_enabled, 10);
    RUN_CASE(asynchronous_compute_loop, 10);
    RUN_CASE(cancelled_before_it_runs, 10);
    RUN_CASE(cancel_after_exit, 10);
    RUN_CASE(self_cancel_deferred, 10);
    RUN_CASE(bad_arguments, 10);
    RUN_CASE(many_cond_waiters, 60);
    return 0;
}
