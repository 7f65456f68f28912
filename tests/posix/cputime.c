/* SPDX-License-Identifier: MIT */
/* CPU-time clocks of threads.
 *
 * "pthread_getcpuclockid() shall return in clock_id the clock ID of the
 * CPU-time clock of the thread specified by thread_id" (pthread_getcpuclockid);
 * CLOCK_THREAD_CPUTIME_ID is "the identifier of the CPU-time clock
 * associated with the thread making a clock() or timer*() function call"
 * (time.h). Each thread's clock advances with that thread's CPU time only:
 * a thread that computes has it grow by about what it computed, one that
 * sleeps does not, and neither sees another thread's computing — also when
 * the threads share one processor. clock_getres works on these clocks.
 *
 * Bounds are loose (the machines are shared): what is checked is whose time
 * a clock counts, not how fast it runs. No case is left out for a glibc
 * deviation. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

#define MS 1000000ull

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    OK(clock_gettime(c, &ts));
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Compute until the calling thread's own clock has advanced by ns. */
static void compute_for(uint64_t ns)
{
    uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    volatile uint64_t x = 0;
    while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - start < ns)
        for (int i = 0; i < 10000; i++)
            x += (uint64_t)i;
}

static struct sync step;

static void *computes(void *arg)
{
    compute_for(60 * MS);
    sync_add(&step, 1);
    sync_wait(&step, 3); /* measured from outside, then let go */
    return NULL;
}

static void *sleeps(void *arg)
{
    usleep(100000);
    sync_add(&step, 1);
    sync_wait(&step, 3);
    return NULL;
}

static void clock_of_other_threads(void)
{
    sync_init(&step);
    pthread_t c, s;
    clockid_t cc, sc;
    OK(pthread_create(&c, NULL, computes, NULL));
    OK(pthread_create(&s, NULL, sleeps, NULL));
    OK(pthread_getcpuclockid(c, &cc));
    OK(pthread_getcpuclockid(s, &sc));
    CHECK(cc != sc);
    sync_wait(&step, 2);
    uint64_t computed = clock_ns(cc), slept = clock_ns(sc);
    CHECK(computed >= 50 * MS);
    CHECK(computed < 10000 * MS);
    CHECK(slept < 30 * MS);
    struct timespec res;
    OK(clock_getres(cc, &res));
    CHECK(res.tv_sec == 0 && res.tv_nsec > 0);
    sync_add(&step, 1);
    OK(pthread_join(c, NULL));
    OK(pthread_join(s, NULL));
    sync_destroy(&step);
}

/* Two threads compute in turns, each handing over to the other: each
 * one's own clock counts only its own turns. */
static atomic_int turn;
static uint64_t counted[2];

static void *takes_turns(void *arg)
{
    int me = (int)(intptr_t)arg;
    uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int round = 0; round < 4; round++) {
        while (atomic_load(&turn) != me)
            sched_yield();
        compute_for(10 * MS);
        atomic_store(&turn, 1 - me);
    }
    counted[me] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - start;
    return NULL;
}

static void own_clock_counts_own_time(void)
{
    atomic_store(&turn, 0);
    pthread_t t[2];
    uint64_t wall = clock_ns(CLOCK_MONOTONIC);
    for (int i = 0; i < 2; i++)
        OK(pthread_create(&t[i], NULL, takes_turns, (void *)(intptr_t)i));
    for (int i = 0; i < 2; i++)
        OK(pthread_join(t[i], NULL));
    wall = clock_ns(CLOCK_MONOTONIC) - wall;
    for (int i = 0; i < 2; i++) {
        CHECK(counted[i] >= 40 * MS);
        /* Waiting for its turn, it yields; computing, it is about half of
         * the two threads' time: never the other one's share on top. */
        CHECK(counted[i] < wall);
    }
}

static void *main_clock_from_thread(void *arg)
{
    clockid_t *mc = arg;
    uint64_t a = clock_ns(*mc);
    usleep(50000); /* main waits in pthread_join meanwhile */
    uint64_t b = clock_ns(*mc);
    CHECK(b - a < 30 * MS);
    return NULL;
}

static void initial_thread_has_a_clock(void)
{
    clockid_t mc;
    OK(pthread_getcpuclockid(pthread_self(), &mc));
    uint64_t a = clock_ns(mc);
    compute_for(20 * MS);
    CHECK(clock_ns(mc) - a >= 15 * MS);
    pthread_t t;
    OK(pthread_create(&t, NULL, main_clock_from_thread, &mc));
    OK(pthread_join(t, NULL));
}

int main(void)
{
    RUN_CASE(clock_of_other_threads, 20);
    RUN_CASE(own_clock_counts_own_time, 20);
    RUN_CASE(initial_thread_has_a_clock, 20);
    return 0;
}
