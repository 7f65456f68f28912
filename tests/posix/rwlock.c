/* SPDX-License-Identifier: MIT */
/* POSIX conformance: pthread_rwlock_* and pthread_rwlockattr_*. Readers
 * sharing the lock, writer exclusion, try, timed and clock variants, EDEADLK
 * for the write holder, the attribute getters and setters (kind, pshared),
 * and the writer-preferring kind keeping new readers out while a writer
 * waits.
 *
 * Left out because glibc deviates from POSIX: none known.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>

#include "conform.h"

static void *do_tryrdlock(void *l)
{
    int r = pthread_rwlock_tryrdlock(l);
    if (r == 0)
        OK(pthread_rwlock_unlock(l));
    return (void *)(intptr_t)r;
}

static void *do_trywrlock(void *l)
{
    int r = pthread_rwlock_trywrlock(l);
    if (r == 0)
        OK(pthread_rwlock_unlock(l));
    return (void *)(intptr_t)r;
}

/* ---- sharing and exclusion ---- */

enum { READERS = 4 };

struct shared_read {
    pthread_rwlock_t l;
    pthread_barrier_t inside;
};

static void *reader_meets_others(void *arg)
{
    struct shared_read *s = arg;
    OK(pthread_rwlock_rdlock(&s->l));
    /* Every reader holds the read lock here at once, or none gets past. */
    int r = pthread_barrier_wait(&s->inside);
    CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
    OK(pthread_rwlock_unlock(&s->l));
    return NULL;
}

/* "The calling thread acquires the read lock if a writer does not hold the
 * lock and there are no writers blocked on the lock." */
static void readers_share(void)
{
    struct shared_read s;
    pthread_t t[READERS];
    OK(pthread_rwlock_init(&s.l, NULL));
    OK(pthread_barrier_init(&s.inside, NULL, READERS));
    for (int i = 0; i < READERS; i++)
        OK(pthread_create(&t[i], NULL, reader_meets_others, &s));
    for (int i = 0; i < READERS; i++)
        OK(pthread_join(t[i], NULL));
    OK(pthread_barrier_destroy(&s.inside));
    OK(pthread_rwlock_destroy(&s.l));
}

/* "A thread may hold multiple concurrent read locks on rwlock ... the
 * application shall ensure that the thread performs matching unlocks". */
static void read_lock_held_twice(void)
{
    pthread_rwlock_t l;
    OK(pthread_rwlock_init(&l, NULL));
    OK(pthread_rwlock_rdlock(&l));
    OK(pthread_rwlock_rdlock(&l));
    OK(pthread_rwlock_unlock(&l));
    FAILS(on_thread(do_trywrlock, &l), EBUSY);
    OK(pthread_rwlock_unlock(&l));
    OK(on_thread(do_trywrlock, &l));
    OK(pthread_rwlock_destroy(&l));
}

enum { WRITERS = 4, WRITES = 20000, CHECKERS = 2 };

struct pair {
    pthread_rwlock_t l;
    long a, b; /* written together under the write lock */
    int writers_left;
};

static void *writer(void *arg)
{
    struct pair *p = arg;
    for (int i = 0; i < WRITES; i++) {
        OK(pthread_rwlock_wrlock(&p->l));
        long a = p->a;
        p->a = a + 1;
        p->b = p->b + 1;
        OK(pthread_rwlock_unlock(&p->l));
    }
    OK(pthread_rwlock_wrlock(&p->l));
    p->writers_left--;
    OK(pthread_rwlock_unlock(&p->l));
    return NULL;
}

static void *checker(void *arg)
{
    struct pair *p = arg;
    for (;;) {
        OK(pthread_rwlock_rdlock(&p->l));
        CHECK_EQ(p->a, p->b); /* a reader never sees a write half done */
        int done = p->writers_left == 0;
        OK(pthread_rwlock_unlock(&p->l));
        if (done)
            return NULL;
        usleep(100); /* leave gaps: the default kind lets readers starve writers */
    }
}

