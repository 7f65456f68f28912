/* SPDX-License-Identifier: MIT */
/* A test-and-test-and-set spinlock for ito's own short critical sections
 * (wait queues, the global ready queue, descriptor pools).
 *
 * Rules: hold it for a few dozen instructions at most, never across a
 * context switch, a system call on the hot path, or a call that may switch.
 * Acquire pairs with the release in unlock. Holding one is a critical
 * section (runtime/critical.h): a time slice that ends meanwhile takes
 * effect at the unlock.
 *
 * Every lock has a kind, and the kinds have an order (outer first): the
 * table in lockorder.c is the lock order, as data. ITO_DEBUG builds keep the
 * kind in the lock word (bits 8..15; bit 0 is the lock) and a list of the
 * locks each kernel thread holds, and abort, naming both locks, when one is
 * taken inside another that is not strictly outer to it. Release builds
 * keep only the lock bit. Zero is the unlocked state of a lock of kind
 * OBJECT (a sync object's), so zeroed memory is such an unlocked spinlock;
 * every other lock is set up with ito__spin_init before its first use. */
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

/* The kinds of lock (their order: lockorder.c). */
enum ito__lock_kind {
    ITO__LOCK_OBJECT = 0,   /* a sync object's: mutex, condition, rwlock, barrier, semaphore, once */
    ITO__LOCK_RING,         /* a vproc's io_uring ring (runtime/ring.c) */
    ITO__LOCK_KEYS,         /* thread-specific data keys (runtime/key.c) */
    ITO__LOCK_THREAD,       /* a thread's t->lk */
    ITO__LOCK_TIMERS,       /* a vproc's timer heap */
    ITO__LOCK_HANDLES,      /* descriptor chunks (runtime/handle.c) */
    ITO__LOCK_STACKS,       /* a stack pool (runtime/stack.c) */
    ITO__LOCK_SPARES,       /* the spare activations */
    ITO__LOCK_GLOBAL_QUEUE, /* the global ready queue */
    ITO__LOCK_STEAL,        /* a policy's thief lock (ws: yield-queue thieves) */
    ITO__LOCK_POLICY_QUEUE, /* a policy's ready queue (fifo, prio, affinity) */
    ITO__LOCK_HELD_QUEUE,   /* a vproc's threads held to it by their CPU set (affinity.c) */
    ITO__LOCK_KINDS
};

#ifdef ITO_DEBUG
#define ITO__LOCK_BIT 1u
/* lockorder.c: check and record an acquisition (after it succeeded), and
 * forget a release. */
void ito__lock_order_acquired(ito__spinlock *l);
void ito__lock_order_released(ito__spinlock *l);
#endif

/* A static initializer: an unlocked lock of kind `kind`. */
#ifdef ITO_DEBUG
#define ITO__SPINLOCK_INITIALIZER(kind) { (uint32_t)(kind) << 8 }
#else
#define ITO__SPINLOCK_INITIALIZER(kind) { 0 }
#endif

/* Set up l, unlocked, as a lock of kind `kind`. */
ITO_INLINE void ito__spin_init(ito__spinlock *l, enum ito__lock_kind kind)
{
#ifdef ITO_DEBUG
    atomic_store_explicit(&l->locked, (uint32_t)kind << 8, memory_order_relaxed);
#else
    (void)kind;
    atomic_store_explicit(&l->locked, 0, memory_order_relaxed);
#endif
}

ITO_INLINE bool ito__spin_trylock(ito__spinlock *l)
{
    ito__critical_enter();
#ifdef ITO_DEBUG
    if (!(atomic_load_explicit(&l->locked, memory_order_relaxed) & ITO__LOCK_BIT) &&
        !(atomic_fetch_or_explicit(&l->locked, ITO__LOCK_BIT, memory_order_acquire) & ITO__LOCK_BIT)) {
        ito__lock_order_acquired(l);
        return true;
    }
#else
    if (atomic_load_explicit(&l->locked, memory_order_relaxed) == 0 &&
        atomic_exchange_explicit(&l->locked, 1, memory_order_acquire) == 0)
        return true;
#endif
    ito__critical_exit();
    return false;
}

void ito__spin_lock_slow(ito__spinlock *l);

ITO_INLINE void ito__spin_lock(ito__spinlock *l)
{
    ito__critical_enter();
#ifdef ITO_DEBUG
    if (!(atomic_fetch_or_explicit(&l->locked, ITO__LOCK_BIT, memory_order_acquire) & ITO__LOCK_BIT)) {
        ito__lock_order_acquired(l);
        return;
    }
#else
    if (ITO_LIKELY(atomic_exchange_explicit(&l->locked, 1, memory_order_acquire) == 0))
        return;
#endif
    ito__spin_lock_slow(l);
}

ITO_INLINE void ito__spin_unlock(ito__spinlock *l)
{
#ifdef ITO_DEBUG
    ito__lock_order_released(l);
    atomic_fetch_and_explicit(&l->locked, ~ITO__LOCK_BIT, memory_order_release);
#else
    atomic_store_explicit(&l->locked, 0, memory_order_release);
#endif
    ito__critical_exit();
}

ITO_INLINE bool ito__spin_is_locked(ito__spinlock *l)
{
#ifdef ITO_DEBUG
    return atomic_load_explicit(&l->locked, memory_order_relaxed) & ITO__LOCK_BIT;
#else
    return atomic_load_explicit(&l->locked, memory_order_relaxed) != 0;
#endif
}

#endif
