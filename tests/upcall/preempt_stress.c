/* SPDX-License-Identifier: MIT */
/* Recovery: time slices end at random points — in the threads' own code and
 * inside ito's critical sections — while threads hammer ito's mutexes, ready
 * queues, descriptor and stack pools. Every count must come out exact, and
 * nothing may deadlock.
 *
 * Workers run phases of a few milliseconds, each of one kind of operation:
 * spawning children (that count and exit; joined in batches), spawning a
 * child and joining it at once (the join's claim and its publication of the
 * joiner must not be split by a slice), locking a
 * mutex shared by all workers, a private mutex, semaphore hand-offs between
 * pairs of workers, bursts of computation. A phase does not switch by itself
 * (contention aside), so a vproc runs one worker for whole time slices
 * (ITO_TIMESLICE_US is short here) and the slice ends inside whatever it is
 * doing. The run lasts PREEMPT_STRESS_SECONDS (default 5; the TSan build
 * runs it for minutes), and goes on — for up to a minute more — until at least
 * one slice has ended in the threads' own code and one inside a critical
 * section: on a loaded machine a fixed time may see neither, and under TSan
 * (which defers signals) one vproc's slices rarely end outside a section. */
#include <stdio.h>
#include <stdlib.h>

#include <ito.h>

#include "common.h"

#define NWORKERS 8
#define NSHARED 4
#define BATCH 2048

static ito_mutex_t shared[NSHARED];
static uint64_t shared_count[NSHARED];          /* under shared[i] */
static _Atomic uint64_t shared_expected[NSHARED];
static _Atomic uint64_t children_run, children_spawned;
static ito_sem_t sems[NWORKERS];
static _Atomic uint64_t posts, waits;
static uint64_t deadline_ns, give_up_ns;

/* Past the deadline, once one slice has ended in the threads' own code and
 * one inside a critical section (or at give_up_ns). */
static bool done(void)
{
    uint64_t now = ito_now_ns();
    if (now < deadline_ns)
        return false;
    ito_stats_t st;
    OK(ito_stats_get(&st));
    return (st.preemptions > 0 && st.recoveries > 0) || now >= give_up_ns;
}

static void *child(void *arg)
{
    volatile uint64_t x = (uint64_t)(uintptr_t)arg;
    for (int i = 0; i < 200; i++)
        x = x * 6364136223846793005ull + 1;
    atomic_fetch_add_explicit(&children_run, 1, memory_order_relaxed);
    return NULL;
}