static void writers_exclusive(void)
{
    struct pair p = { .a = 0, .b = 0, .writers_left = WRITERS };
    pthread_t w[WRITERS], c[CHECKERS];
    OK(pthread_rwlock_init(&p.l, NULL));
    for (int i = 0; i < CHECKERS; i++)
        OK(pthread_create(&c[i], NULL, checker, &p));
    for (int i = 0; i < WRITERS; i++)
        OK(pthread_create(&w[i], NULL, writer, &p));
    for (int i = 0; i < WRITERS; i++)
        OK(pthread_join(w[i], NULL));
    for (int i = 0; i < CHECKERS; i++)
        OK(pthread_join(c[i], NULL));
    CHECK_EQ(p.a, (long)WRITERS * WRITES);
    CHECK_EQ(p.b, (long)WRITERS * WRITES);
    OK(pthread_rwlock_destroy(&p.l));
}

/* ---- try variants ---- */

/* tryrdlock "shall fail [EBUSY] The read-write lock could not be acquired
 * for reading because a writer holds the lock"; trywrlock "shall fail
 * [EBUSY] The read-write lock could not be acquired for writing because it
 * was already locked for reading or writing." */
static void try_busy(void)
{
    pthread_rwlock_t l;
    OK(pthread_rwlock_init(&l, NULL));
    OK(pthread_rwlock_wrlock(&l));
    FAILS(on_thread(do_tryrdlock, &l), EBUSY);
    FAILS(on_thread(do_trywrlock, &l), EBUSY);
    OK(pthread_rwlock_unlock(&l));

    OK(pthread_rwlock_rdlock(&l));
    OK(on_thread(do_tryrdlock, &l)); /* readers share; no writer waits */
    FAILS(on_thread(do_trywrlock, &l), EBUSY);
    OK(pthread_rwlock_unlock(&l));

    OK(on_thread(do_trywrlock, &l));
    OK(pthread_rwlock_trywrlock(&l));
    OK(pthread_rwlock_unlock(&l));
    OK(pthread_rwlock_tryrdlock(&l));
    OK(pthread_rwlock_unlock(&l));
    OK(pthread_rwlock_destroy(&l));
}

/* unlock "shall release a lock held on the read-write lock object": after
 * the holder's unlock (read or write) the lock is free for a writer. */
static void unlock_by_holder(void)
{
    pthread_rwlock_t l;
    OK(pthread_rwlock_init(&l, NULL));
    OK(pthread_rwlock_rdlock(&l));
    OK(pthread_rwlock_unlock(&l));
    OK(on_thread(do_trywrlock, &l));
    OK(pthread_rwlock_wrlock(&l));
    OK(pthread_rwlock_unlock(&l));
    OK(on_thread(do_trywrlock, &l));
    OK(pthread_rwlock_destroy(&l));
}

/* ---- timed and clock variants ---- */

enum { RD, WR };

struct timed {
    pthread_rwlock_t *l;
    int mode;          /* RD or WR */
    int use_clock;     /* clock{rd,wr}lock, else timed{rd,wr}lock */
    clockid_t clock;
    struct timespec deadline;
};

static void *do_timed(void *arg)
{
    struct timed *t = arg;
    int r;
    if (t->use_clock)
        r = t->mode == RD ? pthread_rwlock_clockrdlock(t->l, t->clock, &t->deadline)
                          : pthread_rwlock_clockwrlock(t->l, t->clock, &t->deadline);
    else
        r = t->mode == RD ? pthread_rwlock_timedrdlock(t->l, &t->deadline)
                          : pthread_rwlock_timedwrlock(t->l, &t->deadline);
    if (r == 0)
        OK(pthread_rwlock_unlock(t->l));
    return (void *)(intptr_t)r;
}

/* The lock is held by the caller so that mode would block: another thread's
 * timed attempt fails with ETIMEDOUT, and not before its deadline. */
static void expect_timeout(pthread_rwlock_t *l, int mode, int use_clock, clockid_t clock)
{
    struct timed t = { l, mode, use_clock, clock, conform_deadline(clock, 50000000) };
    FAILS(on_thread(do_timed, &t), ETIMEDOUT);
    CHECK(conform_now(clock) >= ns_of(t.deadline));
}

static void timed_timeout(void)
{
    pthread_rwlock_t l;
    OK(pthread_rwlock_init(&l, NULL));
    OK(pthread_rwlock_wrlock(&l));
    expect_timeout(&l, RD, 0, CLOCK_REALTIME);
    expect_timeout(&l, WR, 0, CLOCK_REALTIME);
    OK(pthread_rwlock_unlock(&l));
    OK(pthread_rwlock_rdlock(&l));
    expect_timeout(&l, WR, 0, CLOCK_REALTIME);
    OK(pthread_rwlock_unlock(&l));
    OK(pthread_rwlock_destroy(&l));
}

