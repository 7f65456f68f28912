/* SPDX-License-Identifier: MIT */
/* Sleeping: a timed wait that nothing but its timer ends. */
#include <errno.h>
#include <time.h>

#include <ito.h>

#include "base/clock.h"
#include "base/libc.h"
#include "runtime/critical.h"
#include "runtime/runtime.h"
#include "runtime/thread.h"
#include "runtime/wait.h"

ITO_API uint64_t ito_now_ns(void) { return ito__now_ns(); }

int ito__sleep_ns(uint64_t ns)
{
    struct ito__thread *self = ito__thread_self();
    uint64_t now = ito__now_ns();
    uint64_t deadline = ns > UINT64_MAX - now ? UINT64_MAX : now + ns;
    if (!self) {
        /* A foreign kernel thread sleeps in the kernel, through signals. */
        struct timespec ts = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };
        while (ito__libc_clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        return 0;
    }
    if (ns == 0) {
        ito__yield();
        return 0;
    }
    ito__sleep_until(deadline);
    return 0;
}

int ito__sleep_until(uint64_t deadline)
{
    ito__critical_none();
    struct ito__waiter *w = ito__waiter_init(NULL);
    ito__wait_begin(w, deadline, NULL, NULL, ITO__ON_SLEEP, NULL);
    return ito__wait_end(w, NULL, NULL) == EINTR ? EINTR : 0;
}
