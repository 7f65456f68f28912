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
 * So the call blocks every signal a thread may block on its kernel thread
 * (the runtime's record of that kernel thread's mask kept true), and the
 * poke too until the system call lets it in (a poke that came meanwhile
 * then ends the wait as it begins, as pselect's mask does), waits, and
 * after an EINTR waits again for the time left unless a handler of the
 * program's is due: a signal sent to the thread that it accepts (ito's:
 * sig_pending), or one the kernel keeps that it accepts (rt_sigpending,
 * less those ignored). Then, its mask back, the kernel runs the handlers of
 * those it keeps, the call raises the thread's own, and returns EINTR. The
 * program's signals end the wait by the two roads the rest of the POSIX
 * face has:
 *   - a signal sent to the thread (pthread_kill) pokes its kernel thread; the
 *     poke's handler raises nothing while the thread is marked (kernel_wait):
 *     there it would stay pending on a kernel thread that the thread may
 *     leave (a vproc taken while it slept is given up at the next section);
 *   - a signal for the process finds this kernel thread blocking it; if no
 *     other thread takes it, the router (posix/sigroute.c) sees it kept and
 *     this thread marked, and pokes it.
 * A thread that a time slice switched to another kernel thread in this
 * file resumes with the mask its signal frame holds, whatever the record
 * says: the mask is always written, never compared. One switched by a
 * critical section's deferred end between blocking and waiting waited
 * under its own mask: a handler may have run unseen, so its EINTR is the
 * program's. A thread cancelled in the wait unwinds through this frame,
 * which puts its mask back first (built with -fexceptions for that).
 *
 * What it costs: two mask writes (system calls; the kernel sets and puts
 * back the wait's mask inside the call) and a few loads and stores of the
 * thread's own lines per call; once a thread has waited here, every switch
 * compares masks (runtime/sigmask.h).
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
#include "runtime/vproc.h"

#define NO_DEADLINE UINT64_MAX
#define POKE_BIT ITO__SIGBIT(32)   /* the poke signal (posix/cancel.c) */

/* What the kernel thread blocks while it waits: every signal a thread may
 * block. Outside the system call it blocks the poke too, so that a poke that
 * comes before the wait begins ends it as it begins (the mask is set inside
 * the call, as pselect's). */
static uint64_t inside(void) { return ~ito__sigmask_reserved(); }
static uint64_t outside(void) { return inside() | POKE_BIT; }

/* Wait once, under `inside`, until the deadline (ns: to the ns, with
 * epoll_pwait2; otherwise in ms, rounded up). */
static int wait_once(int ep, struct epoll_event *ev, int max, uint64_t deadline, bool ns)
{
    sigset_t mask = ito__posix_sigset(inside());
    if (deadline == NO_DEADLINE)
        return ITO__POSIX_LIBC(epoll_pwait, "GLIBC_2.6")(ep, ev, max, -1, &mask);
    uint64_t now = ito_now_ns(), left = deadline > now ? deadline - now : 0;
    if (ns) {
        struct timespec ts = { .tv_sec = (time_t)(left / 1000000000u), .tv_nsec = (long)(left % 1000000000u) };
        return ITO__POSIX_LIBC(epoll_pwait2, "GLIBC_2.35")(ep, ev, max, &ts, &mask);
    }
    uint64_t ms = (left + 999999u) / 1000000u;
    return ITO__POSIX_LIBC(epoll_pwait, "GLIBC_2.6")(ep, ev, max, ms > INT32_MAX ? INT32_MAX : (int)ms, &mask);
}

/* The kernel thread that runs the caller takes mask, and the runtime's
 * record of it (act->kmask) says so. Always written: a thread switched out
 * by a time slice in this file resumes with the mask its signal frame holds
 * (`outside`), whatever the record of its new kernel thread says. */
static void kernel_mask(uint64_t mask)
{
    ito__critical_enter();
    ito__sigmask_write(ito__activation_self(), mask);
    ito__critical_exit();
}

static void block_all(void)
{
    /* From now on switches write each thread's mask: this kernel thread's
     * differs from its thread's. (Relaxed: a thread that runs here next sees
     * it in program order; this one, moved, through a run queue's acquire.) */
    ito__sigmasks_begin();
    kernel_mask(outside());
}

/* Did the last wait run with every signal blocked? Only a switch at a
 * section's end puts the thread's own mask in force between blocking and
 * waiting, and the caller cannot have moved since the wait: the kernel
 * thread it is on now says. (Asked of the kernel: a critical section here
 * would give up a kernel thread that lost its vproc while it slept, and
 * resume elsewhere.) */
static bool waited_blocked(void)
{
    uint64_t now = 0;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &now, sizeof now);
    return (now & inside()) == inside();
}

