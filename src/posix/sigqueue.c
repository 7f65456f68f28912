/* SPDX-License-Identifier: MIT */
/*
 * Real-time signals queued on a thread.
 *
 * POSIX queues real-time signals: each pthread_sigqueue or pthread_kill of
 * one that the target blocks (or has not taken yet) is a separate instance,
 * with its own value and code, and sigwaitinfo or the handler sees them one
 * by one, lowest signal first and in order of sending within a signal. A
 * standard signal is one bit: sent twice before it is taken, it arrives once
 * (posix/signal.c). So a thread keeps, beside its bits, a small queue of the
 * real-time instances sent to it; the bit of a real-time signal is set while
 * the queue holds one of it. Both change under the queue's lock, so a bit and
 * the queue always agree; the lock-free readers of the bits (sigpending, the
 * deliverable check) see a set bit exactly when an instance waits.
 *
 * Room: ITO__POSIX_RTQ_MAX instances per thread (POSIX asks for at least
 * _POSIX_SIGQUEUE_MAX, 32); one more fails with EAGAIN, as the kernel's
 * sigqueue does past its limit.
 *
 * The queue is taken from by the thread itself only (its sigwait, or its
 * handlers being raised), inside a critical section, where the poke signal's
 * handler, which raises pending signals, waits for its end (posix/cancel.c).
 * Senders are any thread; the lock is a spinlock, held for a few
 * instructions.
 */
#include <errno.h>
#include <string.h>

#include "posix/posix.h"
#include "runtime/critical.h"
#include "runtime/sigmask.h"

int ito__posix_rt_keep(struct ito__pthread *pt, int sig, const union sigval *value)
{
    struct ito__posix_rtq *q = &pt->rtq;
    int e = 0;
    ito__critical_enter();
    ito__spin_lock(&q->lock);
    if (q->n == ITO__POSIX_RTQ_MAX) {
        e = EAGAIN;
    } else {
        struct ito__posix_rt *r = &q->e[(q->head + q->n++) % ITO__POSIX_RTQ_MAX];
        r->sig = (uint8_t)sig;
        r->valued = value != NULL;
        r->value = value ? *value : (union sigval){ 0 };
        /* seq_cst, as every send's: the target looks at what it waits for
         * after (ito__posix_signals_deliverable). */
        atomic_fetch_or_explicit(&pt->sig_pending, ITO__SIGBIT(sig), memory_order_seq_cst);
    }
    ito__spin_unlock(&q->lock);
    ito__critical_exit();
    return e;
}

bool ito__posix_rt_take(struct ito__pthread *pt, int sig, bool *valued, union sigval *value)
{
    struct ito__posix_rtq *q = &pt->rtq;
    bool found = false, more = false;
    ito__critical_enter();
    ito__spin_lock(&q->lock);
    for (unsigned i = 0; i < q->n; i++) {
        struct ito__posix_rt *r = &q->e[(q->head + i) % ITO__POSIX_RTQ_MAX];
        if (r->sig != sig)
            continue;
        if (found) {
            more = true;
            break;
        }
        found = true;
        *valued = r->valued;
        *value = r->value;
        /* Close the gap: the later instances move up by one. */
        for (unsigned j = i; j + 1 < q->n; j++)
            q->e[(q->head + j) % ITO__POSIX_RTQ_MAX] = q->e[(q->head + j + 1) % ITO__POSIX_RTQ_MAX];
        q->n--;
        i--;   /* the next one is now at i */
    }
    if (!more)
        atomic_fetch_and_explicit(&pt->sig_pending, ~ITO__SIGBIT(sig), memory_order_relaxed);
    ito__spin_unlock(&q->lock);
    ito__critical_exit();
    return found;
}

void ito__posix_rt_reset(struct ito__pthread *pt)
{
    ito__spin_init(&pt->rtq.lock, ITO__LOCK_OBJECT);
    pt->rtq.head = 0;
    pt->rtq.n = 0;
}
