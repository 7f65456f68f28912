/* SPDX-License-Identifier: MIT */
/* The contended path of ito's spinlock (spinlock.h). */
#include "runtime/spinlock.h"

#include "base/backoff.h"

void ito__spin_lock_slow(ito__spinlock *l)
{
    for (;;) {
        for (unsigned spins = 0; ito__spin_is_locked(l);)
            ito__backoff(&spins);
#ifdef ITO_DEBUG
        if (!(atomic_fetch_or_explicit(&l->locked, ITO__LOCK_BIT, memory_order_acquire) & ITO__LOCK_BIT)) {
            ito__lock_order_acquired(l);
            return;
        }
#else
        if (atomic_exchange_explicit(&l->locked, 1, memory_order_acquire) == 0)
            return;
#endif
    }
}
