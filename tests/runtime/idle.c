/* SPDX-License-Identifier: MIT */
/* Idle behaviour: once every thread is blocked (main sleeping, nothing else
 * ready), the vprocs stop looking for work and sleep, so the process uses
 * almost no CPU beyond the short spinning window. Measured with getrusage
 * around a 200 ms sleep of main, with 2 vprocs; the bound is loose (half the
 * wall time) because the machine is shared and noisy. Checked fresh, after a
 * burst of work, and with many threads blocked forever. */
#include <sys/resource.h>

#include "common.h"

static ito_sem_t never;
static void *blocked(void *a)
{
    OK(ito_sem_wait(&never));
    return NULL;
}

static void *work(void *a)
{
    volatile long x = 0;
    for (long i = 0; i < 100000; i++)
        x += i;
    ito_yield();
    return NULL;
}

static uint64_t cpu_ns(void)
{
    struct rusage ru;
    CHECK_EQ(getrusage(RUSAGE_SELF, &ru), 0);
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

static void measure(const char *what)
{
    uint64_t c0 = cpu_ns(), w0 = ito_now_ns();
    OK(ito_sleep_ns(200000000));
    uint64_t c1 = cpu_ns(), w1 = ito_now_ns();
    double ratio = (double)(c1 - c0) / (double)(w1 - w0);
    printf("idle (%s): %.1f ms CPU over %.1f ms wall (%.1f%%)\n", what, (c1 - c0) / 1e6,
           (w1 - w0) / 1e6, 100 * ratio);
    CHECK(w1 - w0 >= 200000000);
    CHECK(ratio < 0.5);
}

int main(void)
{
    ito_config_t cfg = ITO_CONFIG_INIT;
    cfg.vprocs = 2;
    OK(ito_init(&cfg));
    CHECK_EQ(ito_vproc_count(), 2);

    /* Nothing ever spawned. */
    measure("fresh");

    /* After a burst of work on both vprocs. */
    ito_thread_t ts[64];
    for (int i = 0; i < 64; i++)
        OK(ito_spawn(&ts[i], NULL, work, NULL));
    for (int i = 0; i < 64; i++)
        OK(ito_join(ts[i], NULL));
    measure("after work");

    /* With threads blocked forever on a semaphore. */
    OK(ito_sem_init(&never, 0));
    for (int i = 0; i < 64; i++)
        OK(ito_spawn(&ts[i], NULL, blocked, NULL));
    ito_sleep_ns(10000000);
    measure("threads blocked");
    for (int i = 0; i < 64; i++)
        OK(ito_sem_post(&never));
    for (int i = 0; i < 64; i++)
        OK(ito_join(ts[i], NULL));

    ito_stats_t st;
    OK(ito_stats_get(&st));
    CHECK(st.idle_sleeps > 0);
    return 0;
}
