/* SPDX-License-Identifier: MIT */
/*
 * One-time initialization: the first caller runs fn; callers that arrive
 * meanwhile park until it is done; later callers see DONE with one acquire
 * load (pairs with the release store after fn).
 */
#include <errno.h>

#include <ito.h>

#include "api/init.h"
#include "runtime/critical.h"
#include "runtime/runtime.h"
#include "api/owner.h"
#include "runtime/wait.h"

enum { ONCE_INIT = 0, ONCE_RUNNING = 1, ONCE_DONE = 2 };

struct ito__once {
    _Atomic uint32_t state;
    ito__spinlock lk;
    uintptr_t runner;           /* lk */
    struct ito__waitq q;        /* lk */
};

_Static_assert(sizeof(struct ito__once) <= sizeof(ito_once_t), "ito_once_t too small");

ITO_API int ito_once(ito_once_t *uo, void (*fn)(void))
{
    if (!uo || !fn)
        return EINVAL;
    struct ito__once *o = (struct ito__once *)uo;
    if (atomic_load_explicit(&o->state, memory_order_acquire) == ONCE_DONE)
        return 0;
    ito__ensure_init();
    uintptr_t self = ito__owner_self();
    struct ito__waiter local;
    ito__critical_none();
    ito__spin_lock(&o->lk);
    uint32_t st = atomic_load_explicit(&o->state, memory_order_relaxed);
    if (st == ONCE_DONE) {
        ito__spin_unlock(&o->lk);
        return 0;
    }
    if (st == ONCE_RUNNING) {
        if (o->runner == self) {
            ito__spin_unlock(&o->lk);
            return EDEADLK;
        }
        struct ito__waiter *w = ito__waiter_init(&local);
        ito__waitq_push(&o->q, w);
        ito__wait_begin(w, 0, &o->lk, &o->q, ITO__ON_ONCE, o);
        ito__spin_unlock(&o->lk);
        ito__wait_end(w, &o->lk, &o->q);
        return 0;
    }
    atomic_store_explicit(&o->state, ONCE_RUNNING, memory_order_relaxed);
    o->runner = self;
    ito__spin_unlock(&o->lk);
    fn();
    ito__spin_lock(&o->lk);
    atomic_store_explicit(&o->state, ONCE_DONE, memory_order_release);
    struct ito__waiter *list = ito__waitq_claim_all(&o->q);
    ito__spin_unlock(&o->lk);
    ito__wake_finish_all(list);
    return 0;
}
