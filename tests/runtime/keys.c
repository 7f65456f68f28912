/* SPDX-License-Identifier: MIT */
/* Thread-specific data keys: values per thread across switches and
 * migrations, destructors at exit (right values, several rounds, none for
 * NULL values or deleted keys), delete + recreate hiding old values, the
 * ITO_KEYS_MAX limit (EAGAIN), unknown keys (EINVAL) and foreign kernel
 * threads (EPERM, NULL). */
#include <pthread.h>

#include "common.h"

enum { NTHREADS = 32 };

static ito_key_t k1, k2;
static atomic_long dtor1_calls, dtor1_sum, dtor2_calls;
static int slots[NTHREADS][2];

static void dtor1(void *v)
{
    int *p = v;
    atomic_fetch_add(&dtor1_calls, 1);
    atomic_fetch_add(&dtor1_sum, *p);
    /* The value is already cleared when its destructor runs. */
    CHECK(ito_getspecific(k1) == NULL);
}

static void dtor2(void *v)
{
    int *p = v;
    CHECK_EQ(*p, -1 - (int)(p - &slots[0][0]) / 2);   /* slots[i][1] holds -1 - i */
    atomic_fetch_add(&dtor2_calls, 1);
}

static void *use_keys(void *a)
{
    int i = (int)(intptr_t)a;
    CHECK(ito_getspecific(k1) == NULL);   /* unset in a new thread */
    slots[i][0] = i + 1;
    slots[i][1] = -1 - i;
    OK(ito_setspecific(k1, &slots[i][0]));
    OK(ito_setspecific(k2, &slots[i][1]));
    for (int r = 0; r < 20; r++) {
        if (r % 3 == 0)
            ito_sleep_ns(1000);
        else
            ito_yield();
        CHECK(ito_getspecific(k1) == &slots[i][0]);
        CHECK(ito_getspecific(k2) == &slots[i][1]);
    }
    return NULL;
}

static void test_values_and_destructors(void)
{
    OK(ito_key_create(&k1, dtor1));
    OK(ito_key_create(&k2, dtor2));
    CHECK(k1 != k2);
    ito_thread_t ts[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        OK(ito_spawn(&ts[i], NULL, use_keys, (void *)(intptr_t)i));
    for (int i = 0; i < NTHREADS; i++)
        OK(ito_join(ts[i], NULL));
    /* Each thread's destructors ran once, on its own values, before join
     * returned. */
    CHECK_EQ(atomic_load(&dtor1_calls), NTHREADS);
    CHECK_EQ(atomic_load(&dtor1_sum), NTHREADS * (NTHREADS + 1) / 2);
    CHECK_EQ(atomic_load(&dtor2_calls), NTHREADS);

    /* main has its own values. */
    int mv = 5;
    OK(ito_setspecific(k1, &mv));
    CHECK(ito_getspecific(k1) == &mv);
    OK(ito_setspecific(k1, NULL));
    CHECK(ito_getspecific(k1) == NULL);
    OK(ito_key_delete(k1));
    OK(ito_key_delete(k2));
}

/* ---- destructor rounds ---- */

static ito_key_t kr;
static atomic_int rounds_seen;
static void dtor_again(void *v)
{
    int n = atomic_fetch_add(&rounds_seen, 1) + 1;
    /* Set a value again: another round runs, up to the limit. */
    OK(ito_setspecific(kr, (void *)(intptr_t)(n + 1)));
    (void)v;
}

static void *set_kr(void *a)
{
    OK(ito_setspecific(kr, (void *)1));
    return NULL;
}

static ito_key_t kn;
static atomic_int null_dtor_calls;
static void dtor_null(void *v) { atomic_fetch_add(&null_dtor_calls, 1); }
static void *set_null(void *a)
{
    OK(ito_setspecific(kn, (void *)1));
    OK(ito_setspecific(kn, NULL));   /* NULL at exit: no destructor */
    return NULL;
}

static void *set_then_exit(void *a)
{
    OK(ito_setspecific(kn, (void *)2));
    ito_exit(NULL);   /* destructors run for ito_exit too */
}

static void test_destructor_rounds(void)
{
    OK(ito_key_create(&kr, dtor_again));
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, set_kr, NULL));
    OK(ito_join(t, NULL));
    CHECK_EQ(atomic_load(&rounds_seen), ITO_DESTRUCTOR_ITERATIONS);
    OK(ito_key_delete(kr));

    OK(ito_key_create(&kn, dtor_null));
    OK(ito_spawn(&t, NULL, set_null, NULL));
    OK(ito_join(t, NULL));
    CHECK_EQ(atomic_load(&null_dtor_calls), 0);
    OK(ito_spawn(&t, NULL, set_then_exit, NULL));
    OK(ito_join(t, NULL));
    CHECK_EQ(atomic_load(&null_dtor_calls), 1);

    /* A key with no destructor. */
    ito_key_t kz;
    OK(ito_key_create(&kz, NULL));
    OK(ito_setspecific(kz, (void *)3));
    CHECK(ito_getspecific(kz) == (void *)3);
    OK(ito_key_delete(kz));
    OK(ito_key_delete(kn));
}

/* ---- delete and recreate ---- */