static void clock_timeout(void)
{
    static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
    pthread_rwlock_t l;
    OK(pthread_rwlock_init(&l, NULL));
    for (unsigned i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
        OK(pthread_rwlock_wrlock(&l));
        expect_timeout(&l, RD, 1, clocks[i]);
        expect_timeout(&l, WR, 1, clocks[i]);
        OK(pthread_rwlock_unlock(&l));
        OK(pthread_rwlock_rdlock(&l));
        expect_timeout(&l, WR, 1, clocks[i]);
        OK(pthread_rwlock_unlock(&l));
    }
    OK(pthread_rwlock_destroy(&l));
}

/* "Under no circumstance shall the function fail with a timeout if the lock
 * can be acquired immediately." */
static void timed_free_past_deadline(void)
{
    pthread_rwlock_t l;
    struct timespec past = { 0, 0 };
    OK(pthread_rwlock_init(&l, NULL));
    OK(pthread_rwlock_timedrdlock(&l, &past));
    OK(pthread_rwlock_unlock(&l));
    OK(pthread_rwlock_timedwrlock(&l, &past));
    OK(pthread_rwlock_unlock(&l));
    OK(pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &past));
    OK(pthread_rwlock_unlock(&l));
    OK(pthread_rwlock_clockwrlock(&l, CLOCK_MONOTONIC, &past));
    OK(pthread_rwlock_unlock(&l));
    OK(pthread_rwlock_destroy(&l));
}

/* "[EINVAL] The abs_timeout nanosecond value is less than zero or greater
 * than or equal to 1000 million" (a "may fail" that glibc implements) --
 * asked while the call would block. */
static void timed_bad_nsec(void)
{
    static const long bad[] = { -1, 1000000000 };
    pthread_rwlock_t l;
    OK(pthread_rwlock_init(&l, NULL));
    OK(pthread_rwlock_wrlock(&l));
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (int mode = RD; mode <= WR; mode++) {
            struct timed t = { &l, mode, 0, CLOCK_REALTIME, conform_deadline(CLOCK_REALTIME, 0) };
            t.deadline.tv_nsec = bad[i];
            FAILS(on_thread(do_timed, &t), EINVAL);
            t.use_clock = 1;
            t.clock = CLOCK_MONOTONIC;
            FAILS(on_thread(do_timed, &t), EINVAL);
        }
    }
    OK(pthread_rwlock_unlock(&l));
    OK(pthread_rwlock_destroy(&l));
}

/* glibc: the clockid must be CLOCK_REALTIME or CLOCK_MONOTONIC, else EINVAL.
 * Asked while the call would block. */
static void clock_bad_clock(void)
{
    static const clockid_t bad[] = { CLOCK_PROCESS_CPUTIME_ID, BAD_CLOCK };
    pthread_rwlock_t l;
    OK(pthread_rwlock_init(&l, NULL));
    OK(pthread_rwlock_wrlock(&l));
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (int mode = RD; mode <= WR; mode++) {
            struct timed t = { &l, mode, 1, bad[i], conform_deadline(CLOCK_REALTIME, 50000000) };
            FAILS(on_thread(do_timed, &t), EINVAL);
        }
    }
    OK(pthread_rwlock_unlock(&l));
    OK(pthread_rwlock_destroy(&l));
}

/* wrlock and rdlock "may fail [EDEADLK] The current thread already owns the
 * read-write lock for writing" -- glibc detects it for the write holder. */
static void write_holder_deadlock(void)
{
    pthread_rwlock_t l;
    OK(pthread_rwlock_init(&l, NULL));
    OK(pthread_rwlock_wrlock(&l));
    FAILS(pthread_rwlock_wrlock(&l), EDEADLK);
    FAILS(pthread_rwlock_rdlock(&l), EDEADLK);
    OK(pthread_rwlock_unlock(&l));
    OK(on_thread(do_trywrlock, &l));
    OK(pthread_rwlock_destroy(&l));
}

/* ---- attributes ---- */

