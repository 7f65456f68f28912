/* SPDX-License-Identifier: MIT */
/*
 * Counting semaphore. The count is an atomic word so that an uncontended
 * wait is one CAS; waiters queue under the spinlock only when the count is 0,
 * and post hands its unit directly to the first waiter (the count stays 0),
 * so a woken thread never has to compete for it again. Invariant (under lk):
 * the queue is non-empty only while the count is 0.
 */
#include <errno.h>

#include <ito.h>

#include "base/clock.h"
#include "api/init.h"
#include "runtime/critical.h"
#include "runtime/runtime.h"
#include "runtime/wait.h"

#define SEM_DESTROYED 0xdead5e11u

struct ito__sem {
    _Atomic uint32_t value;     /* decremented without the lock, incremented under it */
    ito__spinlock lk;
    _Atomic uint32_t destroyed; /* written under lk, read also without it (fast paths) */
    uint32_t tag;               /* not ito's: the POSIX face marks its semaphores here (posix/sem.c) */
    struct ito__waitq q;
};

_Static_assert(sizeof(struct ito__sem) <= sizeof(ito_sem_t), "ito_sem_t too small");

static inline struct ito__sem *S(ito_sem_t *s) { return (struct ito__sem *)s; }

ITO_API int ito_sem_init(ito_sem_t *us, unsigned value)
{
    if (!us || value > ITO_SEM_VALUE_MAX)
        return EINVAL;
    struct ito__sem *s = S(us);
    atomic_store_explicit(&s->value, value, memory_order_relaxed);
    ito__spin_init(&s->lk, ITO__LOCK_OBJECT);
    atomic_store_explicit(&s->destroyed, 0, memory_order_relaxed);
    ito__waitq_init(&s->q);
    return 0;
}

ITO_API int ito_sem_destroy(ito_sem_t *us)
{
    if (!us)
        return EINVAL;
    struct ito__sem *s = S(us);
    int e = 0;
    ito__spin_lock(&s->lk);
    if (atomic_load_explicit(&s->destroyed, memory_order_relaxed) == SEM_DESTROYED)
        e = EINVAL;
    else if (!ito__waitq_empty(&s->q))
        e = EBUSY;
    else
        atomic_store_explicit(&s->destroyed, SEM_DESTROYED, memory_order_relaxed);
    ito__spin_unlock(&s->lk);
    return e;
}

static bool try_take(struct ito__sem *s)
{
    uint32_t v = atomic_load_explicit(&s->value, memory_order_relaxed);
    while (v) {
        /* Acquire pairs with the release increment in post. */
        if (atomic_compare_exchange_weak_explicit(&s->value, &v, v - 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return true;
    }
    return false;
}

static int sem_wait(struct ito__sem *s, uint64_t deadline)
{
    ito__ensure_init();
    if (atomic_load_explicit(&s->destroyed, memory_order_relaxed) == SEM_DESTROYED)
        return EINVAL;
    if (try_take(s))
        return 0;
    struct ito__waiter local;
    ito__critical_none();
    ito__spin_lock(&s->lk);
    if (atomic_load_explicit(&s->destroyed, memory_order_relaxed) == SEM_DESTROYED) {
        ito__spin_unlock(&s->lk);
        return EINVAL;
    }
    if (try_take(s)) {
        ito__spin_unlock(&s->lk);
        return 0;
    }
    if (deadline && ito__now_ns() >= deadline) {
        ito__spin_unlock(&s->lk);
        return ETIMEDOUT;
    }
    struct ito__waiter *w = ito__waiter_init(&local);
    ito__waitq_push(&s->q, w);
    ito__wait_begin(w, deadline, &s->lk, &s->q, ITO__ON_SEM, s);
    ito__spin_unlock(&s->lk);
    return ito__wait_end(w, &s->lk, &s->q);   /* 0: post handed us its unit */
}

ITO_API int ito_sem_wait(ito_sem_t *s)
{
    if (!s)
        return EINVAL;
    return sem_wait(S(s), 0);
}

ITO_API int ito_sem_timedwait(ito_sem_t *s, const struct timespec *abstime)
{
    uint64_t deadline;
    if (!s || !abstime || !ito__timespec_to_ns(abstime, &deadline))
        return EINVAL;
    return sem_wait(S(s), deadline);
}

ITO_API int ito_sem_trywait(ito_sem_t *us)
{
    if (!us)
        return EINVAL;
    struct ito__sem *s = S(us);
    if (atomic_load_explicit(&s->destroyed, memory_order_relaxed) == SEM_DESTROYED)
        return EINVAL;
    return try_take(s) ? 0 : EAGAIN;
}

ITO_API int ito_sem_post(ito_sem_t *us)
{
    if (!us)
        return EINVAL;
    struct ito__sem *s = S(us);
    ito__spin_lock(&s->lk);
    if (atomic_load_explicit(&s->destroyed, memory_order_relaxed) == SEM_DESTROYED) {
        ito__spin_unlock(&s->lk);
        return EINVAL;
    }
    struct ito__waiter *w = ito__waitq_pop_claim(&s->q);
    if (!w) {
        uint32_t v = atomic_load_explicit(&s->value, memory_order_relaxed);
        if (v >= ITO_SEM_VALUE_MAX) {
            ito__spin_unlock(&s->lk);
            return EOVERFLOW;
        }
        atomic_fetch_add_explicit(&s->value, 1, memory_order_release);
    }
    ito__spin_unlock(&s->lk);
    if (w)
        ito__wake_finish(w);
    return 0;
}

ITO_API int ito_sem_get_value(ito_sem_t *us, unsigned *value)
{
    if (!us || !value)
        return EINVAL;
    struct ito__sem *s = S(us);
    if (atomic_load_explicit(&s->destroyed, memory_order_relaxed) == SEM_DESTROYED)
        return EINVAL;
    *value = atomic_load_explicit(&s->value, memory_order_relaxed);
    return 0;
}
