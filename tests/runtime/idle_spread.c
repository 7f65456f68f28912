/* SPDX-License-Identifier: MIT */
/* Bursts reaching sleeping vprocs (runtime/idle.c): a waker counts the vproc
 * it wakes as spinning, and ito_policy_spread wakes up to two more.
 *  - the counts: once everything has settled, the idle vprocs (spinning +
 *    sleeping) are exactly the vprocs not running main, after plain
 *    wake-ups, counted ones and spreads alike (a count left behind by a
 *    woken vproc would stay for ever);
 *  - ito_policy_spread(n) wakes min(n, 2) sleeping vprocs, 0 wakes none;
 *  - a burst reaches every vproc: with time slices off (ITO_TIMESLICE_US=0,
 *    set by CMake), one thread per vproc, each spinning until all have
 *    started, can only finish if every sleeping vproc took one. */
#include <stdatomic.h>

#include <ito/policy.h>

#include "common.h"

enum { VPROCS = 4 };

static atomic_int started;
static atomic_bool on_vproc[VPROCS];

/* main computes for ms milliseconds: its vproc stays busy, and no timer
 * of its own wakes another vproc (ito_sleep_ns would). */
static void compute_ms(unsigned ms)
{
    uint64_t t0 = ito_now_ns();
    while (ito_now_ns() - t0 < ms * 1000000ull)
        ;
}

/* Wait until the idle vprocs are the other VPROCS - 1 (up to 5 s). */
static void settled(const char *when)
{
    unsigned n = 0;
    for (int i = 0; i < 5000; i++) {
        if ((n = ito_policy_idle_vprocs()) == VPROCS - 1)
            return;
        compute_ms(1);
    }
    fprintf(stderr, "%s: %u idle vprocs, expected %d\n", when, n, VPROCS - 1);
    CHECK(0);
}

static uint64_t wakeups(void)
{
    ito_stats_t s;
    OK(ito_stats_get(&s));
    return s.wakeups;
}

/* Spread n from main once every other vproc sleeps; returns the wake-ups. */
static uint64_t spread(unsigned n)
{
    compute_ms(20);   /* the other vprocs fall asleep (50 us spin) */
    settled("before spreading");
    uint64_t w0 = wakeups();
    ito_policy_spread(n);
    compute_ms(20);
    settled("after spreading");
    return wakeups() - w0;
}

static void *burst_thread(void *a)
{
    atomic_store(&on_vproc[ito_vproc_self()], true);
    atomic_fetch_add(&started, 1);
    uint64_t t0 = ito_now_ns();
    while (atomic_load(&started) < VPROCS)
        CHECK(ito_now_ns() - t0 < 30000000000ull);   /* 30 s: the burst never arrived */
    return a;
}

int main(void)
{
    ito_config_t cfg = ITO_CONFIG_INIT;
    cfg.vprocs = VPROCS;
    OK(ito_init(&cfg));
    CHECK_EQ(ito_vproc_count(), VPROCS);

    settled("at start");
    /* Nothing else wakes the sleeping vprocs here (no timers, no slices; a
     * vproc that wakes at its own deadline is not counted as woken). */
    CHECK_EQ(spread(0), 0);
    CHECK_EQ(spread(1), 1);
    CHECK_EQ(spread(2), 2);
    CHECK_EQ(spread(1000), 2);

    for (int round = 0; round < 20; round++) {
        OK(ito_sleep_ns(5000000));
        atomic_store(&started, 0);
        for (int i = 0; i < VPROCS; i++)
            atomic_store(&on_vproc[i], false);
        ito_thread_t t[VPROCS];
        for (int i = 0; i < VPROCS; i++)
            OK(ito_spawn(&t[i], NULL, burst_thread, NULL));
        for (int i = 0; i < VPROCS; i++)
            OK(ito_join(t[i], NULL));
        for (int i = 0; i < VPROCS; i++)
            CHECK(atomic_load(&on_vproc[i]));
        settled("after a burst");
    }
    printf("idle_spread: ok\n");
    return 0;
}
