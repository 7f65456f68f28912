/* SPDX-License-Identifier: MIT */
/* A work-stealing deque (Chase & Lev, SPAA 2005) with the C11 memory orders
 * of Lê, Pop, Cohen and Zappa Nardelli (PPoPP 2013). The algorithm and the
 * pairing of every order are explained in deque.c; the owner's operations are
 * here, inline, because they sit on the spawn and switch paths. */
#ifndef ITO_POLICY_DEQUE_H
#define ITO_POLICY_DEQUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/compiler.h"

struct ito__deque_buf {
    int64_t cap;                      /* power of two */
    struct ito__deque_buf *prev;      /* retired list */
    _Atomic(void *) slot[];
};

struct ito__deque {
    _Atomic int64_t top ITO_ALIGNED_CACHELINE;      /* thieves take here (CAS) */
    _Atomic int64_t bottom ITO_ALIGNED_CACHELINE;   /* the owner pushes and takes here */
    _Atomic(struct ito__deque_buf *) buf;
    struct ito__deque_buf *retired;                 /* owner: buffers outgrown */
    bool solo;                                      /* no thieves exist (one vproc) */
};

enum { ITO__DEQUE_EMPTY = 0, ITO__DEQUE_LOST = 1, ITO__DEQUE_OK = 2 };

int ito__deque_init(struct ito__deque *d, unsigned log_cap);
/* The owner's push into a full deque: a buffer twice as large, or NULL if
 * there is no memory for one (the deque stays as it was). */
struct ito__deque_buf *ito__deque_grow(struct ito__deque *d, struct ito__deque_buf *a, int64_t t, int64_t b);
/* Anyone: take the oldest item. */
int ito__deque_steal(struct ito__deque *d, void **x);

/* Owner: push at the bottom. false: the deque is full and there is no
 * memory to grow it; x is not in it (the caller puts it elsewhere). */
ITO_WARN_UNUSED static inline bool ito__deque_push(struct ito__deque *d, void *x)
{
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
    int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
    struct ito__deque_buf *a = atomic_load_explicit(&d->buf, memory_order_relaxed);
    if (ITO_UNLIKELY(b - t > a->cap - 1) && !(a = ito__deque_grow(d, a, t, b)))
        return false;
    atomic_store_explicit(&a->slot[b & (a->cap - 1)], x, memory_order_relaxed);
    /* Release pairs with the thieves' acquire load of bottom. */
    atomic_store_explicit(&d->bottom, b + 1, memory_order_release);
    return true;
}

/* Owner: the item take would return next, or NULL. */
static inline void *ito__deque_peek(struct ito__deque *d)
{
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
    if (atomic_load_explicit(&d->top, memory_order_relaxed) >= b)
        return NULL;
    struct ito__deque_buf *a = atomic_load_explicit(&d->buf, memory_order_relaxed);
    return atomic_load_explicit(&a->slot[(b - 1) & (a->cap - 1)], memory_order_relaxed);
}

/* The take of a deque that thieves may touch (deque.c), b = bottom - 1. */
void *ito__deque_take_shared(struct ito__deque *d, int64_t b);

/* Owner: take the newest item, or NULL. */
static inline void *ito__deque_take(struct ito__deque *d)
{
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
    /* Empty for sure (top never decreases, only we move bottom): skip the fence. */
    if (atomic_load_explicit(&d->top, memory_order_relaxed) >= b)
        return NULL;
    b--;
    if (!d->solo)
        return ito__deque_take_shared(d, b);
    /* Nobody steals: a plain pop. */
    struct ito__deque_buf *a = atomic_load_explicit(&d->buf, memory_order_relaxed);
    atomic_store_explicit(&d->bottom, b, memory_order_relaxed);
    return atomic_load_explicit(&a->slot[b & (a->cap - 1)], memory_order_relaxed);
}

/* Approximate number of items (for deciding how much to steal). */
static inline int64_t ito__deque_size(struct ito__deque *d)
{
    int64_t n = atomic_load_explicit(&d->bottom, memory_order_relaxed) -
                atomic_load_explicit(&d->top, memory_order_relaxed);
    return n > 0 ? n : 0;
}

#endif
