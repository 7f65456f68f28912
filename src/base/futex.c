/* SPDX-License-Identifier: MIT */
#include "base/futex.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int wait(_Atomic uint32_t *word, uint32_t expected, uint64_t deadline_ns, int private)
{
    struct timespec ts, *tsp = NULL;
    if (deadline_ns) {
        ts.tv_sec = (time_t)(deadline_ns / 1000000000u);
        ts.tv_nsec = (long)(deadline_ns % 1000000000u);
        tsp = &ts;
    }
    /* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline. */
    long r = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_BITSET | private, expected, tsp, NULL,
                     FUTEX_BITSET_MATCH_ANY);
    return r == 0 ? 0 : errno;
}

int ito__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t deadline_ns)
{
    return wait(word, expected, deadline_ns, FUTEX_PRIVATE_FLAG);
}

void ito__futex_wake(_Atomic uint32_t *word, int n)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, NULL, NULL, 0);
}

int ito__futex_wait_shared(_Atomic uint32_t *word, uint32_t expected, uint64_t deadline_ns)
{
    return wait(word, expected, deadline_ns, 0);
}

void ito__futex_wake_shared(_Atomic uint32_t *word, int n)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, n, NULL, NULL, 0);
}

/* The slow path of ito__spin_lock: spin on a plain load (no cache-line
 * ping-pong), back off, and after a long while let the kernel run the holder
 * (which may have been preempted). */
