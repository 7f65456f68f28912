/* SPDX-License-Identifier: MIT */
/* Running out of memory in a timed wait (issue 22, item 2): a wait's timer
 * goes into its vproc's heap, which grows as more threads wait at once; when
 * it cannot grow, the timer must still be armed (runtime/timer.c: the spill
 * list), never abort the process ("out of memory while arming a timer").
 *
 * With 2 vprocs, THREADS threads parked on a semaphore; then every allocation
 * in the process fails (tests/malloc_fail.h) and they are let go, all at
 * once: each sleeps three times (0.5-2 ms), times out on a semaphore and on
 * a condition variable (1 ms), so that far more timers are armed at once
 * than the heaps had room for. Every sleep must last at least what it asked,
 * every timed wait must end with ETIMEDOUT no earlier than its deadline, and
 * the allocator must have been asked (and refused). Then memory comes back
 * and the same threads wait again, each with a stale record in a list that
 * is taken out before it arms; all are joined. Spawns made while memory is
 * short succeed or fail with EAGAIN. Not under sanitizers: they
 * replace the allocator themselves. */
#include "common.h"
#include "../malloc_fail.h"

enum { THREADS = 3000, SLEEPS = 3 };

static ito_sem_t gate[2], never;   /* a gate per round: a thread done early must not take a later one's post */
static ito_mutex_t mu = ITO_MUTEX_INIT;
static ito_cond_t cv = ITO_COND_INIT;
static _Atomic long round_done[2];

static void timed_waits(uint64_t seed)
{
    for (int i = 0; i < SLEEPS; i++) {
        uint64_t ns = 500000 + test_rand(&seed) % 1500000, t0 = ito_now_ns();
        OK(ito_sleep_ns(ns));
        CHECK(ito_now_ns() - t0 >= ns);
    }
    struct timespec dl = test_deadline_in(1000000);
    CHECK_EQ(ito_sem_timedwait(&never, &dl), ETIMEDOUT);
    CHECK(ito_now_ns() >= (uint64_t)dl.tv_sec * 1000000000u + (uint64_t)dl.tv_nsec);
    dl = test_deadline_in(1000000);
    OK(ito_mutex_lock(&mu));
    int e;
    while ((e = ito_cond_timedwait(&cv, &mu, &dl)) == 0) {}   /* (nobody signals it) */
    CHECK_EQ(e, ETIMEDOUT);
    OK(ito_mutex_unlock(&mu));
    CHECK(ito_now_ns() >= (uint64_t)dl.tv_sec * 1000000000u + (uint64_t)dl.tv_nsec);
}

static void *quick(void *arg) { return arg; }

static void *waiter(void *arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    for (int r = 0; r < 2; r++) {
        OK(ito_sem_wait(&gate[r]));
        timed_waits(seed + (uint64_t)r);
        atomic_fetch_add(&round_done[r], 1);
    }
    return arg;
}

/* Yield until n threads have ended round r (no timed wait of main's: it would
 * not tell a hang from a slow machine). */
static void await_round(int r, long n)
{
    uint64_t end = ito_now_ns() + 60000000000ull;
    while (atomic_load(&round_done[r]) < n) {
        if (ito_now_ns() > end) {
            fprintf(stderr, "malloc_fail: round %d: %ld of %ld threads done after 60 s\n", r,
                    atomic_load(&round_done[r]), n);
            abort();
        }
        ito_yield();
    }
}

int main(void)
{
    ito_config_t c = ITO_CONFIG_INIT;
    c.vprocs = 2;
    OK(ito_init(&c));
    OK(ito_sem_init(&gate[0], 0));
    OK(ito_sem_init(&gate[1], 0));
    OK(ito_sem_init(&never, 0));
    long n = test_scaled(THREADS);
    if (n < 300)
        n = 300;   /* more than the heaps' first room (64 each) */
    ito_thread_t *ts = calloc((size_t)n, sizeof *ts);
    CHECK(ts);
    for (long i = 0; i < n; i++)
        OK(ito_spawn(&ts[i], NULL, waiter, (void *)(intptr_t)i));

    malloc_fail(true);
    for (long i = 0; i < n; i++)
        OK(ito_sem_post(&gate[0]));
    /* Spawns meanwhile: each succeeds or says EAGAIN (descriptors and stacks
     * come from caches and mappings, not malloc). */
    long spawned = 0, refused_spawns = 0;
    for (int i = 0; i < 100; i++) {
        ito_thread_t t;
        int e = ito_spawn(&t, NULL, quick, (void *)(intptr_t)i);
        if (e == 0) {
            void *r;
            OK(ito_join(t, &r));
            CHECK_EQ((intptr_t)r, i);
            spawned++;
        } else {
            CHECK_EQ(e, EAGAIN);
            refused_spawns++;
        }
    }
    await_round(0, n);
    malloc_fail(false);
    long refused = atomic_load(&malloc_fail_refused);
    CHECK(refused > 0);   /* the heaps asked to grow */

    for (long i = 0; i < n; i++)
        OK(ito_sem_post(&gate[1]));
    await_round(1, n);
    for (long i = 0; i < n; i++) {
        void *r;
        OK(ito_join(ts[i], &r));
        CHECK_EQ((intptr_t)r, i);
    }
    printf("malloc_fail: ok: %ld threads, %d timed waits each with allocations failing "
           "(%ld refused), and again with memory back; meanwhile %ld spawns ran, %ld got EAGAIN\n",
           n, SLEEPS + 2, refused, spawned, refused_spawns);
    free(ts);
    return 0;
}