/* A handler of the program's is due on the thread t: a signal that the
 * kernel keeps (for this kernel thread or the process) and t accepts, not
 * ignored. One only ignored is discarded (it stays while blocked). */
static bool handler_due(struct ito__thread *t)
{
    uint64_t kept = 0;
    syscall(SYS_rt_sigpending, &kept, sizeof kept);
    kept &= ~ito__sigmask_of(t) & inside();
    for (uint64_t k = kept; k; k &= k - 1)
        if (!ito__posix_signal_ignored(__builtin_ctzll(k) + 1))
            return true;
    if (kept) {
        kernel_mask(ito__sigmask_of(t));   /* the thread's mask: the kernel drops them */
        block_all();
    }
    return false;
}

/* A handler of the program's is due on pt: a signal sent to it, or one the
 * kernel keeps, that it accepts. */
static bool signal_due(struct ito__pthread *pt, struct ito__thread *t)
{
    return ito__posix_signals_deliverable(pt, t) || handler_due(t);
}

/* At the end of the call, or as cancellation unwinds through it: the
 * thread's mask in force again (what the kernel keeps that it accepts is
 * handled now, wherever the thread runs then), no more pokes that raise
 * nothing, and the signals sent to it raised. */
static void wait_ends(struct ito__pthread **pt)
{
    kernel_mask(ito__sigmask_self());
    atomic_store_explicit(&(*pt)->kernel_wait, false, memory_order_relaxed);
    if (atomic_load_explicit(&(*pt)->sig_pending, memory_order_relaxed) ||
        atomic_load_explicit(&(*pt)->sig_nudged, memory_order_relaxed))
        ito__posix_signals_raise(*pt, NULL);
}

/* The wait of an ito thread of the POSIX face (pt), until the deadline. */
static int wait_watched(struct ito__pthread *pt, int ep, struct epoll_event *ev, int max, uint64_t deadline, bool ns)
{
    ito__posix_sigroute_start();   /* (once) the process's signals reach it by the router */
    int e0 = errno;
    /* Marked before the mask is written: a poke that comes after raises
     * nothing where every signal is blocked (and ends the wait, or waits for
     * it). The router reads the flag after the kernel kept a signal that
     * this kernel thread blocked, which the mask's system call ordered after
     * the store; C11 does not model that order, the kernel's entry does.
     * (Relaxed: pokes run on this kernel thread, the router's reads are that
     * order's.) */
    atomic_store_explicit(&pt->kernel_wait, true, memory_order_relaxed);
    block_all();
    struct ito__pthread *guard __attribute__((cleanup(wait_ends))) = pt;
    struct ito__thread *t = ito__thread_self();
    for (bool first = true;; first = false) {
        if (!first)
            block_all();   /* (again, if it moved) */
        if (ito__posix_signals_deliverable(pt, t)) {
            errno = EINTR;   /* sent before the wait: its poke may have come already */
            return -1;
        }
        bool last = deadline != NO_DEADLINE && ito_now_ns() >= deadline;   /* (a look, no wait) */
        int r = wait_once(ep, ev, max, deadline, ns);
        int e = errno;
        if (r >= 0 || e != EINTR) {
            errno = r >= 0 ? e0 : e;
            return r;
        }
        if (!waited_blocked() || signal_due(pt, t) || last)
            return -1;   /* (errno EINTR; a last look cannot fail with it) */
        /* ito's own EINTR: wait again, for the time left. */
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