static ito_key_t kd;
static ito_sem_t step, stepped;
static atomic_int deleted_dtor_calls;
static void dtor_deleted(void *v) { atomic_fetch_add(&deleted_dtor_calls, 1); }
static void *holder(void *a)
{
    OK(ito_setspecific(kd, (void *)0x42));
    OK(ito_sem_post(&stepped));
    OK(ito_sem_wait(&step));   /* main deletes kd and creates new keys */
    CHECK(ito_getspecific(kd) == NULL);   /* the old value is gone */
    OK(ito_sem_post(&stepped));
    OK(ito_sem_wait(&step));
    return NULL;
}

static void test_delete_recreate(void)
{
    OK(ito_sem_init(&step, 0));
    OK(ito_sem_init(&stepped, 0));
    OK(ito_key_create(&kd, dtor_deleted));
    ito_key_t old = kd;
    OK(ito_setspecific(kd, (void *)0x43));
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, holder, NULL));
    OK(ito_sem_wait(&stepped));

    OK(ito_key_delete(kd));
    /* Deleted: unknown from now on. */
    CHECK(ito_getspecific(old) == NULL);
    CHECK_EQ(ito_setspecific(old, (void *)1), EINVAL);
    CHECK_EQ(ito_key_delete(old), EINVAL);
    /* Recreate until the slot is reused: old values must not show through. */
    ito_key_t made[ITO_KEYS_MAX];
    int nmade = 0;
    bool reused = false;
    while (!reused) {
        OK(ito_key_create(&made[nmade], dtor_deleted));
        reused = made[nmade] == old;
        nmade++;
        CHECK(nmade < ITO_KEYS_MAX);
    }
    kd = old;   /* the same number, a new key */
    CHECK(ito_getspecific(kd) == NULL);
    OK(ito_sem_post(&step));
    OK(ito_sem_wait(&stepped));
    OK(ito_sem_post(&step));
    OK(ito_join(t, NULL));
    /* The holder's value belonged to the deleted key: no destructor ran. */
    CHECK_EQ(atomic_load(&deleted_dtor_calls), 0);
    for (int i = 0; i < nmade; i++)
        OK(ito_key_delete(made[i]));
    OK(ito_sem_destroy(&step));
    OK(ito_sem_destroy(&stepped));
}

/* ---- limits and bad keys ---- */

static void test_limits(void)
{
    static ito_key_t all[ITO_KEYS_MAX + 1];
    int n = 0;
    int e;
    while ((e = ito_key_create(&all[n], NULL)) == 0) {
        n++;
        CHECK(n <= ITO_KEYS_MAX);
    }
    CHECK_EQ(e, EAGAIN);
    CHECK_EQ(n, ITO_KEYS_MAX);   /* every earlier key was deleted */
    /* Every key is usable, even the last ones. */
    for (int i = 0; i < n; i += 97) {
        OK(ito_setspecific(all[i], (void *)(intptr_t)(i + 1)));
        CHECK(ito_getspecific(all[i]) == (void *)(intptr_t)(i + 1));
    }
    OK(ito_setspecific(all[n - 1], (void *)9));
    CHECK(ito_getspecific(all[n - 1]) == (void *)9);
    /* Free one: one more can be created. */
    OK(ito_key_delete(all[n / 2]));
    OK(ito_key_create(&all[n / 2], NULL));
    ito_key_t extra;
    CHECK_EQ(ito_key_create(&extra, NULL), EAGAIN);
    for (int i = 0; i < n; i++)
        OK(ito_key_delete(all[i]));
    for (int i = 0; i < n; i += 97)
        CHECK(ito_getspecific(all[i]) == NULL);

    /* Unknown keys. */
    ito_key_t bad[] = { ITO_KEYS_MAX, ITO_KEYS_MAX + 1, UINT32_MAX, all[0] /* deleted */ };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ(ito_key_delete(bad[i]), EINVAL);
        CHECK_EQ(ito_setspecific(bad[i], (void *)1), EINVAL);
        CHECK(ito_getspecific(bad[i]) == NULL);
    }
}

/* ---- foreign kernel threads ---- */

static ito_key_t kf;
static void *foreign(void *a)
{
    CHECK_EQ(ito_setspecific(kf, (void *)1), EPERM);
    CHECK(ito_getspecific(kf) == NULL);
    /* Creating and deleting keys is fine from any thread. */
    ito_key_t k;
    OK(ito_key_create(&k, NULL));
    CHECK_EQ(ito_setspecific(k, (void *)1), EPERM);
    OK(ito_key_delete(k));
    return NULL;
}

static void test_foreign(void)
{
    OK(ito_key_create(&kf, NULL));
    OK(ito_setspecific(kf, (void *)0x10));
    pthread_t p;
    CHECK_EQ(pthread_create(&p, NULL, foreign, NULL), 0);
    CHECK_EQ(pthread_join(p, NULL), 0);
    CHECK(ito_getspecific(kf) == (void *)0x10);   /* main's value untouched */
    OK(ito_key_delete(kf));
}

int main(void)
{
    test_values_and_destructors();
    test_destructor_rounds();
    test_delete_recreate();
    test_limits();
    test_foreign();
    return 0;
}
