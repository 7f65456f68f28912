/* SPDX-License-Identifier: MIT */
/* Waiting and waking; the protocol is described in wait.h. */
#include "runtime/wait.h"

#include <errno.h>

#include "runtime/critical.h"

#include "base/backoff.h"
#include "base/futex.h"
#include "base/panic.h"
#include "runtime/runtime.h"
#include "runtime/sched.h"
#include "runtime/thread.h"
#include "runtime/timer.h"

struct ito__waiter *ito__waiter_init(struct ito__waiter *local)
{
    struct ito__thread *self = ito__thread_self();
    struct ito__waiter *w = self ? &self->wait : local;
    if (!self) {
        w->thread = NULL;
        atomic_store_explicit(&w->state, ITO__WAIT_WAITING, memory_order_relaxed);
        atomic_store_explicit(&w->futex, ITO__FUTEX_WAITING, memory_order_relaxed);
        atomic_store_explicit(&w->interruptible, false, memory_order_relaxed);
    }
    w->epoch = ito__fork_epoch;
    w->next = w->prev = NULL;
    w->queued = false;
    w->timed = false;
    w->tag = 0;
    w->deadline = 0;
    return w;
}

void ito__wait_begin(struct ito__waiter *w, uint64_t deadline, ito__spinlock *lock, struct ito__waitq *q,
                     enum ito__wait_on on, const void *obj)
{
    struct ito__thread *t = w->thread;
    if (deadline == UINT64_MAX)
        deadline = 0;   /* saturated far future (ito__timespec_to_ns): never */
    w->timed = deadline != 0;
    w->deadline = deadline;
    atomic_store_explicit(&w->lock, lock, memory_order_relaxed);
    atomic_store_explicit(&w->queue, q, memory_order_relaxed);
    if (!t)
        return;
    atomic_store_explicit(&w->interruptible, t->interruptible, memory_order_relaxed);
    ito__thread_waits_on(t, on, obj);
    /* From BLOCKED to the switch in ito__wait_end, one critical section: a
     * thread leaves RUNNING only inside the section that switches it out
     * (runtime/critical.h). */
    ito__critical_enter();
    /* A new wait number: timer entries of earlier waits cannot end this one. */
    uint64_t seq = (atomic_load_explicit(&w->state, memory_order_relaxed) >> 2) + 1;
    /* Release: an interrupter that reads this state (acquire) sees the lock,
     * queue and interruptible of this wait. */
    atomic_store_explicit(&w->state, seq << 2 | ITO__WAIT_WAITING, memory_order_release);
    ito__thread_set_state(t, ITO__TS_RUNNING, ITO__TS_BLOCKED);
    if (deadline)
        ito__timer_arm(t->vp, deadline, t, seq);
}

static int timed_out(struct ito__waiter *w, ito__spinlock *lock, struct ito__waitq *q)
{
    if (lock) {
        ito__spin_lock(lock);
        if (w->queued)
            ito__waitq_remove(q, w);
        ito__spin_unlock(lock);
    }
    return ETIMEDOUT;
}

/* A foreign waiter woken: its record is its own again once the waker has
 * made its futex wake (a step of one system call). Acquire pairs with the
 * waker's release store of RELEASED: the wake happened before the frame
 * that holds the record can go. */
static int released(struct ito__waiter *w)
{
    unsigned spins = 0;
    while (atomic_load_explicit(&w->futex, memory_order_acquire) != ITO__FUTEX_RELEASED)
        ito__backoff(&spins);
    return 0;
}

int ito__wait_end(struct ito__waiter *w, ito__spinlock *lock, struct ito__waitq *q)
{
    if (w->thread) {
        ito__switch_out(w->thread);
        ito__critical_exit();   /* entered in ito__wait_begin */
        /* What ended the wait (a waker's claim, the timer's CAS) happened
         * before the thread was made ready, which the vproc that runs it
         * acquired (ito__thread_set_state, ito__claim). */
        uint64_t st = atomic_load_explicit(&w->state, memory_order_relaxed);
        /* A timeout was unlinked by the timer (ito__wait_timeout), an
         * interruption by its interrupter. */
        switch (st & ITO__WAIT_MASK) {
        case ITO__WAIT_TIMEDOUT:
            return ETIMEDOUT;
        case ITO__WAIT_INTERRUPTED:
            return EINTR;
        default:
            return 0;
        }
    }
    /* A foreign kernel thread: sleep in the kernel. */
    for (;;) {
        if (atomic_load_explicit(&w->futex, memory_order_acquire) != ITO__FUTEX_WAITING)
            return released(w);
        int r = ito__futex_wait(&w->futex, ITO__FUTEX_WAITING, w->deadline);
        if (r == ETIMEDOUT) {
            uint64_t exp = ITO__WAIT_WAITING;
            if (atomic_compare_exchange_strong_explicit(&w->state, &exp, ITO__WAIT_TIMEDOUT,
                                                        memory_order_acq_rel, memory_order_acquire))
                return timed_out(w, lock, q);
            /* Claimed by a waker at the same moment: it is about to finish. */
            while (atomic_load_explicit(&w->futex, memory_order_acquire) == ITO__FUTEX_WAITING)
                ito__futex_wait(&w->futex, ITO__FUTEX_WAITING, 0);
            return released(w);
        }
    }
}

