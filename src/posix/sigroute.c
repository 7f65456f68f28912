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
 * router looks again later, not at once: 100 us after it woke a thread
 * for it (which takes it within microseconds; one kept again after that
 * thread took its mark is another instance, and signals may come back to
 * back), and after 1, 2, 4 … 64 ms while the signal waits for a thread
 * that comes without help, or one woken that has not come. A signal no
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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/kthread.h"
#include "base/libc.h"
#include "base/panic.h"
#include "posix/posix.h"
#include "runtime/sigmask.h"
#include "runtime/thread.h"
#include "runtime/wait.h"

#define BACKOFF_MAX_US 64000
#define SOON_US 100         /* after waking a thread for a signal */

static _Atomic uint64_t watch;   /* what the router's signalfd reads */
static int wake_fd = -1;         /* an eventfd: the watch set grew */
static pthread_once_t started = PTHREAD_ONCE_INIT;

enum route { NOBODY, COMING, NUDGED };

struct search {
    uint64_t bit;
    bool nudge;          /* the second pass: end the wait of one that accepts it */
    bool accepted;       /* some thread accepts it */
    bool coming;         /* ... and runs, is ready to run, or has not started */
    struct ito__pthread *nudged;
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
        s->nudged = pt;
    else
        atomic_fetch_and_explicit(&pt->sig_nudged, ~s->bit, memory_order_relaxed);
}

/* Make a thread that accepts sig take it. NOBODY: no thread accepts it;
 * COMING: one will, without help (or where no interruption reaches);
 * NUDGED: *who was woken to take it. */
static enum route route(int sig, struct ito__pthread **who)
{
    struct search s = { .bit = ITO__SIGBIT(sig) };
    ito__pthread_each(consider, &s);
    if (!s.accepted)
        return NOBODY;
    if (s.coming)
        return COMING;
    s.nudge = true;
    ito__pthread_each(consider, &s);
    *who = s.nudged;
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
    long backoff_us = 0;                 /* 0: until a signal comes */
    struct ito__pthread *woke[64] = { 0 };   /* whom the last look woke, per signal */
    for (;;) {
        struct pollfd p[2] = { { .fd = wake_fd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
        /* While a signal waits for its thread, the signalfd stays readable:
         * look again later instead. */
        struct timespec ts = { backoff_us / 1000000, backoff_us % 1000000 * 1000 };
        syscall(SYS_ppoll, p, backoff_us ? 1 : 2, backoff_us ? &ts : NULL, NULL, _NSIG / 8);
        uint64_t n;
        if (p[0].revents & POLLIN)
            (void)!ito__sys_read(wake_fd, &n, sizeof n);
        uint64_t w = atomic_load(&watch);
        sigset_t pend;
        sigpending(&pend);   /* this thread blocks all and is sent nothing: the process's */
        uint64_t kept = ito__posix_sigbits(&pend);
        bool stuck = false, soon = false;
        struct ito__pthread *now_woke[64] = { 0 };
        for (uint64_t k = kept & w; k; k &= k - 1) {
            int sig = __builtin_ctzll(k) + 1;
            /* Kept still, though the thread woken for it at the last look
             * took its mark: that thread has since run with its mask, where
             * the kernel gave it the signal kept then, so this is another
             * instance (signals sent back to back). (Relaxed: a hint for
             * when to look again.) */
            struct ito__pthread *before = woke[sig - 1];
            bool moved = !before || !(atomic_load_explicit(&before->sig_nudged, memory_order_relaxed) & ITO__SIGBIT(sig));
            enum route r = route(sig, &now_woke[sig - 1]);
            if (r == NOBODY)
                w = atomic_fetch_and(&watch, ~ITO__SIGBIT(sig)) & ~ITO__SIGBIT(sig);
            else if (r == NUDGED && moved)
                soon = true;
            else
                stuck = true;
        }
        memcpy(woke, now_woke, sizeof woke);
        if (w != armed) {
            armed = w;
            m = ito__posix_sigset(armed);
            signalfd(sfd, &m, 0);
        }
        /* A thread woken takes its signal within microseconds: look again
         * soon; one that does not come, or comes without help, is waited for
         * longer and longer. */
        if (stuck)
            backoff_us = backoff_us < 1000 ? 1000 : backoff_us < BACKOFF_MAX_US ? backoff_us * 2 : BACKOFF_MAX_US;
        else
            backoff_us = soon ? SOON_US : 0;
    }
}

static void start_once(void)
{
    ito__posix_poke_setup();   /* (here, on an ito thread: the router pokes) */
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
