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
 * A signal sent to the thread (posix/signal.c) ends the sleep as the
 * C library's: its handler runs, and the call fails with EINTR and the time
 * left in `rem` (sleep returns the seconds left).
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
 * a cancellation point: 0, or EINTR if a signal's handler ran (then *left,
 * if asked, is the time that was left). */
static int sleep_until(uint64_t deadline, uint64_t *left)
{
    for (;;) {
        void *cp = ito__posix_cp_enter();
        int r = ito__posix_cp_leave(cp, ito__sleep_until(deadline));
        if (r == EINTR || r == ITO__CP_RESTART) {   /* (sleeps are never restarted) */
            if (left) {
                uint64_t now = ito_now_ns();
                *left = deadline > now ? deadline - now : 0;
            }
            return EINTR;
        }
        if (r != ITO__CP_AGAIN)
            return 0;
    }
}

static int sleep_for(uint64_t ns, uint64_t *left)
{
    if (ns == 0) {
        sched_yield();
        return 0;
    }
    uint64_t now = ito_now_ns();
    return sleep_until(ns > UINT64_MAX - now ? 0 : now + ns, left);
}

static void to_timespec(uint64_t ns, struct timespec *ts)
{
    ts->tv_sec = (time_t)(ns / NS_PER_S);
    ts->tv_nsec = (long)(ns % NS_PER_S);
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
    uint64_t left;
    if (sleep_for(ns_of(req), &left) == EINTR) {
        if (rem)
            to_timespec(left, rem);
        errno = EINTR;
        return -1;
    }
    return 0;
}

ITO_POSIX_API int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
    if (!ito__thread_self() || !valid(req) ||
        (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC && clock != CLOCK_BOOTTIME && clock != CLOCK_TAI))
        return ito__libc_clock_nanosleep(clock, flags, req, rem);
    if (!(flags & TIMER_ABSTIME)) {
        uint64_t left;
        if (sleep_for(ns_of(req), &left) == EINTR) {
            if (rem)
                to_timespec(left, rem);
            return EINTR;
        }
        return 0;
    }
    uint64_t deadline;
    int e = ito__posix_deadline(clock, req, &deadline);
    if (e)
        return e;
    return sleep_until(deadline, NULL);   /* (an absolute sleep leaves rem alone) */
}

ITO_POSIX_API int usleep(useconds_t us)
{
    if (!ito__thread_self())
        return ito__libc_usleep(us);
    if (sleep_for((uint64_t)us * 1000u, NULL) == EINTR) {
        errno = EINTR;
        return -1;
    }
    return 0;
}

ITO_POSIX_API unsigned sleep(unsigned s)
{
    if (!ito__thread_self())
        return ito__libc_sleep(s);
    uint64_t left;
    if (sleep_for((uint64_t)s * NS_PER_S, &left) == EINTR)
        return (unsigned)((left + NS_PER_S - 1) / NS_PER_S);   /* the seconds left, rounded up */
    return 0;
}
