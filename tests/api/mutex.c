/* SPDX-License-Identifier: MIT */
/* Mutex: mutual exclusion, ITO_MUTEX_INIT and all-zero objects, trylock and
 * timedlock, and every error: EDEADLK on relock, EPERM on unlock by a
 * non-owner (ito thread, foreign kernel thread, nobody), EBUSY on destroy
 * while locked or waited on, EINVAL after destroy, ETIMEDOUT, EINVAL for a
 * bad timespec. */
#include <pthread.h>

#include "common.h"

static ito_mutex_t m = ITO_MUTEX_INIT;
static long shared_counter;   /* plain: only the mutex protects it */

static void *hammer(void *a)
{
    long n = (long)(intptr_t)a;
    for (long i = 0; i < n; i++) {
        OK(ito_mutex_lock(&m));
        long v = shared_counter;
        if (i % 64 == 0)
            ito_yield();   /* a switch inside the critical section */
        shared_counter = v + 1;
        OK(ito_mutex_unlock(&m));
    }
    return NULL;
}

static void test_exclusion(void)
{
    enum { N = 8 };
    long per = test_scaled(20000);
    ito_thread_t ts[N];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, hammer, (void *)(intptr_t)per));
    for (int i = 0; i < N; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(shared_counter, N * per);
}

/* ---- errors ---- */

static ito_mutex_t em;
static void *unlock_other(void *a)
{
    return (void *)(intptr_t)ito_mutex_unlock(a);
}
static void *trylock_other(void *a)
{
    return (void *)(intptr_t)ito_mutex_trylock(a);
}
static void *timedlock_other(void *a)
{
    struct timespec ts = test_deadline_in(20000000);
    uint64_t t0 = ito_now_ns();
    int e = ito_mutex_timedlock(a, &ts);
    uint64_t deadline = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (e == ETIMEDOUT)
        CHECK(ito_now_ns() >= deadline);
    CHECK(ito_now_ns() >= t0);
    if (e == 0)
        OK(ito_mutex_unlock(a));
    return (void *)(intptr_t)e;
}

static void *lock_hold_release(void *a)
{
    ito_sem_t *s = a;
    OK(ito_mutex_lock(&em));
    OK(ito_sem_post(&s[0]));   /* locked */
    OK(ito_sem_wait(&s[1]));   /* until told */
    OK(ito_mutex_unlock(&em));
    return NULL;
}

static void *lock_and_count(void *a)
{
    atomic_int *c = a;
    atomic_fetch_add(c, 1);
    OK(ito_mutex_lock(&em));
    atomic_fetch_add(c, 100);
    OK(ito_mutex_unlock(&em));
    return NULL;
}

static void *foreign_unlock(void *a)
{
    return (void *)(intptr_t)ito_mutex_unlock(a);
}

static void test_errors(void)
{
    OK(ito_mutex_init(&em));
    /* Unlocking an unlocked mutex. */
    CHECK_EQ(ito_mutex_unlock(&em), EPERM);
    OK(ito_mutex_lock(&em));
    CHECK_EQ(ito_mutex_lock(&em), EDEADLK);
    CHECK_EQ(ito_mutex_trylock(&em), EBUSY);   /* held, by the caller itself */
    struct timespec soon = test_deadline_in(1000000);
    int e = ito_mutex_timedlock(&em, &soon);
    CHECK(e == EDEADLK || e == ETIMEDOUT);     /* not documented which */
    CHECK_EQ(ito_mutex_destroy(&em), EBUSY);

    /* Another ito thread may not unlock it, nor take it. */
    ito_thread_t t;
    void *r;
    OK(ito_spawn(&t, NULL, unlock_other, &em));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, EPERM);
    OK(ito_spawn(&t, NULL, trylock_other, &em));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, EBUSY);
    OK(ito_spawn(&t, NULL, timedlock_other, &em));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, ETIMEDOUT);
    /* Nor may a foreign kernel thread unlock it. */
    pthread_t p;
    CHECK_EQ(pthread_create(&p, NULL, foreign_unlock, &em), 0);
    CHECK_EQ(pthread_join(p, &r), 0);
    CHECK_EQ((intptr_t)r, EPERM);

    /* Still ours after all that. */
    OK(ito_mutex_unlock(&em));
    CHECK_EQ(ito_mutex_unlock(&em), EPERM);

    /* Held by another thread: the owner can unlock; destroy is EBUSY. */
    ito_sem_t s[2];
    OK(ito_sem_init(&s[0], 0));
    OK(ito_sem_init(&s[1], 0));
    OK(ito_spawn(&t, NULL, lock_hold_release, s));
    OK(ito_sem_wait(&s[0]));
    CHECK_EQ(ito_mutex_unlock(&em), EPERM);
    CHECK_EQ(ito_mutex_trylock(&em), EBUSY);
    CHECK_EQ(ito_mutex_destroy(&em), EBUSY);
    /* Waited on: a thread queued behind the owner. destroy stays EBUSY. */
    atomic_int c = 0;
    ito_thread_t w;
    OK(ito_spawn(&w, NULL, lock_and_count, &c));
    WAIT_UNTIL(atomic_load(&c) == 1, 30);
    ito_sleep_ns(5000000);
    CHECK_EQ(ito_mutex_destroy(&em), EBUSY);
    OK(ito_sem_post(&s[1]));
    OK(ito_join(t, NULL));
    OK(ito_join(w, NULL));
    CHECK_EQ(atomic_load(&c), 101);

    /* Destroyed: every use is EINVAL until it is initialized again. */
    OK(ito_mutex_destroy(&em));
    CHECK_EQ(ito_mutex_lock(&em), EINVAL);
    CHECK_EQ(ito_mutex_trylock(&em), EINVAL);
    CHECK_EQ(ito_mutex_unlock(&em), EINVAL);
    soon = test_deadline_in(1000000);
    CHECK_EQ(ito_mutex_timedlock(&em, &soon), EINVAL);
    CHECK_EQ(ito_mutex_destroy(&em), EINVAL);
    OK(ito_mutex_init(&em));
    OK(ito_mutex_lock(&em));
    OK(ito_mutex_unlock(&em));
    OK(ito_mutex_destroy(&em));
    OK(ito_sem_destroy(&s[0]));
    OK(ito_sem_destroy(&s[1]));

    /* NULL. */
    CHECK_EQ(ito_mutex_init(NULL), EINVAL);
    CHECK_EQ(ito_mutex_lock(NULL), EINVAL);
    CHECK_EQ(ito_mutex_unlock(NULL), EINVAL);
}