static void rwlockattr_kind(void)
{
    static const int kinds[] = { PTHREAD_RWLOCK_PREFER_READER_NP,
                                 PTHREAD_RWLOCK_PREFER_WRITER_NP,
                                 PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP };
    pthread_rwlockattr_t a;
    int kind = -1;
    OK(pthread_rwlockattr_init(&a));
    OK(pthread_rwlockattr_getkind_np(&a, &kind));
    CHECK_EQ(kind, PTHREAD_RWLOCK_DEFAULT_NP);
    CHECK_EQ(kind, PTHREAD_RWLOCK_PREFER_READER_NP);
    for (unsigned i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        OK(pthread_rwlockattr_setkind_np(&a, kinds[i]));
        OK(pthread_rwlockattr_getkind_np(&a, &kind));
        CHECK_EQ(kind, kinds[i]);
    }
    /* pthread_rwlockattr_setkind_np(3): "EINVAL pref specifies an
     * unsupported value." */
    FAILS(pthread_rwlockattr_setkind_np(&a, 12345), EINVAL);
    OK(pthread_rwlockattr_getkind_np(&a, &kind));
    CHECK_EQ(kind, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    OK(pthread_rwlockattr_destroy(&a));
}

static void rwlockattr_pshared(void)
{
    pthread_rwlockattr_t a;
    int pshared = -1;
    OK(pthread_rwlockattr_init(&a));
    OK(pthread_rwlockattr_getpshared(&a, &pshared));
    CHECK_EQ(pshared, PTHREAD_PROCESS_PRIVATE);
    OK(pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
    OK(pthread_rwlockattr_getpshared(&a, &pshared));
    CHECK_EQ(pshared, PTHREAD_PROCESS_SHARED);
    OK(pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE));
    OK(pthread_rwlockattr_getpshared(&a, &pshared));
    CHECK_EQ(pshared, PTHREAD_PROCESS_PRIVATE);
    OK(pthread_rwlockattr_destroy(&a));
}

/* ---- writer preference ---- */

static void *do_wrlock(void *l)
{
    OK(pthread_rwlock_wrlock(l));
    OK(pthread_rwlock_unlock(l));
    return NULL;
}

/* Retries tryrdlock until a waiting writer makes it fail; it must then keep
 * failing while the writer still waits. */
static void *poll_until_busy(void *l)
{
    int r;
    while ((r = pthread_rwlock_tryrdlock(l)) == 0) {
        OK(pthread_rwlock_unlock(l));
        usleep(1000);
    }
    CHECK_EQ(r, EBUSY);
    for (int i = 0; i < 5; i++) {
        usleep(1000);
        FAILS(pthread_rwlock_tryrdlock(l), EBUSY);
    }
    return NULL;
}

/* pthread_rwlockattr_setkind_np(3): PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP
 * avoids writer starvation: once a writer waits for the readers to leave,
 * new readers (in other threads) do not get in. */
static void writer_preferred_blocks_readers(void)
{
    pthread_rwlockattr_t a;
    pthread_rwlock_t l;
    pthread_t w;
    OK(pthread_rwlockattr_init(&a));
    OK(pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP));
    OK(pthread_rwlock_init(&l, &a));
    OK(pthread_rwlockattr_destroy(&a));
    OK(pthread_rwlock_rdlock(&l));
    OK(on_thread(do_tryrdlock, &l)); /* no writer waits yet: readers share */
    OK(pthread_create(&w, NULL, do_wrlock, &l));
    OK(on_thread(poll_until_busy, &l));
    OK(pthread_rwlock_unlock(&l)); /* the writer gets it now */
    OK(pthread_join(w, NULL));
    OK(on_thread(do_tryrdlock, &l));
    OK(pthread_rwlock_destroy(&l));
}

int main(void)
{
    RUN_CASE(readers_share, 10);
    RUN_CASE(read_lock_held_twice, 10);
    RUN_CASE(writers_exclusive, 30);
    RUN_CASE(try_busy, 10);
    RUN_CASE(unlock_by_holder, 10);
    RUN_CASE(timed_timeout, 10);
    RUN_CASE(clock_timeout, 10);
    RUN_CASE(timed_free_past_deadline, 10);
    RUN_CASE(timed_bad_nsec, 10);
    RUN_CASE(clock_bad_clock, 10);
    RUN_CASE(write_holder_deadlock, 10);
    RUN_CASE(rwlockattr_kind, 10);
    RUN_CASE(rwlockattr_pshared, 10);
    RUN_CASE(writer_preferred_blocks_readers, 10);
    return 0;
}
