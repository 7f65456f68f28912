/* The contended path of ito's spinlock (spinlock.h). */
#include "runtime/spinlock.h"

#include "base/backoff.h"

void ito__spin_lock_slow(ito__spinlock *l)
{
    for (;;) {
        for (unsigned spins = 0; atomic_load_explicit(&l->locked, memory_order_relaxed);)
            ito__backoff(&spins);
        if (atomic_exchange_explicit(&l->locked, 1, memory_order_acquire) == 0)
            return;
    }
}
