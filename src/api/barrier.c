/* SPDX-License-Identifier: MIT */
/*
 * Barrier: the last of `count` arrivals wakes the others and gets
 * ITO_BARRIER_SERIAL. Each round ends by emptying the queue under the lock,
 * so a fast thread that arrives at the next round cannot be confused with
 * the waiters of the previous one.
 */
#include <errno.h>

#include <ito.h>

#include "api/init.h"
#include "runtime/critical.h"
#include "runtime/runtime.h"
#include "runtime/wait.h"

struct ito__barrier {
    ito__spinlock lk;
    uint32_t count;     /* 0: not initialized or destroyed */
    uint32_t arrived;   /* lk */
    struct ito__waitq q;
};

_Static_assert(sizeof(struct ito__barrier) <= sizeof(ito_barrier_t), "ito_barrier_t too small");

static inline struct ito__barrier *B(ito_barrier_t *b) { return (struct ito__barrier *)b; }

ITO_API int ito_barrier_init(ito_barrier_t *ub, unsigned count)
{
    if (!ub || count == 0)
        return EINVAL;
    struct ito__barrier *b = B(ub);
    ito__spin_init(&b->lk, ITO__LOCK_OBJECT);
    b->count = count;
    b->arrived = 0;
    ito__waitq_init(&b->q);
    return 0;
}

ITO_API int ito_barrier_destroy(ito_barrier_t *ub)
{
    if (!ub)
        return EINVAL;
    struct ito__barrier *b = B(ub);
    int e = 0;
    ito__spin_lock(&b->lk);
    if (!b->count)
        e = EINVAL;
    else if (b->arrived)
        e = EBUSY;
    else
        b->count = 0;
    ito__spin_unlock(&b->lk);
    return e;
}

ITO_API int ito_barrier_wait(ito_barrier_t *ub)
{
    if (!ub)
        return EINVAL;
    ito__ensure_init();
    struct ito__barrier *b = B(ub);
    ito__critical_none();
    ito__spin_lock(&b->lk);
    if (!b->count) {
        ito__spin_unlock(&b->lk);
        return EINVAL;
    }
    if (++b->arrived == b->count) {
        b->arrived = 0;
        struct ito__waiter *list = ito__waitq_claim_all(&b->q);
        ito__spin_unlock(&b->lk);
        ito__wake_finish_all(list);
        return ITO_BARRIER_SERIAL;
    }
    struct ito__waiter local;
    struct ito__waiter *w = ito__waiter_init(&local);
    ito__waitq_push(&b->q, w);
    ito__wait_begin(w, 0, &b->lk, &b->q, ITO__ON_BARRIER, b);
    ito__spin_unlock(&b->lk);
    ito__wait_end(w, &b->lk, &b->q);
    return 0;
}
