/* SPDX-License-Identifier: MIT */
/* A thread suspended while in a timed wait, whose wait then times out, stops
 * without running again; restarted with ito_set_entry, it must not stay linked
 * in the object's queue (the timer unlinks it), or the object, and the next
 * thread to reuse its descriptor, would be corrupted. Once per object kind. */
#include "common.h"

static ito_mutex_t m = ITO_MUTEX_INIT;
static ito_cond_t c = ITO_COND_INIT;
static ito_sem_t s;
static ito_mutex_t held = ITO_MUTEX_INIT;
static atomic_int in_wait;

static void *cond_waiter(void *a)
{
    OK(ito_mutex_lock(&m));
    atomic_store(&in_wait, 1);
    struct timespec ts = test_deadline_in(200000000);   /* long enough to suspend it first */
    ito_cond_timedwait(&c, &m, &ts);
    CHECK(!"the first entry must not run on");
    return a;
}

static void *sem_waiter(void *a)
{
    atomic_store(&in_wait, 1);
    struct timespec ts = test_deadline_in(200000000);   /* long enough to suspend it first */
    ito_sem_timedwait(&s, &ts);
    CHECK(!"the first entry must not run on");
    return a;
}

static void *mutex_waiter(void *a)
{
    atomic_store(&in_wait, 1);
    struct timespec ts = test_deadline_in(200000000);   /* long enough to suspend it first */
    ito_mutex_timedlock(&held, &ts);
    CHECK(!"the first entry must not run on");
    return a;
}

static void *second_entry(void *a) { return (void *)((intptr_t)a + 1); }

static void *sem_taker(void *a)
{
    OK(ito_sem_wait(&s));
    return a;
}

static void restart_while_timing_out(void *(*waiter)(void *))
{
    atomic_store(&in_wait, 0);
    ito_thread_t j;
    void *r;
    OK(ito_spawn(&j, NULL, waiter, NULL));
    WAIT_UNTIL(atomic_load(&in_wait), 10);
    OK(ito_mutex_lock(&m));     /* the cond waiter has parked (it released m) */
    OK(ito_mutex_unlock(&m));
    ito_sleep_ns(100000);
    OK(ito_suspend(j));
    ito_sleep_ns(400000000);    /* the wait times out; the thread stops */
    int e;
    while ((e = ito_set_entry(j, second_entry, (void *)41)) == EBUSY)
        ito_sleep_ns(1000000);
    OK(e);
    OK(ito_resume(j));
    OK(ito_join(j, &r));
    CHECK_EQ((intptr_t)r, 42);
}

int main(void)
{
    OK(ito_sem_init(&s, 0));
    OK(ito_mutex_lock(&held));

    restart_while_timing_out(cond_waiter);
    OK(ito_cond_destroy(&c));   /* nobody waits any more: not EBUSY */
    OK(ito_cond_init(&c));

    restart_while_timing_out(sem_waiter);
    /* The descriptor is reused: its waiter record must be free to queue. */
    ito_thread_t k;
    OK(ito_spawn(&k, NULL, sem_taker, (void *)7));
    ito_sleep_ns(2000000);
    OK(ito_sem_post(&s));
    void *r;
    OK(ito_join(k, &r));
    CHECK_EQ((intptr_t)r, 7);
    unsigned v;
    OK(ito_sem_get_value(&s, &v));
    CHECK_EQ(v, 0);
    OK(ito_sem_destroy(&s));

    restart_while_timing_out(mutex_waiter);
    OK(ito_mutex_unlock(&held));
    OK(ito_mutex_destroy(&held));   /* nobody queued */
    return 0;
}
