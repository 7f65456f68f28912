/* SPDX-License-Identifier: MIT */
/*
 * Signals for the process that no running thread accepts.
 *
 * The kernel delivers a signal sent to the process (kill, a terminal's
 * ^C, a timer) to a kernel thread that does not block it; each kernel
 * thread ito runs threads on has the mask of the thread it runs
 * (runtime/sigmask.c), and a sleeping one blocks everything. When every
 * running thread blocks the signal, the kernel keeps it for the process:
 * it is delivered as soon as a thread that accepts it runs, as the kernel
 * thread takes that thread's mask. But such a thread may be waiting — the
 * initial thread in pthread_join while the workers, which block SIGINT,
 * compute — and then nothing ends its wait.
 *
 * The router is a kernel thread of ito's own that blocks every signal and
 * sleeps in poll on a signalfd of the signals that some thread may accept
 * (the watch set). Woken by one, it looks at what the process keeps
 * (sigpending, on a thread that blocks all: the process's only) and, for
 * each, finds a thread that accepts it: if one runs or is ready to run, the
 * kernel will deliver it there; if one waits in a wait that can be
 * interrupted (the cancellation points: posix/cancel.c), it ends that wait,
 * marking the thread (sig_nudged) so that the wait reports EINTR as a
 * handler without SA_RESTART would make it; if one sleeps in the kernel
 * with every signal blocked (an epoll wait: posix/epoll.c), it marks it and
 * pokes its kernel thread, which ends that wait. The thread resumes, its kernel
 * thread takes its mask, and the kernel delivers the signal there, with its
 * own siginfo. The router does not take the signal itself: it only makes a
 * thread run.
 *
 * The signalfd stays readable while the signal waits, so until then the
 * router looks again after 1, 2, 4 … 64 ms, not at once. A signal no
 * thread accepts leaves the watch set until some thread unblocks it or
 * waits for it (ito__posix_sigroute_accept): the kernel keeps it, as it
 * would for a process whose threads all block it.
 *
 * Limits: a thread parked where no interruption reaches (a mutex, a join
 * begun before any thread changed its mask) takes the signal when that wait
 * ends; a signal that no running thread accepts waits up to the router's
 * wake-up (microseconds) before the thread that takes it is woken.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "base/kthread.h"
#include "base/libc.h"
#include "base/panic.h"
#include "posix/posix.h"
#include "runtime/sigmask.h"
#include "runtime/thread.h"
#include "runtime/wait.h"

#define BACKOFF_MAX_MS 64

static _Atomic uint64_t watch;   /* what the router's signalfd reads */
static int wake_fd = -1;         /* an eventfd: the watch set grew */
static pthread_once_t started = PTHREAD_ONCE_INIT;

enum route { NOBODY, COMING, NUDGED };

struct search {
    uint64_t bit;
    bool nudge;          /* the second pass: end the wait of one that accepts it */
    bool accepted;       /* some thread accepts it */
    bool coming;         /* ... and runs, is ready to run, or has not started */
    bool nudged;
};

static void consider(struct ito__pthread *pt, void *arg)
{
    struct search *s = arg;
    struct ito__thread *t = ito__pthread_thread(pt);
    if (!t || s->nudged)
        return;
    if ((ito__sigmask_of(t) & s->bit) && !(atomic_load_explicit(&pt->sig_waiting, memory_order_relaxed) & s->bit))
        return;   /* blocks it */
    int st = ito__thread_state(t);
    /* Asleep in the kernel with every signal blocked (epoll.c). Seen: the
     * signal is kept for the process only if its kernel thread blocked it
     * when it came, after the flag was set (the kernel's signal lock orders
     * the two). */
    bool kernel_wait = atomic_load_explicit(&pt->kernel_wait, memory_order_relaxed);
    if (!s->nudge) {
        s->accepted = true;
        if (st != ITO__TS_BLOCKED && st != ITO__TS_SUSPENDED && !kernel_wait)
            s->coming = true;   /* the kernel delivers it as that thread runs (in sigwait: now) */
        return;
    }
    if (st != ITO__TS_BLOCKED && !kernel_wait)
        return;
    /* Mark, then interrupt: the wait that ends looks at the mark. A
     * descriptor reused meanwhile: another thread's wait ends, finds nothing
     * to act on, and waits again. A thread asleep in the kernel is poked:
     * the handler takes the mark and the call returns EINTR. */
    atomic_fetch_or_explicit(&pt->sig_nudged, s->bit, memory_order_relaxed);
    if (st == ITO__TS_BLOCKED ? ito__wait_interrupt(t) : ito__posix_poke(pt))
        s->nudged = true;
    else
        atomic_fetch_and_explicit(&pt->sig_nudged, ~s->bit, memory_order_relaxed);
}

