/* A work-stealing deque (Chase & Lev, SPAA 2005) with the C11 memory orders
 * of Lê, Pop, Cohen and Zappa Nardelli (PPoPP 2013). See deque.c. */
#ifndef ITO_POLICY_DEQUE_H
#define ITO_POLICY_DEQUE_H

#include <stdatomic.h>
#include <stdint.h>

#include "base/compiler.h"

struct ito__deque_buf;

struct ito__deque {
    _Atomic int64_t top ITO_ALIGNED_CACHELINE;      /* thieves take here (CAS) */
    _Atomic int64_t bottom ITO_ALIGNED_CACHELINE;   /* the owner pushes and takes here */
    _Atomic(struct ito__deque_buf *) buf;
    struct ito__deque_buf *retired;                 /* owner: buffers outgrown */
    bool solo;                                      /* no thieves exist (one vproc) */
};

enum { ITO_DEQUE_EMPTY = 0, ITO_DEQUE_LOST = 1, ITO_DEQUE_OK = 2 };

int ito__deque_init(struct ito__deque *d, unsigned log_cap);
/* Owner only. */
void ito__deque_push(struct ito__deque *d, void *x);
void *ito__deque_take(struct ito__deque *d);
/* Owner only: the item take would return next, or NULL. */
void *ito__deque_peek(struct ito__deque *d);
/* Anyone. */
int ito__deque_steal(struct ito__deque *d, void **x);
/* Approximate number of items (for deciding how much to steal). */
static inline int64_t ito__deque_size(struct ito__deque *d)
{
    int64_t n = atomic_load_explicit(&d->bottom, memory_order_relaxed) -
                atomic_load_explicit(&d->top, memory_order_relaxed);
    return n > 0 ? n : 0;
}

#endif
