/* SPDX-License-Identifier: MIT */
/*
 * A wait in the kernel on an ito thread — epoll's, and poll's and select's
 * while the rings are off — with no EINTR that no handler of the program's
 * caused.
 *
 * Some waits of the POSIX face are the C library's system call, not a
 * parked thread: epoll waits always (posix/epoll.c says why), poll, select,
 * ppoll and pselect when the rings are off (posix/io.c). The kernel ends
 * such a wait with EINTR for more than the program's signals, and never
 * restarts it:
 *   - ito's own signal (runtime/carrier.c's poke): sent to a kernel thread
 *     for the ito thread it carried a moment ago, which has moved on
 *     (posix/cancel.c), or to ask a vproc whose thread computes to look at
 *     its timers and queues (upcall/monitor.c), which cannot always tell a
 *     carrier that has just gone to sleep in the kernel from one computing;
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
 * sig_pending), or one the kernel keeps for the process that it accepts
 * (ShdPnd, less those ignored). Then, its mask back, the kernel runs the handlers of
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
 * critical section's deferred end as it blocks them resumes elsewhere
 * under its own mask, and blocks them again before it waits (a wait under
 * its own mask would leave a handler that ran unseen: its EINTR would be
 * the program's). A thread cancelled in the wait unwinds through this frame,
 * which puts its mask back first (built with -fexceptions for that).
 *
 * What it costs: two mask writes and a mask read (system calls; the
 * kernel sets and puts back the wait's mask inside the call) and a few
 * loads and stores of the thread's own lines per call; once a thread has
 * waited here, every switch compares masks (runtime/sigmask.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ito.h>

#include "posix/posix.h"
#include "runtime/critical.h"
#include "runtime/sigmask.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

#define POKE_BIT ITO__SIGBIT(32)   /* the poke signal (posix/cancel.c) */

/* What the kernel thread blocks while it waits: every signal a thread may
 * block. Outside the system call it blocks the poke too, so that a poke that
 * comes before the wait begins ends it as it begins (the mask is set inside
 * the call, as pselect's). */
static uint64_t inside(void) { return ~ito__sigmask_reserved(); }
static uint64_t outside(void) { return inside() | POKE_BIT; }

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

/* Does the kernel thread that runs the caller block every signal? Asked of
 * the kernel: a critical section here would give up a kernel thread that
 * lost its vproc while it slept, and resume elsewhere. */
static bool blocks_all(void)
{
    uint64_t now = 0;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &now, sizeof now);
    return (now & inside()) == inside();
}

/* Every signal blocked on the kernel thread that runs the caller, and still
 * so as this returns. A switch at the section's end (a time slice, or a
 * look that made a thread ready, deferred there) resumes the caller on
 * another kernel thread, under its own mask: then again. From the check to
 * the wait no section ends, and a switch by a signal resumes under the
 * mask of its frame, this one. */
static void block_all(void)
{
    /* From now on switches write each thread's mask: this kernel thread's
     * differs from its thread's. (Relaxed: a thread that runs here next sees
     * it in program order; this one, moved, through a run queue's acquire.) */
    ito__sigmasks_begin();
    do
        kernel_mask(outside());
    while (!blocks_all());
}

/* The signals the kernel keeps for the process (not for one of its kernel
 * threads): /proc/thread-self/status's ShdPnd. All it keeps (rt_sigpending)
 * where that cannot be read. */
static uint64_t kept_for_process(void)
{
    uint64_t all = 0;
    syscall(SYS_rt_sigpending, &all, sizeof all);
    char buf[2048];
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return all;
    ssize_t n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    buf[n > 0 ? n : 0] = '\0';
    const char *shd = strstr(buf, "\nShdPnd:");
    return shd ? all & strtoull(shd + 8, NULL, 16) : all;
}

/* A handler of the program's is due on the thread t: a signal that the
 * kernel keeps for the process and t accepts, not ignored. One only ignored
 * is discarded (it stays while blocked). Not one kept for this kernel
 * thread alone: that is another thread's, raised for it here while this
 * kernel thread blocked it (a thread switched out inside its own handler of
 * that signal leaves its kernel thread blocking it; posix.io_poll's timed
 * waits saw SIGUSR1, sent to another thread, end theirs with EINTR). */
static bool handler_due(struct ito__thread *t)
{
    uint64_t kept = kept_for_process() & ~ito__sigmask_of(t) & inside();
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

int ito__posix_kernel_wait(ito__posix_wait_once_fn *once, void *arg, uint64_t deadline)
{
    struct ito__pthread *pt = ito__pthread_self();
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
    sigset_t mask = ito__posix_sigset(inside());
    for (bool first = true;; first = false) {
        if (!first)
            block_all();   /* (again, if it moved) */
        if (ito__posix_signals_deliverable(pt, t)) {
            errno = EINTR;   /* sent before the wait: its poke may have come already */
            return -1;
        }
        bool last = deadline != ITO__POSIX_NO_DEADLINE && ito_now_ns() >= deadline;   /* (a look, no wait) */
        int r = once(arg, &mask, deadline);
        int e = errno;
        if (r >= 0 || e != EINTR) {
            errno = r >= 0 ? e0 : e;
            return r;
        }
        /* (Blocked before the wait, so in it: a handler of the program's
         * that ran is one the kernel kept, or one sent to the thread.) */
        if (!blocks_all() || signal_due(pt, t) || last)
            return -1;   /* (errno EINTR; a last look cannot fail with it) */
        /* ito's own EINTR: wait again, for the time left. */
    }
}

struct timespec *ito__posix_time_left(uint64_t deadline, struct timespec *ts)
{
    if (deadline == ITO__POSIX_NO_DEADLINE)
        return NULL;
    uint64_t now = ito_now_ns(), left = deadline > now ? deadline - now : 0;
    *ts = (struct timespec){ .tv_sec = (time_t)(left / 1000000000u), .tv_nsec = (long)(left % 1000000000u) };
    return ts;
}