bool ito__wake_claim(struct ito__waiter *w)
{
    /* In the child of fork, a thread (or a foreign kernel thread) of the
     * parent's that waited on an object the child uses: it does not exist
     * here and never runs; the wake-up goes to the next waiter. */
    if (ITO_UNLIKELY(w->epoch != ito__fork_epoch))
        return false;
    uint64_t st = atomic_load_explicit(&w->state, memory_order_relaxed);
    if (!w->timed && !atomic_load_explicit(&w->interruptible, memory_order_relaxed)) {
        /* Only the waker that unlinked w can end this wait. */
        atomic_store_explicit(&w->state, (st & ~(uint64_t)ITO__WAIT_MASK) | ITO__WAIT_WOKEN,
                              memory_order_relaxed);
        return true;
    }
    /* Race with the timer (or a foreign waiter's own timeout), or a wait an
     * interrupter may have ended (under the same lock: wait.h). */
    return (st & ITO__WAIT_MASK) == ITO__WAIT_WAITING &&
           atomic_compare_exchange_strong_explicit(&w->state, &st,
                                                   (st & ~(uint64_t)ITO__WAIT_MASK) | ITO__WAIT_WOKEN,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

void ito__wake_finish(struct ito__waiter *w)
{
    struct ito__thread *t = w->thread;
    if (t) {
        ito__thread_set_state(t, ITO__TS_BLOCKED, ITO__TS_READY);
        ito__ready(t, ITO_READY_WAKE);
        return;
    }
    /* Release pairs with the waiter's acquire loads of futex (wait_end,
     * released): what the waker did before — the claim — is visible once the
     * waiter sees WOKEN. The record stays the waker's until RELEASED (wait.h). */
    atomic_store_explicit(&w->futex, ITO__FUTEX_WOKEN, memory_order_release);
    ito__futex_wake(&w->futex, 1);
    atomic_store_explicit(&w->futex, ITO__FUTEX_RELEASED, memory_order_release);
}

struct ito__waiter *ito__waitq_claim_all(struct ito__waitq *q)
{
    struct ito__waiter *list = NULL, **tail = &list, *w;
    while ((w = ito__waitq_pop(q))) {
        if (ito__wake_claim(w)) {
            *tail = w;
            tail = &w->next;
        }
    }
    *tail = NULL;
    return list;
}

void ito__wake_finish_all(struct ito__waiter *list)
{
    while (list) {
        struct ito__waiter *next = list->next;   /* before it can run and reuse the record */
        ito__wake_finish(list);
        list = next;
    }
}

void ito__wait_timeout(struct ito__thread *t, uint64_t seq)
{
    uint64_t exp = seq << 2 | ITO__WAIT_WAITING;
    if (atomic_compare_exchange_strong_explicit(&t->wait.state, &exp, seq << 2 | ITO__WAIT_TIMEDOUT,
                                                memory_order_acq_rel, memory_order_relaxed)) {
        /* The wait is ours to end: unlink it now (no lock is held here, and
         * the object's lock comes first in the lock order anyway). A waker
         * that popped it meanwhile has cleared `queued` under the same lock. */
        struct ito__waiter *w = &t->wait;
        ito__spinlock *lock = atomic_load_explicit(&w->lock, memory_order_relaxed);
        if (lock) {
            ito__spin_lock(lock);
            if (w->queued)
                ito__waitq_remove(atomic_load_explicit(&w->queue, memory_order_relaxed), w);
            ito__spin_unlock(lock);
        }
        ito__thread_set_state(t, ITO__TS_BLOCKED, ITO__TS_READY);
        ito__ready(t, ITO_READY_WAKE);
    }
}

bool ito__wait_interrupt(struct ito__thread *t)
{
    struct ito__waiter *w = &t->wait;
    /* Acquire pairs with the release store of WAITING in ito__wait_begin:
     * the lock, queue and interruptible read next are this wait's, unless it
     * has ended since — and then the CAS below fails. */
    uint64_t st = atomic_load_explicit(&w->state, memory_order_acquire);
    if ((st & ITO__WAIT_MASK) != ITO__WAIT_WAITING || !atomic_load_explicit(&w->interruptible, memory_order_relaxed))
        return false;
    ito__spinlock *lock = atomic_load_explicit(&w->lock, memory_order_relaxed);
    struct ito__waitq *q = atomic_load_explicit(&w->queue, memory_order_relaxed);
    ito__critical_enter();
    if (!lock) {
        /* A sleep: only its timer, which CASes too, could end it. */
        bool ours = atomic_compare_exchange_strong_explicit(
            &w->state, &st, (st & ~(uint64_t)ITO__WAIT_MASK) | ITO__WAIT_INTERRUPTED, memory_order_acq_rel,
            memory_order_relaxed);
        if (ours) {
            ito__thread_set_state(t, ITO__TS_BLOCKED, ITO__TS_READY);
            ito__ready(t, ITO_READY_WAKE);
        }
        ito__critical_exit();
        return ours;
    }
    ito__spin_lock(lock);
    /* Under the object's lock no waker can claim w (they claim under it), so
     * only a timer may race this CAS. If it succeeds, wait `st` was still on,
     * and `lock` is its object's. acq_rel: as the timer's. */
    bool ours = atomic_compare_exchange_strong_explicit(&w->state, &st,
                                                        (st & ~(uint64_t)ITO__WAIT_MASK) | ITO__WAIT_INTERRUPTED,
                                                        memory_order_acq_rel, memory_order_relaxed);
    if (ours && w->queued)
        ito__waitq_remove(q, w);
    ito__spin_unlock(lock);
    if (ours) {
        ito__thread_set_state(t, ITO__TS_BLOCKED, ITO__TS_READY);
        ito__ready(t, ITO_READY_WAKE);
    }
    ito__critical_exit();
    return ours;
}