/* Make a thread that accepts sig take it. NOBODY: no thread accepts it;
 * COMING: one will, without help (or where no interruption reaches). */
static enum route route(int sig)
{
    struct search s = { .bit = ITO__SIGBIT(sig) };
    ito__pthread_each(consider, &s);
    if (!s.accepted)
        return NOBODY;
    if (s.coming)
        return COMING;
    s.nudge = true;
    ito__pthread_each(consider, &s);
    return s.nudged ? NUDGED : COMING;
}

static void *router(void *arg)
{
    (void)arg;
    uint64_t armed = atomic_load(&watch);
    sigset_t m = ito__posix_sigset(armed);
    int sfd = signalfd(-1, &m, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) {
        ito__warn("signals for the process that only a waiting thread accepts are delivered when it "
                  "next runs: signalfd failed (%s)", strerror(errno));
        return NULL;
    }
    int backoff = 0;
    for (;;) {
        struct pollfd p[2] = { { .fd = wake_fd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
        /* While a signal waits for its thread, the signalfd stays readable:
         * look again later instead. */
        ito__libc_poll(p, backoff ? 1 : 2, backoff ? backoff : -1);
        uint64_t n;
        if (p[0].revents & POLLIN)
            (void)!ito__sys_read(wake_fd, &n, sizeof n);
        uint64_t w = atomic_load(&watch);
        sigset_t pend;
        sigpending(&pend);   /* this thread blocks all and is sent nothing: the process's */
        uint64_t kept = ito__posix_sigbits(&pend);
        bool waits = false;
        for (uint64_t k = kept & w; k; k &= k - 1) {
            int sig = __builtin_ctzll(k) + 1;
            if (route(sig) == NOBODY)
                w = atomic_fetch_and(&watch, ~ITO__SIGBIT(sig)) & ~ITO__SIGBIT(sig);
            else
                waits = true;
        }
        if (w != armed) {
            armed = w;
            m = ito__posix_sigset(armed);
            signalfd(sfd, &m, 0);
        }
        backoff = !waits ? 0 : !backoff ? 1 : backoff < BACKOFF_MAX_MS ? backoff * 2 : BACKOFF_MAX_MS;
    }
}

static void start_once(void)
{
    /* Everything a thread may accept. */
    atomic_store(&watch, ~ito__sigmask_reserved());
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0 || ito__kthread_start("ito-signals", 64 * 1024, router, NULL, NULL) != 0)
        ito__warn("signals for the process that only a waiting thread accepts are delivered when it "
                  "next runs: the router did not start (%s)", strerror(errno));
}

void ito__posix_sigroute_start(void) { pthread_once(&started, start_once); }

void ito__posix_sigroute_forked(void)
{
    /* The router is a kernel thread of the parent's, and its eventfd is
     * shared with it: the child starts its own when its runtime resumes
     * (posix/fork.c). */
    if (wake_fd >= 0)
        close(wake_fd);
    wake_fd = -1;
    atomic_store(&watch, 0);
    started = (pthread_once_t)PTHREAD_ONCE_INIT;
}

void ito__posix_sigroute_accept(uint64_t bits)
{
    if (wake_fd < 0)
        return;
    bits &= ~ito__sigmask_reserved();
    if ((atomic_load(&watch) & bits) == bits)
        return;
    atomic_fetch_or(&watch, bits);
    uint64_t one = 1;
    (void)!ito__sys_write(wake_fd, &one, sizeof one);
}