static void test_trylock_timedlock(void)
{
    ito_mutex_t tm;
    memset(&tm, 0, sizeof tm);   /* all-zero equals ITO_MUTEX_INIT */
    OK(ito_mutex_trylock(&tm));
    CHECK_EQ(ito_mutex_trylock(&tm), EBUSY);
    OK(ito_mutex_unlock(&tm));

    /* Bad timespecs: EINVAL, whether or not the mutex is free. */
    struct timespec bad[] = { { 0, -1 }, { 0, 1000000000 }, { -1, 0 }, { 5, 2000000000 } };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(ito_mutex_timedlock(&tm, &bad[i]), EINVAL);
    CHECK_EQ(ito_mutex_timedlock(&tm, NULL), EINVAL);
    OK(ito_mutex_trylock(&tm));
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(ito_mutex_timedlock(&tm, &bad[i]), EINVAL);
    OK(ito_mutex_unlock(&tm));

    /* Free: timedlock takes it, even with a deadline in the past. */
    struct timespec past = { 0, 1 };
    OK(ito_mutex_timedlock(&tm, &past));
    OK(ito_mutex_unlock(&tm));
    struct timespec later = test_deadline_in(1000000000);
    OK(ito_mutex_timedlock(&tm, &later));
    OK(ito_mutex_unlock(&tm));

    /* Held elsewhere, deadline passed: ETIMEDOUT at once. */
    ito_thread_t t;
    void *r;
    ito_sem_t s[2];
    OK(ito_sem_init(&s[0], 0));
    OK(ito_sem_init(&s[1], 0));
    OK(ito_mutex_init(&em));
    OK(ito_spawn(&t, NULL, lock_hold_release, s));
    OK(ito_sem_wait(&s[0]));
    CHECK_EQ(ito_mutex_timedlock(&em, &past), ETIMEDOUT);
    /* Held elsewhere, short deadline: ETIMEDOUT no earlier than it. */
    struct timespec dl = test_deadline_in(30000000);
    uint64_t dl_ns = (uint64_t)dl.tv_sec * 1000000000u + (uint64_t)dl.tv_nsec;
    CHECK_EQ(ito_mutex_timedlock(&em, &dl), ETIMEDOUT);
    CHECK(ito_now_ns() >= dl_ns);
    /* Released before the deadline: timedlock gets it. */
    ito_thread_t w;
    OK(ito_spawn(&w, NULL, timedlock_other, &em));   /* 20 ms deadline */
    OK(ito_sem_post(&s[1]));                          /* owner releases now */
    OK(ito_join(t, NULL));
    OK(ito_join(w, &r));
    int e = (int)(intptr_t)r;
    CHECK(e == 0 || e == ETIMEDOUT);   /* 0 unless the machine stalled 20 ms */
    OK(ito_mutex_destroy(&em));
    OK(ito_sem_destroy(&s[0]));
    OK(ito_sem_destroy(&s[1]));
}

int main(void)
{
    test_exclusion();
    test_errors();
    test_trylock_timedlock();
    return 0;
}
