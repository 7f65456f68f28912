/* SPDX-License-Identifier: MIT */
/* Regression: a thread suspended while parked in ito_poll on several
 * descriptors, then restarted with ito_set_entry, must not leave the kernel
 * writing into its old stack. ito_poll's first completion (one pipe becomes
 * readable) cancels the other polls and the timeout; the thread's wait ends
 * only when all have completed, so by the time it stops as SUSPENDED nothing
 * refers to its stack any more. Before that rule, the new entry reused the
 * stack and the late completions dereferenced garbage (a crash in the ring's
 * reaper). Runs on one vproc and on two. */
#include <poll.h>
#include <unistd.h>

#include "common.h"

static int pa[2], pb[2];
static atomic_int polled, fresh_ran;

static void *poller(void *arg)
{
    struct pollfd fds[2] = { { pa[0], POLLIN, 0 }, { pb[0], POLLIN, 0 } };
    atomic_store(&polled, 1);
    ito_poll(fds, 2, 200);
    return NULL;
}

/* Scribbles over the stack the poller's frames used. */
static void *fresh(void *arg)
{
    volatile char junk[32768];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)0xa5;
    atomic_store(&fresh_ran, 1);
    ito_sleep_ns(300 * 1000000u);   /* past the old timeout: its completion would come now */
    return NULL;
}

int main(void)
{
    alarm(60);
    for (int round = 0; round < (int)test_scaled(20) + 1; round++) {
        CHECK(pipe(pa) == 0 && pipe(pb) == 0);
        atomic_store(&polled, 0);
        atomic_store(&fresh_ran, 0);
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, poller, NULL));
        while (!atomic_load(&polled))
            ito_yield();
        ito_sleep_ns(5 * 1000000u);   /* parked in ito_poll */
        OK(ito_suspend(t));
        CHECK(write(pa[1], "x", 1) == 1);
        int e;
        while ((e = ito_set_entry(t, fresh, NULL)) == EBUSY)
            ito_sleep_ns(1000000u);   /* its wait has not ended yet */
        OK(e);
        OK(ito_resume(t));
        OK(ito_join(t, NULL));
        CHECK_EQ(atomic_load(&fresh_ran), 1);
        close(pa[0]), close(pa[1]), close(pb[0]), close(pb[1]);
    }
    printf("io_poll_suspend: passed\n");
    return 0;
}
