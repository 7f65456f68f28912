/* SPDX-License-Identifier: MIT */
/*
 * Signals sent to one thread: pthread_kill and pthread_sigqueue.
 *
 * POSIX says a signal sent to a thread is delivered to that thread: its
 * handler runs on that thread's stack, interrupting what it was doing. The
 * kernel can only send a signal to a kernel thread, and an ito thread has
 * none of its own. So the signal is kept on the target (a bit in
 * sig_pending, and pthread_sigqueue's value), and the target raises it on
 * whatever kernel thread carries it at a moment when it cannot move: the
 * kernel then delivers it there, at once, with everything a real signal
 * has — the program's handler, its sa_mask and flags, SA_SIGINFO's siginfo
 * (SI_TKILL, or SI_QUEUE with the value, and the sender's process), the
 * default action for a signal without a handler.
 *
 * The target notices, as it notices a cancellation (posix/cancel.c): if it
 * waits in one of the POSIX face's interruptible waits, the wait ends with
 * EINTR and the wait raises the signals, then returns EINTR where POSIX lets
 * it (sleeps, semaphore waits) or a spurious wake-up (condition waits), or
 * waits on (joins); if it runs, its carrier gets the poke signal, whose
 * handler raises them; if it was preempted, it raises them when it resumes
 * in the tick's handler; otherwise (ready after a yield, or parked on a
 * mutex) the poke is sent again every millisecond until it has run them.
 *
 * A signal the target blocks (posix/sigmask.c) stays pending on it, for its
 * sigwait or until it unblocks it, and raises nothing meanwhile.
 *
 * Real-time signals are queued, each instance with its value
 * (posix/sigqueue.c); two sends of one standard signal before the target
 * takes it arrive as one, as in the kernel. What differs from glibc's
 * threads: a handler that runs while the thread waits for a mutex runs only
 * once it has the mutex.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "base/kthread.h"
#include "base/libc.h"
#include "posix/posix.h"
#include "runtime/critical.h"
#include "runtime/sigmask.h"

#define SIGCANCEL_NUMBER 32   /* glibc's internal signals: refused, as glibc does */
#define SIGSETXID_NUMBER 33

bool ito__posix_signals_used;

static bool valid(int sig) { return sig >= 0 && sig < NSIG && sig != SIGCANCEL_NUMBER && sig != SIGSETXID_NUMBER; }

/* Raise sig on the calling kernel thread, which carries the caller and
 * cannot move to another one meanwhile: the kernel delivers it before this
 * returns. Without a value, the C library's raise (its gettid and tgkill
 * run inside the C library, where no time slice ends: upcall/preempt.c);
 * with one, the same two system calls inside a critical section, so the
 * handler runs inside it too. */
static void raise_here(int sig, const union sigval *value)
{
    if (!value) {
        ITO__POSIX_LIBC(raise, "GLIBC_2.2.5")(sig);   /* (raise is the POSIX face's: sigmask.c) */
        return;
    }
    ito__critical_enter();
    ito__kthread_signal(gettid(), sig, *value);
    ito__critical_exit();
}

/* Would sig's handler end an interrupted system call with EINTR (a handler
 * installed without SA_RESTART)? */
static bool interrupts(int sig)
{
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) != 0)
        return false;
    bool handler = (sa.sa_flags & SA_SIGINFO) || (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN);
    return handler && !(sa.sa_flags & SA_RESTART);
}

/* Is sig discarded when sent: ignored (SIG_IGN, or a default action that
 * ignores it)? The kernel discards such a signal at once unless the target
 * blocks it; it never interrupts a wait. */
bool ito__posix_signal_ignored(int sig)
{
    struct sigaction sa;
    if ((sigaction(sig, NULL, &sa) != 0) || (sa.sa_flags & SA_SIGINFO))
        return false;
    return sa.sa_handler == SIG_IGN ||
           (sa.sa_handler == SIG_DFL && (sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH));
}

uint64_t ito__posix_signals_deliverable(struct ito__pthread *pt, struct ito__thread *t)
{
    /* seq_cst: the sender sets sig_pending, then looks at sig_waiting; a
     * waiter sets sig_waiting, then looks at sig_pending (sigwait.c): one of
     * the two sees the other. */
    uint64_t pending = atomic_load(&pt->sig_pending);
    return pending & (~ito__sigmask_of(t) | atomic_load(&pt->sig_waiting));
}

