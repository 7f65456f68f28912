/* SPDX-License-Identifier: MIT */
/*
 * Sleeping: nanosleep, clock_nanosleep, usleep and sleep.
 *
 * The C library's versions sleep in the kernel, and the kernel thread with
 * them: until the monitor notices (runtime/carrier.c), the vproc runs
 * nothing else, and a thread that polls with short sleeps never lets it
 * notice at all (its carrier keeps using CPU time between ticks). On an ito
 * thread these park the thread instead, as ito_sleep_ns does: the vproc runs
 * the others, and the thread's timer makes it ready again. They are
 * cancellation points (posix/cancel.c): the sleep is interruptible.
 *
 * What stays the C library's: a kernel thread that ito did not create;
 * arguments the C library must judge (a bad timespec, a clock ito does not
 * sleep on: the CPU-time clocks), so that the error is exactly its. An
 * absolute sleep on CLOCK_REALTIME is turned into a monotonic deadline when
 * it begins; a change of the system time after that does not move it.
 * Nothing interrupts an ito thread's sleep but cancellation (ito threads do
 * not take signals of their own yet), so `rem` is never written.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "base/libc.h"
#include "posix/posix.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

#define NS_PER_S 1000000000ull


/* The calling ito thread sleeps until `deadline` (ito's clock; 0: for ever),
 * a cancellation point. */
static void sleep_until(uint64_t deadline)
{
    for (;;) {
        void *cp = ito__posix_cp_enter();
        int r = ito__posix_cp_leave(cp, ito__sleep_until(deadline));
        if (r != EINTR)
            return;   /* (EINTR: interrupted with no request behind it; sleep on) */
    }
}

static void sleep_for(uint64_t ns)
{
    if (ns == 0) {
        sched_yield();
        return;
    }
    uint64_t now = ito_now_ns();
    sleep_until(ns > UINT64_MAX - now ? 0 : now + ns);
}

static bool valid(const struct timespec *ts)
{
    return ts && ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < (long)NS_PER_S;
}

static uint64_t ns_of(const struct timespec *ts)
{
    if ((uint64_t)ts->tv_sec > UINT64_MAX / NS_PER_S - 1)
        return UINT64_MAX;
    return (uint64_t)ts->tv_sec * NS_PER_S + (uint64_t)ts->tv_nsec;
}

ITO_POSIX_API int nanosleep(const struct timespec *req, struct timespec *rem)
{
    if (!ito__thread_self() || !valid(req))
        return ito__libc_nanosleep(req, rem);
    sleep_for(ns_of(req));
    return 0;
}

ITO_POSIX_API int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
    if (!ito__thread_self() || !valid(req) ||
        (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC && clock != CLOCK_BOOTTIME && clock != CLOCK_TAI))
        return ito__libc_clock_nanosleep(clock, flags, req, rem);
    if (!(flags & TIMER_ABSTIME)) {
        sleep_for(ns_of(req));
        return 0;
    }
    uint64_t deadline;
    int e = ito__posix_deadline(clock, req, &deadline);
    if (e)
        return e;
    sleep_until(deadline);
    return 0;
}

ITO_POSIX_API int usleep(useconds_t us)
{
    if (!ito__thread_self())
        return ito__libc_usleep(us);
    sleep_for((uint64_t)us * 1000u);
    return 0;
}

ITO_POSIX_API unsigned sleep(unsigned s)
{
    if (!ito__thread_self())
        return ito__libc_sleep(s);
    sleep_for((uint64_t)s * NS_PER_S);
    return 0;
}
