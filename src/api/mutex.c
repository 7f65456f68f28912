/* SPDX-License-Identifier: MIT */
/*
 * Mutex.
 *
 * One word says it all on the fast path: 0 when free, else the owner's
 * identity (api/owner.h) with bit 0 (WAITERS) set when threads may be
 * queued. Lock is one CAS 0 -> self; unlock one CAS self -> 0. Bit 1
 * (DESTROYED) marks a destroyed mutex, so that later use reports EINVAL.
 *
 * Contended, a locker spins briefly while the owner is running on another
 * vproc (critical sections are usually shorter than a park and a wake-up),
 * then queues itself under the mutex's spinlock, sets WAITERS and parks.
 * Unlock with WAITERS set wakes the first waiter and releases the mutex: the
 * woken thread competes again (no hand-off, which would force every
 * acquisition to wait for the next owner to be scheduled — lock convoys) and,
 * if it loses, goes back to the head of the queue.
 *
 * Misuse is reported: relocking by the owner (EDEADLK), unlocking by another
 * thread (EPERM), use after destroy (EINVAL). The mutex is not recursive.
 */
#include <errno.h>

#include <ito.h>

#include "base/clock.h"
#include "api/init.h"
#include "runtime/critical.h"
#include "runtime/runtime.h"
#include "api/mutex.h"
#include "api/owner.h"
#include "api/rwlock.h"
#include "runtime/wait.h"

#define MUTEX_SPINS 64

_Static_assert(sizeof(struct ito__mutex) <= sizeof(ito_mutex_t), "ito_mutex_t too small");
_Static_assert(_Alignof(struct ito__mutex) <= _Alignof(ito_mutex_t), "ito_mutex_t misaligned");

static __thread uint64_t foreign_id __attribute__((aligned(8)));

uintptr_t ito__owner_foreign(void) { return (uintptr_t)&foreign_id | ITO__OWNER_FOREIGN; }

/* Who holds a lock that a blocked thread waits on, for the thread reports
 * (runtime/hooks.h: lock_owner): a mutex's lock word (also the POSIX
 * face's), a rwlock's writer. Read relaxed: a report shows a moment. */
struct ito__thread *ito__lock_owner(int on, const void *obj, bool *foreign)
{
    uintptr_t o;
    if (on == ITO__ON_MUTEX)
        o = atomic_load_explicit((_Atomic uintptr_t *)obj, memory_order_relaxed) &
            ~(ITO__MUTEX_WAITERS | ITO__MUTEX_DESTROYED);
    else if (on == ITO__ON_RWLOCK)
        o = __atomic_load_n(&((const struct ito__rwlock *)obj)->writer, __ATOMIC_RELAXED);
    else
        return NULL;
    if (o & ITO__OWNER_FOREIGN) {
        *foreign = true;
        return NULL;
    }
    return (struct ito__thread *)o;
}

static inline struct ito__mutex *M(ito_mutex_t *m) { return (struct ito__mutex *)m; }

ITO_API int ito_mutex_init(ito_mutex_t *um)
{
    if (!um)
        return EINVAL;
    struct ito__mutex *m = M(um);
    atomic_store_explicit(&m->word, 0, memory_order_relaxed);
    ito__spin_init(&m->lk, ITO__LOCK_OBJECT);
    ito__waitq_init(&m->q);
    return 0;
}

ITO_API int ito_mutex_destroy(ito_mutex_t *um)
{
    if (!um)
        return EINVAL;
    struct ito__mutex *m = M(um);
    uintptr_t w = 0;
    if (atomic_compare_exchange_strong_explicit(&m->word, &w, ITO__MUTEX_DESTROYED, memory_order_relaxed,
                                                memory_order_relaxed))
        return 0;
    if (w & ITO__MUTEX_DESTROYED)
        return EINVAL;
    if (w != ITO__MUTEX_WAITERS)
        return EBUSY;
    /* WAITERS without owner: busy only if someone is still queued. */
    int e = EBUSY;
    ito__spin_lock(&m->lk);
    if (ito__waitq_empty(&m->q) &&
        atomic_compare_exchange_strong_explicit(&m->word, &w, ITO__MUTEX_DESTROYED, memory_order_relaxed,
                                                memory_order_relaxed))
        e = 0;
    ito__spin_unlock(&m->lk);
    return e;
}

