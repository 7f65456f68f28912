/* SPDX-License-Identifier: MIT */
/*
 * "fifo": one FIFO queue shared by all vprocs, under a spinlock — the
 * conventional single-queue scheduler that [SKY] and [SSH] compare
 * against. Every ready thread waits in arrival order, whatever vproc made it
 * ready; any vproc runs the oldest. Simple and fair, but every enqueue and
 * pick crosses the same lock and cache line, and threads migrate freely, so
 * it scales and keeps caches worse than "ws". No stealing: the queue is
 * already shared.
 *
 * Two classes, each in arrival order: threads that have not used a time
 * slice since they were last queued (new, woken, resumed: a tick never found
 * them running, ito_policy_node_slices) wait ahead of those that have (the
 * end of a slice, a yield, a wait that began after using one). A thread that
 * sleeps or waits briefly thus does not queue behind every computing thread's
 * whole slice; computing threads still take turns among themselves.
 */
#include <errno.h>
#include <stdlib.h>

#include <ito/policy.h>

#include "base/compiler.h"
#include "runtime/spinlock.h"

struct fifo {
    ito__spinlock lock ITO_ALIGNED_CACHELINE;
    ito_policy_node_t *head, *tail;   /* lock */
    ito_policy_node_t *fresh;         /* lock: the last of the first class, NULL: none */
};

static int fifo_init(int nvprocs, void **shared)
{
    (void)nvprocs;
    struct fifo *q = aligned_alloc(ITO_CACHELINE, sizeof *q);
    if (!q)
        return ENOMEM;
    *q = (struct fifo){ .head = NULL };
    ito__spin_init(&q->lock, ITO__LOCK_POLICY_QUEUE);
    *shared = q;
    return 0;
}

static void fifo_enqueue(ito_policy_vproc_t *vp, ito_policy_node_t *n, ito_ready_reason_t why)
{
    struct fifo *q = vp->shared;
    bool fresh = !ito_policy_node_charged(n, &n->word[0]) && why != ITO_READY_PREEMPT && why != ITO_READY_YIELD;
    ito__spin_lock(&q->lock);
    ito_policy_node_t *after = fresh ? q->fresh : q->tail;
    if (fresh)
        q->fresh = n;
    if (after) {
        n->next = after->next;
        after->next = n;
    } else {
        n->next = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
        __atomic_store_n(&q->head, n, __ATOMIC_RELAXED);   /* also read without the lock */
    }
    if (after == q->tail)
        q->tail = n;
    ito__spin_unlock(&q->lock);
}

static ito_policy_node_t *fifo_pick(ito_policy_vproc_t *vp)
{
    struct fifo *q = vp->shared;
    if (!__atomic_load_n(&q->head, __ATOMIC_RELAXED))   /* cheap look first: a hint */
        return NULL;
    ito__spin_lock(&q->lock);
    ito_policy_node_t *n = q->head;
    if (n) {
        __atomic_store_n(&q->head, n->next, __ATOMIC_RELAXED);
        if (!n->next)
            q->tail = NULL;
        if (q->fresh == n)
            q->fresh = NULL;
    }
    ito__spin_unlock(&q->lock);
    return n;
}

const ito_policy_ops_t ito__policy_fifo = {
    .abi = ITO_POLICY_ABI,
    .size = sizeof(ito_policy_ops_t),
    .name = "fifo",
    .init = fifo_init,
    .enqueue = fifo_enqueue,
    .pick = fifo_pick,
};
