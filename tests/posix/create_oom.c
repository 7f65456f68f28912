/* SPDX-License-Identifier: MIT */
/* POSIX conformance: pthread_create when memory runs out. "[EAGAIN] The
 * system lacked the necessary resources to create another thread": a child
 * process under RLIMIT_AS creates threads that wait on a semaphore until
 * pthread_create fails; that must be EAGAIN, every thread created before
 * must run, a create must succeed again once some have been joined, and all
 * must be joined.
 *
 * Left out because glibc deviates from POSIX: none known.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/resource.h>

#include "conform.h"

#define CAP 100000   /* creates at most: the limit must be reached before */

static sem_t gate;
static atomic_long started, ending, finished;
static long finished_ids[CAP];   /* which threads have ended, in order */
static pthread_t ts[CAP];
static bool joined[CAP];

static void *parked(void *arg)
{
    atomic_fetch_add(&started, 1);
    while (sem_wait(&gate) != 0)
        CHECK_EQ(errno, EINTR);
    finished_ids[atomic_fetch_add(&ending, 1)] = (long)(intptr_t)arg;
    atomic_fetch_add(&finished, 1);   /* (after its id) */
    return arg;
}

static void *quick(void *arg) { return arg; }

/* Yield until cond holds, for at most 15 s: no timed wait, which may need
 * memory of its own. */
#define YIELD_UNTIL(cond)                                                               \
    do {                                                                                \
        uint64_t give_up_ = conform_now(CLOCK_MONOTONIC) + 15000000000ull;              \
        while (!(cond)) {                                                               \
            CHECK(conform_now(CLOCK_MONOTONIC) < give_up_);                             \
            sched_yield();                                                              \
        }                                                                               \
    } while (0)

static void limit_as(void)
{
    /* What the process has mapped now, and 256 MiB more: a few dozen stacks
     * of the default 8 MiB. */
    FILE *f = fopen("/proc/self/statm", "r");
    CHECK(f);
    unsigned long pages = 0;
    CHECK_EQ(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    rlim_t lim = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)256 << 20);
    struct rlimit rl = { lim, lim };
    CHECK_EQ(setrlimit(RLIMIT_AS, &rl), 0);
}

static void create_until_eagain(void)
{
    conform_case = "create_until_eagain";
    CHECK_EQ(sem_init(&gate, 0, 0), 0);
    pthread_t t;
    OK(pthread_create(&t, NULL, quick, NULL));   /* (threads set up before the limit) */
    OK(pthread_join(t, NULL));
    limit_as();

    long n = 0;
    int e;
    while ((e = pthread_create(&ts[n], NULL, parked, (void *)(intptr_t)n)) == 0 && ++n < CAP)
        ;
    CHECK_EQ(e, EAGAIN);
    CHECK(n >= 4);
    YIELD_UNTIL(atomic_load(&started) == n);

    long k = n / 2;
    for (long i = 0; i < k; i++) {
        CHECK_EQ(sem_post(&gate), 0);
        YIELD_UNTIL(atomic_load(&finished) == i + 1);
    }
    for (long i = 0; i < k; i++) {
        void *r;
        OK(pthread_join(ts[finished_ids[i]], &r));
        CHECK_EQ((intptr_t)r, finished_ids[i]);
        joined[finished_ids[i]] = true;
    }
    OK(pthread_create(&t, NULL, quick, NULL));
    OK(pthread_join(t, NULL));

    for (long i = k; i < n; i++)
        CHECK_EQ(sem_post(&gate), 0);
    for (long i = 0; i < n; i++) {
        void *r;
        if (!joined[i]) {
            OK(pthread_join(ts[i], &r));
            CHECK_EQ((intptr_t)r, i);
        }
    }
    CHECK_EQ(atomic_load(&finished), n);
    printf("create_oom: EAGAIN after %ld threads\n", n);
}

int main(void)
{
    /* In a child: the limit is the process's for good. */
    pid_t pid = conform_fork(30);
    if (pid == 0) {
        create_until_eagain();
        fflush(stdout);
        _exit(0);
    }
    conform_reap(pid, 0);
    printf("create_oom: ok\n");
    return 0;
}
