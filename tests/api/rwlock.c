/* SPDX-License-Identifier: MIT */
/* Reader-writer lock: many readers at once, a writer excludes everyone,
 * writer preference (a waiting writer stops new readers and goes first),
 * try variants (EBUSY), EDEADLK, EPERM, EBUSY on destroy, an error after
 * destroy, foreign kernel threads as readers and writers. */
#include <pthread.h>

#include "common.h"

static ito_rwlock_t l = ITO_RWLOCK_INIT;

/* ---- many readers at once ---- */

enum { NREADERS = 12 };
static atomic_int inside;
static void *reader_together(void *a)
{
    OK(ito_rwlock_rdlock(&l));
    atomic_fetch_add(&inside, 1);
    /* Every reader holds the lock until all of them are in: only possible if
     * they hold it at the same time. */
    WAIT_UNTIL(atomic_load(&inside) == NREADERS, 30);
    OK(ito_rwlock_unlock(&l));
    return NULL;
}

static void test_readers_together(void)
{
    ito_thread_t ts[NREADERS];
    for (int i = 0; i < NREADERS; i++)
        OK(ito_spawn(&ts[i], NULL, reader_together, NULL));
    for (int i = 0; i < NREADERS; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(atomic_load(&inside), NREADERS);
}

/* ---- writers exclude ---- */

static atomic_int readers_in, writers_in;
static long plain_value;   /* written under the write lock only */
static void *mixed(void *a)
{
    uint64_t seed = (uint64_t)(intptr_t)a * 7919 + 1;
    long n = test_scaled(5000);
    for (long i = 0; i < n; i++) {
        if (test_rand(&seed) % 4 == 0) {
            OK(ito_rwlock_wrlock(&l));
            CHECK_EQ(atomic_fetch_add(&writers_in, 1), 0);
            CHECK_EQ(atomic_load(&readers_in), 0);
            long v = plain_value;
            if (i % 16 == 0)
                ito_yield();
            plain_value = v + 1;
            CHECK_EQ(atomic_fetch_sub(&writers_in, 1), 1);
            OK(ito_rwlock_unlock(&l));
        } else {
            OK(ito_rwlock_rdlock(&l));
            atomic_fetch_add(&readers_in, 1);
            CHECK_EQ(atomic_load(&writers_in), 0);
            long v = plain_value;
            if (i % 16 == 0)
                ito_yield();
            CHECK_EQ(plain_value, v);
            atomic_fetch_sub(&readers_in, 1);
            OK(ito_rwlock_unlock(&l));
        }
    }
    return NULL;
}

static atomic_long foreign_writes;
static void *foreign_mixed(void *a)
{
    for (int i = 0; i < (int)test_scaled(500); i++) {
        if (i % 2) {
            OK(ito_rwlock_wrlock(&l));
            CHECK_EQ(atomic_fetch_add(&writers_in, 1), 0);
            CHECK_EQ(atomic_load(&readers_in), 0);
            plain_value++;
            atomic_fetch_add(&foreign_writes, 1);
            CHECK_EQ(atomic_fetch_sub(&writers_in, 1), 1);
            OK(ito_rwlock_unlock(&l));
        } else {
            OK(ito_rwlock_rdlock(&l));
            atomic_fetch_add(&readers_in, 1);
            CHECK_EQ(atomic_load(&writers_in), 0);
            atomic_fetch_sub(&readers_in, 1);
            OK(ito_rwlock_unlock(&l));
        }
    }
    return NULL;
}

static void test_exclusion(void)
{
    enum { N = 8, NP = 2 };
    ito_thread_t ts[N];
    pthread_t ps[NP];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, mixed, (void *)(intptr_t)i));
    for (int i = 0; i < NP; i++)
        CHECK_EQ(pthread_create(&ps[i], NULL, foreign_mixed, NULL), 0);
    for (int i = 0; i < N; i++)
        OK(ito_join(ts[i], NULL));
    for (int i = 0; i < NP; i++)
        CHECK_EQ(pthread_join(ps[i], NULL), 0);
    /* Every write happened exactly once (recount them). */
    long writes = atomic_load(&foreign_writes);
    for (int i = 0; i < N; i++) {
        uint64_t seed = (uint64_t)i * 7919 + 1;
        for (long k = 0; k < test_scaled(5000); k++)
            writes += test_rand(&seed) % 4 == 0;
    }
    CHECK_EQ(plain_value, writes);
}

/* ---- writer preference ---- */

static atomic_int order_next;
static atomic_int writer_order, reader_order;
static void *pref_writer(void *a)
{
    OK(ito_rwlock_wrlock(&l));
    atomic_store(&writer_order, atomic_fetch_add(&order_next, 1) + 1);
    OK(ito_rwlock_unlock(&l));
    return NULL;
}
static void *pref_reader(void *a)
{
    atomic_fetch_add((atomic_int *)a, 1);
    OK(ito_rwlock_rdlock(&l));
    atomic_store(&reader_order, atomic_fetch_add(&order_next, 1) + 1);
    OK(ito_rwlock_unlock(&l));
    return NULL;
}