static void burst(uint64_t *seed)
{
    volatile uint64_t x = *seed;
    unsigned n = (unsigned)(test_rand(seed) % 200);
    for (unsigned i = 0; i < n; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
}

/* A phase: a few milliseconds of one kind of operation that does not switch
 * by itself (contention aside), so that slices end in the middle of it. */
static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seed = 0x243f6a8885a308d3ull ^ (uint64_t)id * 0x9e3779b97f4a7c15ull;
    ito_mutex_t mine;
    OK(ito_mutex_init(&mine));
    uint64_t mine_count = 0, mine_expected = 0;
    ito_thread_t *kids = calloc(BATCH, sizeof *kids);
    CHECK(kids != NULL);
    int nkids = 0;
    while (!done()) {
        uint64_t phase_end = ito_now_ns() + 1000000u + test_rand(&seed) % 10000000u;
        int kind = (int)(test_rand(&seed) % 6);
        while (ito_now_ns() < phase_end) {
            for (int rep = 0; rep < 64; rep++) {
                switch (kind) {
                case 0:   /* spawn: the descriptor and stack pools, the ready queues */
                    if (nkids == BATCH) {
                        for (int i = 0; i < nkids; i++)
                            OK(ito_join(kids[i], NULL));
                        nkids = 0;
                    }
                    OK(ito_spawn(&kids[nkids++], NULL, child, (void *)(uintptr_t)seed));
                    atomic_fetch_add_explicit(&children_spawned, 1, memory_order_relaxed);
                    break;
                case 1: {   /* a mutex shared by all workers */
                    int m = (int)(test_rand(&seed) % NSHARED);
                    OK(ito_mutex_lock(&shared[m]));
                    shared_count[m]++;
                    OK(ito_mutex_unlock(&shared[m]));
                    atomic_fetch_add_explicit(&shared_expected[m], 1, memory_order_relaxed);
                    break;
                }
                case 2:   /* a private mutex: never contended */
                    OK(ito_mutex_lock(&mine));
                    mine_count++;
                    OK(ito_mutex_unlock(&mine));
                    mine_expected++;
                    break;
                case 3:   /* semaphores: hand a token to the partner, take one back */
                    OK(ito_sem_post(&sems[id ^ 1]));
                    atomic_fetch_add_explicit(&posts, 1, memory_order_relaxed);
                    if (ito_sem_trywait(&sems[id]) == 0)
                        atomic_fetch_add_explicit(&waits, 1, memory_order_relaxed);
                    break;
                case 4: {   /* fork-join: the join usually finds the child not yet run */
                    ito_thread_t t;
                    OK(ito_spawn(&t, NULL, child, (void *)(uintptr_t)seed));
                    atomic_fetch_add_explicit(&children_spawned, 1, memory_order_relaxed);
                    OK(ito_join(t, NULL));
                    break;
                }
                default:
                    burst(&seed);
                    break;
                }
            }
        }
        /* Between phases, sometimes let the others run on purpose. */
        if (test_rand(&seed) % 4 == 0)
            ito_yield();
    }
    for (int i = 0; i < nkids; i++)
        OK(ito_join(kids[i], NULL));
    free(kids);
    CHECK_EQ(mine_count, mine_expected);
    OK(ito_mutex_destroy(&mine));
    return NULL;
}

int main(void)
{
    const char *secs_env = getenv("PREEMPT_STRESS_SECONDS");
    long secs = secs_env ? atol(secs_env) : 5;
    if (secs < 1)
        secs = 1;
    OK(ito_init(NULL));
    for (int i = 0; i < NSHARED; i++)
        OK(ito_mutex_init(&shared[i]));
    for (int i = 0; i < NWORKERS; i++)
        OK(ito_sem_init(&sems[i], 0));
    deadline_ns = ito_now_ns() + (uint64_t)secs * 1000000000u;
    give_up_ns = deadline_ns + 60 * 1000000000ull;
    ito_thread_t w[NWORKERS];
    for (int i = 0; i < NWORKERS; i++)
        OK(ito_spawn(&w[i], NULL, worker, (void *)(intptr_t)i));
    for (int i = 0; i < NWORKERS; i++)
        OK(ito_join(w[i], NULL));

    for (int i = 0; i < NSHARED; i++)
        CHECK_EQ(shared_count[i], atomic_load(&shared_expected[i]));
    CHECK_EQ(atomic_load(&children_run), atomic_load(&children_spawned));
    /* Every post is still in a semaphore or was taken. */
    uint64_t left = 0;
    for (int i = 0; i < NWORKERS; i++) {
        while (ito_sem_trywait(&sems[i]) == 0)
            left++;
        OK(ito_sem_destroy(&sems[i]));
    }
    CHECK_EQ(atomic_load(&posts), atomic_load(&waits) + left);
    ito_stats_t st;
    OK(ito_stats_get(&st));
    printf("preempt_stress: %.1fs, %llu children, %llu preemptions, %llu recovered at the end of "
           "a critical section\n",
           (double)(ito_now_ns() - deadline_ns) / 1e9 + (double)secs,
           (unsigned long long)atomic_load(&children_run), (unsigned long long)st.preemptions,
           (unsigned long long)st.recoveries);
    CHECK(st.preemptions > 0);
    CHECK(st.recoveries > 0);
    return 0;
}
