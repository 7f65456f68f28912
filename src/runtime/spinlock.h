/* A test-and-test-and-set spinlock for ito's own short critical sections
 * (wait queues, the global ready queue, descriptor pools).
 *
 * Rules: hold it for a few dozen instructions at most, never across a
 * context switch, a system call on the hot path, or a call that may switch.
 * Lock order (outer first): sync object lock > thread lock (t->lk) > timer
 * heap lock > pool/queue locks. Acquire pairs with the release in unlock.
 * Holding one is a critical section (runtime/critical.h): a time slice that ends
 * meanwhile takes effect at the unlock.
 * Zero is the unlocked state, so zeroed memory is an unlocked spinlock. */
#ifndef ITO_RUNTIME_SPINLOCK_H
#define ITO_RUNTIME_SPINLOCK_H

#include <sched.h>
#include <stdatomic.h>

#include "base/compiler.h"
#include "runtime/critical.h"
#include "arch.h"

typedef struct ito__spinlock {
    _Atomic uint32_t locked;
} ito__spinlock;

ITO_INLINE bool ito__spin_trylock(ito__spinlock *l)
{
    ito__critical_enter();
    if (atomic_load_explicit(&l->locked, memory_order_relaxed) == 0 &&
        atomic_exchange_explicit(&l->locked, 1, memory_order_acquire) == 0)
        return true;
    ito__critical_exit();
    return false;
}

void ito__spin_lock_slow(ito__spinlock *l);

ITO_INLINE void ito__spin_lock(ito__spinlock *l)
{
    ito__critical_enter();
    if (ITO_LIKELY(atomic_exchange_explicit(&l->locked, 1, memory_order_acquire) == 0))
        return;
    ito__spin_lock_slow(l);
}

ITO_INLINE void ito__spin_unlock(ito__spinlock *l)
{
    atomic_store_explicit(&l->locked, 0, memory_order_release);
    ito__critical_exit();
}

ITO_INLINE bool ito__spin_is_locked(ito__spinlock *l)
{
    return atomic_load_explicit(&l->locked, memory_order_relaxed) != 0;
}

#endif
