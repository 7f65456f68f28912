/* SPDX-License-Identifier: MIT */
/* The mutex's layout and fast paths, shared with the condition variable. */
#ifndef ITO_API_MUTEX_H
#define ITO_API_MUTEX_H

#include <stdatomic.h>
#include <stdint.h>

#include "runtime/spinlock.h"
#include "runtime/wait.h"

#define ITO__MUTEX_WAITERS ((uintptr_t)1)
#define ITO__MUTEX_DESTROYED ((uintptr_t)2)

struct ito__mutex {
    _Atomic uintptr_t word;     /* owner | WAITERS, or DESTROYED */
    ito__spinlock lk;           /* protects q */
    struct ito__waitq q;
};

/* The slow paths work on the three parts wherever they lie: the POSIX face
 * keeps them around glibc's layout of pthread_mutex_t (posix/mutex.c). */
int ito__lockword_lock_slow(_Atomic uintptr_t *word, ito__spinlock *lk, struct ito__waitq *q, uintptr_t self,
                            uint64_t deadline);
int ito__lockword_unlock_slow(_Atomic uintptr_t *word, ito__spinlock *lk, struct ito__waitq *q, uintptr_t self);

static inline int ito__mutex_lock_slow(struct ito__mutex *m, uintptr_t self, uint64_t deadline)
{
    return ito__lockword_lock_slow(&m->word, &m->lk, &m->q, self, deadline);
}

static inline int ito__mutex_unlock_slow(struct ito__mutex *m, uintptr_t self)
{
    return ito__lockword_unlock_slow(&m->word, &m->lk, &m->q, self);
}

static inline int ito__mutex_lock(struct ito__mutex *m, uintptr_t self)
{
    uintptr_t exp = 0;
    /* Acquire pairs with the release CAS/store of the previous unlock. */
    if (__builtin_expect(atomic_compare_exchange_strong_explicit(&m->word, &exp, self, memory_order_acquire,
                                                                 memory_order_relaxed), 1))
        return 0;
    return ito__mutex_lock_slow(m, self, 0);
}

static inline int ito__mutex_unlock(struct ito__mutex *m, uintptr_t self)
{
    uintptr_t exp = self;
    if (__builtin_expect(atomic_compare_exchange_strong_explicit(&m->word, &exp, 0, memory_order_release,
                                                                 memory_order_relaxed), 1))
        return 0;
    return ito__mutex_unlock_slow(m, self);
}

static inline bool ito__mutex_held_by(struct ito__mutex *m, uintptr_t self)
{
    return (atomic_load_explicit(&m->word, memory_order_relaxed) & ~ITO__MUTEX_WAITERS) == self;
}

#endif
