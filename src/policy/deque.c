/* SPDX-License-Identifier: MIT */
/*
 * The Chase-Lev work-stealing deque.
 *
 * The owner pushes and takes at the bottom (LIFO: the thread made ready last
 * runs first, its data still in cache — [SA §4.2]); thieves take at the
 * top (the oldest, usually the largest piece of work). The owner's take needs
 * one store-load fence; steal needs a CAS on top; the two race only for the
 * last item, and the CAS on top settles it.
 *
 * Memory orders (Lê et al., PPoPP 2013, fig. 1), with which each pairs:
 *  - push stores the item, then publishes bottom with a release store; a
 *    thief's acquire load of bottom pairs with it, so a stolen thread's fields
 *    are visible to the thief. (Lê et al. use a release fence and a relaxed
 *    store; the release store is the same instruction on x86 and is
 *    understood by ThreadSanitizer, which ignores standalone fences.)
 *  - take stores bottom, then a seq_cst fence, then loads top; steal loads
 *    top, a seq_cst fence, then loads bottom: the two fences order the
 *    owner's and the thief's claims on the last item.
 *  - the CAS on top is seq_cst; a thief that loses it reports LOST, not
 *    EMPTY, so callers can tell contention from emptiness.
 *
 * Growth: when full, the owner copies the live range into a buffer twice as
 * large and publishes it (release; thieves load buf with acquire). A thief
 * may still read the old buffer, so it is not freed but kept on a list; the
 * buffers of a deque total less than twice its largest size, and live as long
 * as the deque (the vproc's lifetime). Items are never overwritten in the old
 * buffer after it is retired, so a late thief reads a valid item, and its CAS
 * on top decides whether it may keep it. With no memory for a larger buffer,
 * push says so and the caller queues the item elsewhere (ws.c: its FIFO, a
 * list through the threads): running out of memory never loses a thread nor
 * stops the process.
 */
#include "policy/deque.h"

#include <errno.h>
#include <stdlib.h>


static struct ito__deque_buf *buf_new(int64_t cap)
{
    struct ito__deque_buf *b = malloc(sizeof *b + (size_t)cap * sizeof b->slot[0]);
    if (b) {
        b->cap = cap;
        b->prev = NULL;
    }
    return b;
}

int ito__deque_init(struct ito__deque *d, unsigned log_cap)
{
    struct ito__deque_buf *b = buf_new((int64_t)1 << log_cap);
    if (!b)
        return ENOMEM;
    atomic_init(&d->top, 0);
    atomic_init(&d->bottom, 0);
    atomic_init(&d->buf, b);
    d->retired = NULL;
    d->solo = false;
    return 0;
}

struct ito__deque_buf *ito__deque_grow(struct ito__deque *d, struct ito__deque_buf *a, int64_t t, int64_t b)
{
    struct ito__deque_buf *n = buf_new(a->cap * 2);
    if (!n)
        return NULL;
    for (int64_t i = t; i < b; i++)
        atomic_store_explicit(&n->slot[i & (n->cap - 1)],
                              atomic_load_explicit(&a->slot[i & (a->cap - 1)], memory_order_relaxed),
                              memory_order_relaxed);
    /* Release pairs with the thieves' acquire load of buf. */
    atomic_store_explicit(&d->buf, n, memory_order_release);
    a->prev = d->retired;
    d->retired = a;
    return n;
}

/* The owner's take when thieves exist: see the essay above for the orders. */
void *ito__deque_take_shared(struct ito__deque *d, int64_t b)
{
    struct ito__deque_buf *a = atomic_load_explicit(&d->buf, memory_order_relaxed);
    atomic_store_explicit(&d->bottom, b, memory_order_relaxed);
    /* Store-load fence: pairs with the fence in steal (deque.c). */
    ITO_FENCE();
    int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
    void *x = NULL;
    if (t <= b) {
        x = atomic_load_explicit(&a->slot[b & (a->cap - 1)], memory_order_relaxed);
        if (t == b) {
            /* The last item: race the thieves for it. */
            if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1, memory_order_seq_cst,
                                                         memory_order_relaxed))
                x = NULL;
            atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
        }
    } else {
        atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
    }
    return x;
}

int ito__deque_steal(struct ito__deque *d, void **x)
{
    int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
    ITO_FENCE();
    int64_t b = atomic_load_explicit(&d->bottom, memory_order_acquire);
    if (t >= b)
        return ITO__DEQUE_EMPTY;
    struct ito__deque_buf *a = atomic_load_explicit(&d->buf, memory_order_acquire);
    void *v = atomic_load_explicit(&a->slot[t & (a->cap - 1)], memory_order_relaxed);
    if (!atomic_compare_exchange_strong_explicit(&d->top, &t, t + 1, memory_order_seq_cst,
                                                 memory_order_relaxed))
        return ITO__DEQUE_LOST;
    *x = v;
    return ITO__DEQUE_OK;
}
