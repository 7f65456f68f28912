/* SPDX-License-Identifier: MIT */
/*
 * epoll_wait, epoll_pwait and epoll_pwait2: the C library's wait, with no
 * EINTR that no handler of the program's caused.
 *
 * An event loop's thread waits in the kernel, not parked (posix/io.c says
 * why: it is faster). But the kernel ends an epoll wait with EINTR for more
 * than the program's signals, and never restarts it: posix/kernel_wait.c
 * waits again after those, and this file is the epoll wait it repeats.
 */
#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ito.h>

#include "posix/posix.h"
#include "runtime/critical.h"
#include "runtime/vproc.h"

#define NO_DEADLINE ITO__POSIX_NO_DEADLINE

struct epoll_args {
    int ep;
    struct epoll_event *ev;
    int max;
    bool ns;   /* to the ns (epoll_pwait2); otherwise in ms, rounded up */
};

/* Wait once, under mask, until the deadline. */
static int wait_once(void *arg, const sigset_t *mask, uint64_t deadline)
{
    struct epoll_args *a = arg;
    struct timespec ts, *left = ito__posix_time_left(deadline, &ts);
    if (!left)
        return ITO__POSIX_LIBC(epoll_pwait, "GLIBC_2.6")(a->ep, a->ev, a->max, -1, mask);
    if (a->ns)
        return ITO__POSIX_LIBC(epoll_pwait2, "GLIBC_2.35")(a->ep, a->ev, a->max, left, mask);
    uint64_t ms = ((uint64_t)left->tv_sec * 1000000000u + (uint64_t)left->tv_nsec + 999999u) / 1000000u;
    return ITO__POSIX_LIBC(epoll_pwait, "GLIBC_2.6")(a->ep, a->ev, a->max, ms > INT32_MAX ? INT32_MAX : (int)ms,
                                                     mask);
}

/* The wait of an ito thread of the POSIX face, until the deadline. */
static int wait_watched(int ep, struct epoll_event *ev, int max, uint64_t deadline, bool ns)
{
    struct epoll_args a = { ep, ev, max, ns };
    return ito__posix_kernel_wait(wait_once, &a, deadline);
}

/* The thread whose wait is ito's to watch, if the wait may sleep: an ito
 * thread of the POSIX face (callers have left out ito's own code). */
static bool watched(bool sleeps) { return sleeps && ito__thread_self(); }

static uint64_t deadline_ms(int timeout)
{
    return timeout < 0 ? NO_DEADLINE : ito_now_ns() + (uint64_t)timeout * 1000000u;
}

ITO_POSIX_API int epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
    if (ITO_UNLIKELY(ito__critical_depth() > 0))   /* (a handler in ito's code: no cancellation point) */
        return (int)syscall(SYS_epoll_pwait, ep, ev, max, timeout, mask, _NSIG / 8);
    if (!watched(timeout != 0))
        return ITO__POSIX_LIBC(epoll_pwait, "GLIBC_2.6")(ep, ev, max, timeout, mask);
    uint64_t deadline = deadline_ms(timeout), old;
    if (!mask)
        return wait_watched(ep, ev, max, deadline, false);
    int r = ito__posix_mask_begin(mask, &old) ? -1 : wait_watched(ep, ev, max, deadline, false);
    return ito__posix_mask_end(old, r);
}

ITO_POSIX_API int epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
    return epoll_pwait(ep, ev, max, timeout, NULL);
}

ITO_POSIX_API int epoll_pwait2(int ep, struct epoll_event *ev, int max, const struct timespec *timeout,
                               const sigset_t *mask)
{
    if (ITO_UNLIKELY(ito__critical_depth() > 0))
        return (int)syscall(SYS_epoll_pwait2, ep, ev, max, timeout, mask, _NSIG / 8);
    bool valid = !timeout || (timeout->tv_sec >= 0 && timeout->tv_nsec >= 0 && timeout->tv_nsec < 1000000000L);
    bool sleeps = !timeout || timeout->tv_sec || timeout->tv_nsec;
    if (!watched(valid && sleeps))   /* (an invalid timeout: the C library's EINVAL) */
        return ITO__POSIX_LIBC(epoll_pwait2, "GLIBC_2.35")(ep, ev, max, timeout, mask);
    uint64_t deadline = NO_DEADLINE, old;
    if (timeout && (uint64_t)timeout->tv_sec < UINT64_MAX / 4000000000u)
        deadline = ito_now_ns() + (uint64_t)timeout->tv_sec * 1000000000u + (uint64_t)timeout->tv_nsec;
    if (!mask)
        return wait_watched(ep, ev, max, deadline, true);
    int r = ito__posix_mask_begin(mask, &old) ? -1 : wait_watched(ep, ev, max, deadline, true);
    return ito__posix_mask_end(old, r);
}
