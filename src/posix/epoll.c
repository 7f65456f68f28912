/* SPDX-License-Identifier: MIT */
/*
 * epoll_wait, epoll_pwait and epoll_pwait2: the C library's wait, with no
 * EINTR that no handler of the program's caused.
 *
 * An event loop's thread waits in the kernel, not parked (posix/io.c says
 * why: it is faster). But the kernel ends an epoll wait with EINTR for more
 * than the program's signals, and never restarts it:
 *   - the poke signal (posix/cancel.c) sent to a kernel thread for the ito
 *     thread it carried a moment ago, which has moved on;
 *   - the completions of io_uring requests that the kernel thread submitted
 *     for other threads it ran (the rings: runtime/ring.c). The kernel runs
 *     a completion's task work on the submitting kernel thread, and makes
 *     its waits end as a signal would (TIF_NOTIFY_SIGNAL) to get it run; a
 *     poll or read restarts afterwards, an epoll wait returns EINTR. Both
 *     remedies io_uring offers fall short here: IORING_SETUP_COOP_TASKRUN
 *     only stops waking a sleeper (one that enters the wait after the
 *     completion still fails), and IORING_SETUP_DEFER_TASKRUN wants a
 *     single submitting kernel thread per ring, where a vproc's ring is
 *     used by each kernel thread that carries the vproc in turn.
 * A program's event loop would see EINTR that no signal of its own caused,
 * which POSIX threads never show it.
 *
 * So the wait is made with every signal blocked but ito's own (in the same
 * system call, epoll_pwait's mask), and an EINTR counts only if a handler of
 * the program's ran for it; otherwise the wait goes on for the time left.
 * The program's signals reach the thread by the two roads the rest of the
 * POSIX face already has:
 *   - a signal sent to the thread (pthread_kill) pokes its kernel thread;
 *     the poke's handler raises it there, where the wait's mask keeps it
 *     pending until the wait has ended and the kernel puts back the thread's
 *     mask; its handler runs then, before the call returns EINTR. The
 *     raising counts (sig_raised);
 *   - a signal for the process finds the thread's kernel thread blocking
 *     it; if no other thread takes it, the router (posix/sigroute.c) sees
 *     it kept for the process and this thread marked (kernel_wait), marks
 *     it nudged and pokes it: the poke's handler counts it, and the kernel
 *     delivers the signal as the wait ends.
 * What it costs: the mask goes in with the system call (the kernel sets it
 * and puts it back), two stores and a load of the thread's own lines.
 * A thread cancelled in the wait is unwound from the poke's handler, as in
 * the C library's call (the same call, a cancellation point).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ito.h>

#include "posix/posix.h"
#include "runtime/critical.h"
#include "runtime/sigmask.h"
#include "runtime/thread.h"

#define NO_DEADLINE UINT64_MAX

/* Wait once, with every signal but ito's blocked, until the deadline (ns:
 * to the ns, with epoll_pwait2; otherwise in ms, rounded up). */
static int wait_once(int ep, struct epoll_event *ev, int max, uint64_t deadline, bool ns)
{
    sigset_t blocked = ito__posix_sigset(~ito__sigmask_reserved());
    if (deadline == NO_DEADLINE)
        return ITO__POSIX_LIBC(epoll_pwait, "GLIBC_2.6")(ep, ev, max, -1, &blocked);
    uint64_t now = ito_now_ns(), left = deadline > now ? deadline - now : 0;
    if (ns) {
        struct timespec ts = { .tv_sec = (time_t)(left / 1000000000u), .tv_nsec = (long)(left % 1000000000u) };
        return ITO__POSIX_LIBC(epoll_pwait2, "GLIBC_2.35")(ep, ev, max, &ts, &blocked);
    }
    uint64_t ms = (left + 999999u) / 1000000u;
    return ITO__POSIX_LIBC(epoll_pwait, "GLIBC_2.6")(ep, ev, max, ms > INT32_MAX ? INT32_MAX : (int)ms, &blocked);
}

/* The wait of an ito thread of the POSIX face (pt), until the deadline. */
static int wait_watched(struct ito__pthread *pt, int ep, struct epoll_event *ev, int max, uint64_t deadline, bool ns)
{
    ito__posix_sigroute_start();   /* (once) the process's signals reach it by the router */
    int e0 = errno;
    for (;;) {
        /* Relaxed: the counter is written by this thread's own handlers,
         * which run on its kernel thread inside the system call. The flag
         * is read by the router; the kernel's signal lock orders it (sigroute.c). */
        unsigned seen = atomic_load_explicit(&pt->sig_raised, memory_order_relaxed);
        atomic_store_explicit(&pt->kernel_wait, true, memory_order_relaxed);
        int r = wait_once(ep, ev, max, deadline, ns);
        int e = errno;
        atomic_store_explicit(&pt->kernel_wait, false, memory_order_relaxed);
        if (r >= 0 || e != EINTR || atomic_load_explicit(&pt->sig_raised, memory_order_relaxed) != seen) {
            errno = e;
            return r;
        }
        /* ito's own EINTR: wait again, for the time left. */
        if (deadline != NO_DEADLINE && ito_now_ns() >= deadline) {
            errno = e0;
            return 0;
        }
    }
}

/* The thread whose wait is ito's to watch, if the wait may sleep: an ito
 * thread of the POSIX face (callers have left out ito's own code). */
static struct ito__pthread *watched(bool sleeps)
{
    return sleeps && ito__thread_self() ? ito__pthread_self() : NULL;
}

static uint64_t deadline_ms(int timeout)
{
    return timeout < 0 ? NO_DEADLINE : ito_now_ns() + (uint64_t)timeout * 1000000u;
}

ITO_POSIX_API int epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
    if (ITO_UNLIKELY(ito__critical_depth() > 0))   /* (a handler in ito's code: no cancellation point) */
        return (int)syscall(SYS_epoll_pwait, ep, ev, max, timeout, mask, _NSIG / 8);
    struct ito__pthread *pt = watched(timeout != 0);
    if (!pt)
        return ITO__POSIX_LIBC(epoll_pwait, "GLIBC_2.6")(ep, ev, max, timeout, mask);
    uint64_t deadline = deadline_ms(timeout), old;
    if (!mask)
        return wait_watched(pt, ep, ev, max, deadline, false);
    int r = ito__posix_mask_begin(mask, &old) ? -1 : wait_watched(pt, ep, ev, max, deadline, false);
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
    struct ito__pthread *pt = watched(valid && sleeps);
    if (!pt)   /* (an invalid timeout: the C library's EINVAL) */
        return ITO__POSIX_LIBC(epoll_pwait2, "GLIBC_2.35")(ep, ev, max, timeout, mask);
    uint64_t deadline = NO_DEADLINE, old;
    if (timeout && (uint64_t)timeout->tv_sec < UINT64_MAX / 4000000000u)
        deadline = ito_now_ns() + (uint64_t)timeout->tv_sec * 1000000000u + (uint64_t)timeout->tv_nsec;
    if (!mask)
        return wait_watched(pt, ep, ev, max, deadline, true);
    int r = ito__posix_mask_begin(mask, &old) ? -1 : wait_watched(pt, ep, ev, max, deadline, true);
    return ito__posix_mask_end(old, r);
}
