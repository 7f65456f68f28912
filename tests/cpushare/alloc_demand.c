/* SPDX-License-Identifier: MIT */
/*
 * Demand that no time slice shows (upcall/preempt.c): a process that lost
 * processors asks for them back when its threads wait for its vprocs,
 * even though they block every half millisecond at a barrier and so never
 * use up a slice.
 *
 *   - A computing process of lower priority starts beside us.
 *   - We sleep: our vprocs declare themselves idle and the other takes all
 *     but the one we always keep.
 *   - Our threads then compute in rounds of 500 us with an ito_barrier, a
 *     thread per vproc. They wait for our one processor; that wait is the
 *     demand: we get every processor back.
 * The waits are for conditions, with a generous cap; no time is asserted.
 * Run in the test's own domain (ITO_ALLOC_DOMAIN, set by ctest).
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc_wait.h"
#include "common.h"

static atomic_bool stop;
static ito_barrier_t barrier;

static void spin_us(uint64_t us)
{
    uint64_t end = ito_now_ns() + us * 1000;
    while (ito_now_ns() < end)
        ;
}

/* The other process: a computing thread per vproc, forever. */
static void *hog(void *arg)
{
    (void)arg;
    for (;;)
        spin_us(1000);
    return NULL;
}

/* Rounds until stop; all leave after the same round (the serial thread
 * reads stop between two barriers). */
static bool done;

static void *rounds(void *arg)
{
    (void)arg;
    for (;;) {
        spin_us(500);
        if (ito_barrier_wait(&barrier) == ITO_BARRIER_SERIAL)
            done = atomic_load(&stop);
        ito_barrier_wait(&barrier);
        if (done)
            return NULL;
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "hog")) {
        OK(ito_init(NULL));
        for (int k = 1; k < ito_vproc_count(); k++) {
            ito_thread_t t;
            OK(ito_spawn(&t, NULL, hog, NULL));
        }
        hog(NULL);
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    OK(ito_init(NULL));
    int n = ito_vproc_count();
    if (!info().enabled || n < 2) {
        printf("alloc_demand: %s: nothing to take back\n", n < 2 ? "1 vproc" : "no allocator");
        return 0;
    }
    OK(ito_alloc_set_priority(5));
    pid_t other = fork();
    CHECK(other >= 0);
    if (other == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* no orphan if we abort */
        setenv("ITO_PRIORITY", "0", 1);
        execl(argv[0], argv[0], "hog", (char *)NULL);
        _exit(127);
    }
    /* Idle beside it: we keep one processor. */
    double ms = AWAIT(info().processes == 2 && info().held == 1);
    printf("alloc_demand: idle beside a busy process: 1 of %d vprocs kept after %.1f ms\n", n, ms);

    /* Threads that block at a barrier every 500 us and wait for our one
     * processor: they end no slice, yet we get the others back. */
    ito_thread_t t[64];
    int m = n < 64 ? n : 64;
    OK(ito_barrier_init(&barrier, (unsigned)m));
    for (int k = 0; k < m; k++)
        OK(ito_spawn(&t[k], NULL, rounds, NULL));
    ms = AWAIT(info().held >= m);
    printf("alloc_demand: %d threads waiting at a barrier: %d vprocs held after %.1f ms\n", m, info().held, ms);
    atomic_store(&stop, true);
    kill(other, SIGKILL);
    CHECK(waitpid(other, NULL, 0) == other);
    /* The barrier releases everyone once more at most. */
    for (int k = 0; k < m; k++)
        OK(ito_join(t[k], NULL));
    OK(ito_barrier_destroy(&barrier));
    return 0;
}