static void test_writer_preference(void)
{
    OK(ito_rwlock_rdlock(&l));
    ito_thread_t w, r;
    OK(ito_spawn(&w, NULL, pref_writer, NULL));
    /* Once the writer waits, new readers are refused. Probe with tryrdlock:
     * while it succeeds, the writer is not queued yet. */
    int e;
    uint64_t end = ito_now_ns() + 30000000000ull;
    while ((e = ito_rwlock_tryrdlock(&l)) == 0) {
        OK(ito_rwlock_unlock(&l));
        CHECK(ito_now_ns() < end);
        ito_sleep_ns(500000);
    }
    CHECK_EQ(e, EBUSY);
    CHECK_EQ(ito_rwlock_trywrlock(&l), EBUSY);
    /* A reader that arrives now waits behind the writer. */
    atomic_int arrived = 0;
    OK(ito_spawn(&r, NULL, pref_reader, &arrived));
    WAIT_UNTIL(atomic_load(&arrived) == 1, 30);
    ito_sleep_ns(10000000);
    CHECK_EQ(atomic_load(&reader_order), 0);
    CHECK_EQ(atomic_load(&writer_order), 0);
    OK(ito_rwlock_unlock(&l));   /* the last reader leaves: the writer goes */
    OK(ito_join(w, NULL));
    OK(ito_join(r, NULL));
    CHECK_EQ(atomic_load(&writer_order), 1);
    CHECK_EQ(atomic_load(&reader_order), 2);
}

/* ---- errors ---- */

static void *try_both(void *a)
{
    int *res = a;
    res[0] = ito_rwlock_tryrdlock(&l);
    if (res[0] == 0)
        OK(ito_rwlock_unlock(&l));
    res[1] = ito_rwlock_trywrlock(&l);
    if (res[1] == 0)
        OK(ito_rwlock_unlock(&l));
    res[2] = ito_rwlock_unlock(&l);
    return NULL;
}

static void *wrlock_blocked(void *a)
{
    atomic_fetch_add((atomic_int *)a, 1);
    OK(ito_rwlock_wrlock(&l));
    OK(ito_rwlock_unlock(&l));
    return NULL;
}

static void test_errors(void)
{
    CHECK_EQ(ito_rwlock_unlock(&l), EPERM);   /* held by nobody */
    OK(ito_rwlock_wrlock(&l));
    CHECK_EQ(ito_rwlock_wrlock(&l), EDEADLK);
    /* The header documents only EBUSY for the try variants; the writer
     * itself trying again may also be told EDEADLK. */
    int e = ito_rwlock_trywrlock(&l);
    CHECK(e == EBUSY || e == EDEADLK);
    e = ito_rwlock_tryrdlock(&l);
    CHECK(e == EBUSY || e == EDEADLK);
    CHECK_EQ(ito_rwlock_destroy(&l), EBUSY);
    /* Another thread: EBUSY both ways; unlocking someone else's write lock
     * is EPERM. */
    int res[3];
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, try_both, res));
    OK(ito_join(t, NULL));
    CHECK_EQ(res[0], EBUSY);
    CHECK_EQ(res[1], EBUSY);
    CHECK_EQ(res[2], EPERM);
    OK(ito_rwlock_unlock(&l));
    CHECK_EQ(ito_rwlock_unlock(&l), EPERM);

    /* Read-held: readers may join, writers may not. */
    OK(ito_rwlock_rdlock(&l));
    OK(ito_rwlock_tryrdlock(&l));
    CHECK_EQ(ito_rwlock_trywrlock(&l), EBUSY);
    CHECK_EQ(ito_rwlock_destroy(&l), EBUSY);
    OK(ito_rwlock_unlock(&l));
    OK(ito_rwlock_unlock(&l));
    CHECK_EQ(ito_rwlock_unlock(&l), EPERM);

    /* Waited on: EBUSY. */
    OK(ito_rwlock_rdlock(&l));
    atomic_int arrived = 0;
    OK(ito_spawn(&t, NULL, wrlock_blocked, &arrived));
    WAIT_UNTIL(atomic_load(&arrived) == 1, 30);
    WAIT_UNTIL(ito_rwlock_tryrdlock(&l) == EBUSY, 30);   /* the writer is queued */
    OK(ito_rwlock_unlock(&l));
    OK(ito_join(t, NULL));

    /* Destroyed: an error until initialized again (the header documents
     * EINVAL after destroy for mutexes only). */
    ito_rwlock_t d;
    memset(&d, 0, sizeof d);   /* all-zero equals ITO_RWLOCK_INIT */
    OK(ito_rwlock_rdlock(&d));
    OK(ito_rwlock_unlock(&d));
    OK(ito_rwlock_destroy(&d));
    CHECK(ito_rwlock_rdlock(&d) != 0);
    CHECK(ito_rwlock_wrlock(&d) != 0);
    CHECK(ito_rwlock_tryrdlock(&d) != 0);
    CHECK(ito_rwlock_trywrlock(&d) != 0);
    CHECK(ito_rwlock_unlock(&d) != 0);
    CHECK(ito_rwlock_destroy(&d) != 0);
    OK(ito_rwlock_init(&d));
    OK(ito_rwlock_wrlock(&d));
    OK(ito_rwlock_unlock(&d));
    OK(ito_rwlock_destroy(&d));
    CHECK_EQ(ito_rwlock_init(NULL), EINVAL);
}

int main(void)
{
    test_errors();
    test_readers_together();
    test_exclusion();
    test_writer_preference();
    OK(ito_rwlock_destroy(&l));
    return 0;
}
