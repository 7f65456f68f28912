/* SPDX-License-Identifier: MIT */
/*
 * The lock order, as data, and its check (ITO_DEBUG builds).
 *
 * ORDER lists the kinds of spinlock (spinlock.h) from the outermost to the
 * innermost: a kernel thread may take a lock only while every lock it holds
 * is of a kind strictly earlier in the list. Two locks of one kind are never
 * held at once (two threads' locks, two policy queues, two sync objects): a
 * second would need an order among the instances, which ito never needs.
 *
 * The check keeps, per kernel thread, the locks it holds. A spinlock is
 * never held across a context switch and holding one is a critical section,
 * so the holder cannot move to another kernel thread: a thread-local list is
 * exact, and it is touched only between the lock's critical-section entry
 * and exit. Release builds compile none of this.
 */
#include "runtime/spinlock.h"

#ifdef ITO_DEBUG

#include "base/panic.h"

/* Outer first. The position in this list is the rank. */
static const enum ito__lock_kind ORDER[] = {
    ITO__LOCK_RING,          /* held across io_uring_enter; takes the object's and thread's below */
    ITO__LOCK_OBJECT,
    ITO__LOCK_KEYS,
    ITO__LOCK_THREAD,
    ITO__LOCK_TIMERS,
    ITO__LOCK_HANDLES,
    ITO__LOCK_STACKS,
    ITO__LOCK_SPARES,
    ITO__LOCK_GLOBAL_QUEUE,
    ITO__LOCK_STEAL,
    ITO__LOCK_POLICY_QUEUE,  /* a policy's locks hold none of the others */
    ITO__LOCK_HELD_QUEUE,    /* innermost: taken alone, around a list operation */
};
_Static_assert(sizeof ORDER / sizeof ORDER[0] == ITO__LOCK_KINDS, "every kind of lock has a rank");

static const char *const NAME[ITO__LOCK_KINDS] = {
    [ITO__LOCK_OBJECT] = "a sync object's lock",
    [ITO__LOCK_RING] = "a ring's lock",
    [ITO__LOCK_KEYS] = "the keys lock",
    [ITO__LOCK_THREAD] = "a thread's lock (t->lk)",
    [ITO__LOCK_TIMERS] = "a timer heap's lock",
    [ITO__LOCK_HANDLES] = "the descriptor chunks' lock",
    [ITO__LOCK_STACKS] = "a stack pool's lock",
    [ITO__LOCK_SPARES] = "the spare activations' lock",
    [ITO__LOCK_GLOBAL_QUEUE] = "the global queue's lock",
    [ITO__LOCK_STEAL] = "a policy's thief lock",
    [ITO__LOCK_POLICY_QUEUE] = "a policy queue's lock",
    [ITO__LOCK_HELD_QUEUE] = "a vproc's queue of held threads",
};

#define HELD_MAX 8

/* The locks this kernel thread holds, in the order taken. */
static __thread ito__spinlock *held[HELD_MAX];
static __thread unsigned nheld;

static enum ito__lock_kind kind_of(const ito__spinlock *l)
{
    return (enum ito__lock_kind)((atomic_load_explicit(&((ito__spinlock *)l)->locked, memory_order_relaxed) >> 8) &
                                 0xff);
}

static int rank_of(enum ito__lock_kind k)
{
    for (int r = 0; r < ITO__LOCK_KINDS; r++)
        if (ORDER[r] == k)
            return r;
    return -1;
}

void ito__lock_order_acquired(ito__spinlock *l)
{
    enum ito__lock_kind k = kind_of(l);
    int r = rank_of(k);
    if (r < 0)
        ito__panic("internal error: spinlock %p has no valid kind (%d); set it up with ito__spin_init",
                   (void *)l, (int)k);
    for (unsigned i = 0; i < nheld; i++) {
        enum ito__lock_kind hk = kind_of(held[i]);
        if (rank_of(hk) >= r)
            ito__panic("internal error: lock order violated: %s (%p) taken while holding %s (%p); "
                       "the order (runtime/lockorder.c) puts %s first",
                       NAME[k], (void *)l, NAME[hk], (void *)held[i], hk == k ? "neither" : NAME[k]);
    }
    if (nheld == HELD_MAX)
        ito__panic("internal error: more than %d spinlocks held at once", HELD_MAX);
    held[nheld++] = l;
}

void ito__lock_order_released(ito__spinlock *l)
{
    for (unsigned i = nheld; i-- > 0;) {
        if (held[i] == l) {
            for (unsigned j = i; j + 1 < nheld; j++)
                held[j] = held[j + 1];
            nheld--;
            return;
        }
    }
    ito__panic("internal error: lock order bookkeeping: spinlock %p (%s) released by a kernel "
               "thread that does not hold it",
               (void *)l, NAME[kind_of(l)]);
}

#endif