bool ito__posix_signals_raise(struct ito__pthread *self, bool *eintr)
{
    /* Signals of the process it was woken for (sigroute.c): the kernel
     * delivered them as it resumed, with its mask (runtime/sigmask.c). */
    uint64_t nudged = atomic_exchange_explicit(&self->sig_nudged, 0, memory_order_relaxed);
    for (uint64_t n = eintr ? nudged : 0; n; n &= n - 1)
        if (interrupts(__builtin_ctzll(n) + 1))
            *eintr = true;
    /* Those it blocks stay pending, and so do those a sigwait takes. */
    uint64_t keep = ito__sigmask_self() | atomic_load(&self->sig_waiting);
    /* Real-time ones: each instance queued, lowest signal first. */
    uint64_t rt = atomic_load(&self->sig_pending) & ~keep & ~(ITO__SIGBIT(ITO__POSIX_SIGRT_FIRST) - 1);
    bool raised = false;
    for (; rt; rt &= rt - 1) {
        int sig = __builtin_ctzll(rt) + 1;
        bool valued;
        union sigval v;
        while (ito__posix_rt_take(self, sig, &valued, &v)) {
            if (eintr && interrupts(sig))
                *eintr = true;
            raise_here(sig, valued ? &v : NULL);
            raised = true;
        }
    }
    keep |= ~(ITO__SIGBIT(ITO__POSIX_SIGRT_FIRST) - 1);   /* (the queue's lock guards their bits) */
    /* Acquire pairs with the sender's release or: the value is there. */
    uint64_t pending = atomic_fetch_and_explicit(&self->sig_pending, keep, memory_order_acquire) & ~keep;
    if (!pending)
        return raised || nudged != 0;
    uint64_t valued = atomic_fetch_and_explicit(&self->sig_valued, ~pending, memory_order_acquire) & pending;
    for (int sig = 1; pending; sig++, pending >>= 1)
        if (pending & 1) {
            uint64_t raw = atomic_load_explicit(&self->sig_value[sig - 1], memory_order_relaxed);
            union sigval v;
            memcpy(&v, &raw, sizeof v);
            if (eintr && interrupts(sig))
                *eintr = true;
            raise_here(sig, valued & (1ull << (sig - 1)) ? &v : NULL);
        }
    return true;
}

void ito__posix_signals_check_slow(void)
{
    struct ito__pthread *self = ito__pthread_self();
    if (self && atomic_load_explicit(&self->sig_pending, memory_order_relaxed))
        ito__posix_signals_raise(self, NULL);
}

int ito__posix_signal_keep(struct ito__pthread *pt, int sig, const union sigval *value)
{
    uint64_t bit = ITO__SIGBIT(sig);
    __atomic_store_n(&ito__posix_signals_used, true, __ATOMIC_SEQ_CST);
    if (sig >= ITO__POSIX_SIGRT_FIRST)
        return ito__posix_rt_keep(pt, sig, value);   /* one instance more, with its value */
    if (value) {
        uint64_t v = 0;
        memcpy(&v, value, sizeof *value);
        atomic_store_explicit(&pt->sig_value[sig - 1], v, memory_order_relaxed);
        atomic_fetch_or_explicit(&pt->sig_valued, bit, memory_order_release);
    }
    atomic_fetch_or_explicit(&pt->sig_pending, bit, memory_order_seq_cst);   /* (deliverable) */
    return 0;
}

static int send_to(pthread_t th, int sig, const union sigval *value)
{
    struct ito__pthread *pt = ito__pthread_of(th);
    if (!valid(sig))
        return EINVAL;
    if (!pt->cancellable)
        return ESRCH;   /* a thread of ito's own API: not a POSIX thread */
    if (sig == 0)
        return 0;
    if (!ito__posix_requests_supported())
        return ITO__POSIX_UNSUPPORTED(value ? "pthread_sigqueue" : "pthread_kill",
                                      "this C library's thread descriptor is not laid out as libito-pthread "
                                      "expects");
    uint64_t bit = 1ull << (sig - 1);
    if (pt == ito__pthread_self() && !(ito__sigmask_self() & bit)) {
        raise_here(sig, value);
        return 0;
    }
    struct ito__thread *t = ito__pthread_thread(pt);
    if (t && !(ito__sigmask_of(t) & bit) && ito__posix_signal_ignored(sig))
        return 0;   /* discarded, as the kernel would */
    int e = ito__posix_signal_keep(pt, sig, value);
    if (e)
        return e;
    if (pt != ito__pthread_self())
        ito__posix_request(pt);   /* (itself: it blocks it) */
    return 0;
}

ITO_POSIX_API int pthread_kill(pthread_t th, int sig)
{
    if (!ito__pthread_ours(th))
        return ITO__POSIX_LIBC(pthread_kill, "GLIBC_2.2.5")(th, sig);
    return send_to(th, sig, NULL);
}

ITO_POSIX_API int pthread_sigqueue(pthread_t th, int sig, const union sigval value)
{
    if (!ito__pthread_ours(th))
        return ITO__POSIX_LIBC(pthread_sigqueue, "GLIBC_2.11")(th, sig, value);
    return send_to(th, sig, &value);
}