int ito__lockword_lock_slow(_Atomic uintptr_t *word, ito__spinlock *lk, struct ito__waitq *q, uintptr_t self,
                            uint64_t deadline)
{
    ito__critical_none();
    unsigned spins = 0;
    bool requeue = false;
    for (;;) {
        uintptr_t w = atomic_load_explicit(word, memory_order_relaxed);
        if (w & ITO__MUTEX_DESTROYED)
            return EINVAL;
        uintptr_t owner = w & ~ITO__MUTEX_WAITERS;
        if (owner == self)
            return EDEADLK;
        if (owner == 0) {
            /* Acquire pairs with the release in unlock. */
            if (atomic_compare_exchange_weak_explicit(word, &w, self | (w & ITO__MUTEX_WAITERS),
                                                      memory_order_acquire, memory_order_relaxed))
                return 0;
            continue;
        }
        if (spins < MUTEX_SPINS && !requeue && ito__owner_running(owner)) {
            spins++;
            ito__cpu_relax();
            continue;
        }
        if (deadline && ito__now_ns() >= deadline)
            return ETIMEDOUT;
        struct ito__waiter local;
        ito__spin_lock(lk);
        w = atomic_load_explicit(word, memory_order_relaxed);
        if ((w & ~ITO__MUTEX_WAITERS) == 0 || (w & ITO__MUTEX_DESTROYED) ||
            (!(w & ITO__MUTEX_WAITERS) &&
             !atomic_compare_exchange_strong_explicit(word, &w, w | ITO__MUTEX_WAITERS,
                                                      memory_order_relaxed, memory_order_relaxed))) {
            ito__spin_unlock(lk);
            continue;   /* changed under us: look again */
        }
        struct ito__waiter *wt = ito__waiter_init(&local);
        if (requeue)
            ito__waitq_push_front(q, wt);   /* woken but lost the race: keep its place */
        else
            ito__waitq_push(q, wt);
        ito__wait_begin(wt, deadline, lk, q, ITO__ON_MUTEX, word);
        ito__spin_unlock(lk);
        if (ito__wait_end(wt, lk, q) == ETIMEDOUT)
            return ETIMEDOUT;
        requeue = true;
        spins = 0;
    }
}

int ito__lockword_unlock_slow(_Atomic uintptr_t *word, ito__spinlock *lk, struct ito__waitq *q, uintptr_t self)
{
    uintptr_t w = atomic_load_explicit(word, memory_order_relaxed);
    if (w & ITO__MUTEX_DESTROYED)
        return EINVAL;
    if ((w & ~ITO__MUTEX_WAITERS) != self)
        return EPERM;
    /* WAITERS is set and only changes under lk while we own the word. */
    ito__spin_lock(lk);
    struct ito__waiter *wt = ito__waitq_pop_claim(q);
    /* Release pairs with the acquire CAS of the next owner. */
    atomic_store_explicit(word, ito__waitq_empty(q) ? 0 : ITO__MUTEX_WAITERS, memory_order_release);
    ito__spin_unlock(lk);
    if (wt)
        ito__wake_finish(wt);
    return 0;
}

ITO_API int ito_mutex_lock(ito_mutex_t *um)
{
    if (!um)
        return EINVAL;
    ito__ensure_init();
    return ito__mutex_lock(M(um), ito__owner_self());
}

ITO_API int ito_mutex_trylock(ito_mutex_t *um)
{
    if (!um)
        return EINVAL;
    ito__ensure_init();
    struct ito__mutex *m = M(um);
    uintptr_t self = ito__owner_self();
    uintptr_t w = atomic_load_explicit(&m->word, memory_order_relaxed);
    for (;;) {
        if (w & ITO__MUTEX_DESTROYED)
            return EINVAL;
        if (w & ~ITO__MUTEX_WAITERS)
            return EBUSY;
        if (atomic_compare_exchange_weak_explicit(&m->word, &w, self | w, memory_order_acquire,
                                                  memory_order_relaxed))
            return 0;
    }
}

ITO_API int ito_mutex_timedlock(ito_mutex_t *um, const struct timespec *abstime)
{
    uint64_t deadline;
    if (!um || !abstime || !ito__timespec_to_ns(abstime, &deadline))
        return EINVAL;
    ito__ensure_init();
    struct ito__mutex *m = M(um);
    uintptr_t self = ito__owner_self(), exp = 0;
    if (atomic_compare_exchange_strong_explicit(&m->word, &exp, self, memory_order_acquire,
                                                memory_order_relaxed))
        return 0;
    return ito__mutex_lock_slow(m, self, deadline);
}

ITO_API int ito_mutex_unlock(ito_mutex_t *um)
{
    if (!um)
        return EINVAL;
    return ito__mutex_unlock(M(um), ito__owner_self());
}
