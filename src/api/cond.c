/* SPDX-License-Identifier: MIT */
/*
 * Condition variable: a FIFO queue of waiters under a spinlock.
 *
 * wait: queue the caller under the condition's lock, release the mutex, park;
 * when woken (or timed out), take the mutex again. Because the caller is
 * queued before the mutex is released, a signal sent after the caller's
 * predicate check, under the same mutex, always finds it (no lost wake-up);
 * and a thread readied before it has finished parking simply runs on
 * (sched.c). signal wakes the first waiter that has not timed out, so a
 * signal is never lost to a timeout; broadcast wakes them all.
 *
 * A destroyed condition keeps a mark, so that later use reports EINVAL.
 */
#include <errno.h>

#include <ito.h>

#include "base/clock.h"
#include "api/init.h"
#include "runtime/critical.h"
#include "runtime/runtime.h"
#include "api/cond.h"
#include "api/mutex.h"
#include "api/owner.h"
#include "runtime/wait.h"

#define COND_DESTROYED 0xdeadc0d1u

_Static_assert(sizeof(struct ito__cond) <= sizeof(ito_cond_t), "ito_cond_t too small");

static inline struct ito__cond *C(ito_cond_t *c) { return (struct ito__cond *)c; }

ITO_API int ito_cond_init(ito_cond_t *uc)
{
    if (!uc)
        return EINVAL;
    struct ito__cond *c = C(uc);
    ito__spin_init(&c->lk, ITO__LOCK_OBJECT);
    c->destroyed = 0;
    ito__waitq_init(&c->q);
    return 0;
}

ITO_API int ito_cond_destroy(ito_cond_t *uc)
{
    if (!uc)
        return EINVAL;
    struct ito__cond *c = C(uc);
    int e = 0;
    ito__spin_lock(&c->lk);
    if (c->destroyed == COND_DESTROYED)
        e = EINVAL;
    else if (!ito__waitq_empty(&c->q))
        e = EBUSY;
    else
        c->destroyed = COND_DESTROYED;
    ito__spin_unlock(&c->lk);
    return e;
}

struct ito__waiter *ito__cond_wait_begin(struct ito__cond *c, struct ito__waiter *local, uint64_t deadline)
{
    ito__critical_none();
    ito__spin_lock(&c->lk);
    if (c->destroyed == COND_DESTROYED) {
        ito__spin_unlock(&c->lk);
        return NULL;
    }
    struct ito__waiter *w = ito__waiter_init(local);
    ito__waitq_push(&c->q, w);
    ito__wait_begin(w, deadline, &c->lk, &c->q, ITO__ON_COND, c);
    ito__spin_unlock(&c->lk);
    return w;
}

int ito__cond_wait_end(struct ito__cond *c, struct ito__waiter *w) { return ito__wait_end(w, &c->lk, &c->q); }

static int cond_wait(struct ito__cond *c, struct ito__mutex *m, uint64_t deadline)
{
    ito__ensure_init();
    uintptr_t self = ito__owner_self();
    if (!ito__mutex_held_by(m, self))
        return EPERM;
    struct ito__waiter local;
    struct ito__waiter *w = ito__cond_wait_begin(c, &local, deadline);
    if (!w)
        return EINVAL;
    ito__mutex_unlock(m, self);
    int r = ito__cond_wait_end(c, w);
    /* Take the mutex back whatever happened (POSIX). */
    int e = ito__mutex_lock(m, self);
    return e ? e : r;   /* EINVAL if the mutex was destroyed meanwhile */
}

ITO_API int ito_cond_wait(ito_cond_t *c, ito_mutex_t *m)
{
    if (!c || !m)
        return EINVAL;
    return cond_wait(C(c), (struct ito__mutex *)m, 0);
}

ITO_API int ito_cond_timedwait(ito_cond_t *c, ito_mutex_t *m, const struct timespec *abstime)
{
    uint64_t deadline;
    if (!c || !m || !abstime || !ito__timespec_to_ns(abstime, &deadline))
        return EINVAL;
    return cond_wait(C(c), (struct ito__mutex *)m, deadline);
}

/* Claim the first waiter (all of them: a list) under the lock, and wake
 * outside it. */
int ito__cond_wake(struct ito__cond *c, bool all)
{
    ito__spin_lock(&c->lk);
    if (c->destroyed == COND_DESTROYED) {
        ito__spin_unlock(&c->lk);
        return EINVAL;
    }
    struct ito__waiter *w = all ? ito__waitq_claim_all(&c->q) : ito__waitq_pop_claim(&c->q);
    ito__spin_unlock(&c->lk);
    if (all)
        ito__wake_finish_all(w);
    else if (w)
        ito__wake_finish(w);
    return 0;
}

ITO_API int ito_cond_signal(ito_cond_t *uc) { return uc ? ito__cond_wake(C(uc), false) : EINVAL; }

ITO_API int ito_cond_broadcast(ito_cond_t *uc) { return uc ? ito__cond_wake(C(uc), true) : EINVAL; }
