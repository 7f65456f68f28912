/* SPDX-License-Identifier: MIT */
/* ito_stats_get: EINVAL for NULL; counters only grow; spawns counts every
 * thread created (ito threads and foreign kernel threads alike); switches and
 * decisions follow from running threads. */
#include <pthread.h>

#include "common.h"

static void *nothing(void *a)
{
    ito_yield();
    return a;
}

static void *foreign_spawner(void *a)
{
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, nothing, NULL));
    OK(ito_join(t, NULL));
    return NULL;
}

static void check_monotonic(const ito_stats_t *a, const ito_stats_t *b)
{
    CHECK(b->spawns >= a->spawns);
    CHECK(b->switches >= a->switches);
    CHECK(b->decisions >= a->decisions);
    CHECK(b->steals >= a->steals);
    CHECK(b->idle_sleeps >= a->idle_sleeps);
    CHECK(b->wakeups >= a->wakeups);
}

int main(void)
{
    CHECK_EQ(ito_stats_get(NULL), EINVAL);
    ito_stats_t s0, s1, s2;
    OK(ito_stats_get(&s0));

    enum { N = 100 };
    ito_thread_t ts[N];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, nothing, NULL));
    for (int i = 0; i < N; i++)
        OK(ito_join(ts[i], NULL));
    OK(ito_stats_get(&s1));
    check_monotonic(&s0, &s1);
    CHECK(s1.spawns - s0.spawns >= N);
    /* Each thread ran (a switch to it) and yielded once. */
    CHECK(s1.switches - s0.switches >= N);
    CHECK(s1.decisions - s0.decisions >= N);

    pthread_t p;
    CHECK_EQ(pthread_create(&p, NULL, foreign_spawner, NULL), 0);
    CHECK_EQ(pthread_join(p, NULL), 0);
    OK(ito_stats_get(&s2));
    check_monotonic(&s1, &s2);
    CHECK(s2.spawns - s1.spawns >= 1);

    /* Idle: with nothing to run for a while, some vproc went to sleep (only
     * if there is more than one: vproc 0 runs main's sleep as a timer). */
    OK(ito_sleep_ns(30000000));
    ito_stats_t s3;
    OK(ito_stats_get(&s3));
    check_monotonic(&s2, &s3);
    CHECK(s3.idle_sleeps > s2.idle_sleeps || ito_vproc_count() == 1);
    return 0;
}
