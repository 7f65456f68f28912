/* SPDX-License-Identifier: MIT */
/* Stress: many threads blocked at once — 100,000 (scaled) threads wait on one
 * condition variable; once all of them are counted in, one broadcast wakes
 * them all; then the same crowd parks on a semaphore and is released by as
 * many posts, and finally on a barrier. Every thread must come back exactly
 * once each time. */
#include "common.h"

static ito_mutex_t m = ITO_MUTEX_INIT;
static ito_cond_t c = ITO_COND_INIT;
static long waiting, woken;   /* m */
static bool go;               /* m */
static ito_sem_t sem;
static atomic_long sem_passed;
static ito_barrier_t bar;
static atomic_long serials;

static void *crowd(void *a)
{
    OK(ito_mutex_lock(&m));
    waiting++;
    while (!go)
        OK(ito_cond_wait(&c, &m));
    woken++;
    OK(ito_mutex_unlock(&m));

    OK(ito_sem_wait(&sem));
    atomic_fetch_add(&sem_passed, 1);

    if (ito_barrier_wait(&bar) == ITO_BARRIER_SERIAL)
        atomic_fetch_add(&serials, 1);
    return NULL;
}

static long locked_get(long *p)
{
    OK(ito_mutex_lock(&m));
    long v = *p;
    OK(ito_mutex_unlock(&m));
    return v;
}

int main(void)
{
    long n = test_scaled(100000);
#if defined(__SANITIZE_THREAD__)
    /* TSan gives each ito thread a fiber, and dies beyond 8128 of them. */
    if (n > 4000)
        n = 4000;
#endif
    ito_thread_t *ts = malloc((size_t)n * sizeof *ts);
    CHECK(ts);
    OK(ito_sem_init(&sem, 0));
    OK(ito_barrier_init(&bar, (unsigned)n + 1));
    uint64_t t0 = ito_now_ns();
    for (long i = 0; i < n; i++)
        OK(ito_spawn(&ts[i], NULL, crowd, NULL));
    WAIT_UNTIL(locked_get(&waiting) == n, 120);
    CHECK_EQ(ito_cond_destroy(&c), EBUSY);
    long rss = test_rss_kib();
    OK(ito_mutex_lock(&m));
    CHECK_EQ(woken, 0);
    go = true;
    OK(ito_cond_broadcast(&c));
    OK(ito_mutex_unlock(&m));
    WAIT_UNTIL(locked_get(&woken) == n, 120);

    /* All of them are about to wait on the semaphore (or already do). */
    for (long i = 0; i < n; i++)
        OK(ito_sem_post(&sem));
    WAIT_UNTIL(atomic_load(&sem_passed) == n, 120);
    CHECK_EQ(atomic_load(&serials), 0);
    int e = ito_barrier_wait(&bar);
    CHECK(e == 0 || e == ITO_BARRIER_SERIAL);
    if (e == ITO_BARRIER_SERIAL)
        atomic_fetch_add(&serials, 1);
    for (long i = 0; i < n; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(atomic_load(&serials), 1);
    unsigned v;
    OK(ito_sem_get_value(&sem, &v));
    CHECK_EQ(v, 0);
    printf("stress_blocked: %ld threads blocked at once (RSS %ld KiB), all released in %.2f s\n", n,
           rss, (ito_now_ns() - t0) / 1e9);
    OK(ito_barrier_destroy(&bar));
    OK(ito_sem_destroy(&sem));
    OK(ito_cond_destroy(&c));
    free(ts);
    return 0;
}
