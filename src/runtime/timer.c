/* SPDX-License-Identifier: MIT */
/*
 * Timers: deadlines of timed waits and sleeps, per vproc.
 *
 * A thread that waits with a deadline arms a timer on the vproc it runs on:
 * an entry (deadline, thread, wait seq) in that vproc's binary min-heap.
 * Nothing spins: the owning vproc looks at its earliest deadline every few
 * dozen picks (sched.c) and before it sleeps; idle vprocs also run the expired
 * timers of busy ones (idle.c), and a sleeping vproc sets its futex timeout to
 * the earliest deadline of all heaps.
 *
 * Cancellation is lazy: a wait that ends early leaves its entry in the heap;
 * when the entry expires, the CAS on the waiter's (seq, state) word fails and
 * nothing happens (runtime/wait.h). Entries are small values, not links in the
 * thread, so a thread can have any number of stale entries.
 *
 * Each heap has a spinlock because idle vprocs run other vprocs' timers; the
 * owner is the only one to insert. `next` mirrors the root for lock-free peeks.
 */
#include "runtime/timer.h"

#include <errno.h>
#include <stdlib.h>

#include "runtime/carrier.h"
#include "runtime/runtime.h"
#include "runtime/sched.h"
#include "runtime/thread.h"
#include "runtime/wait.h"

static void sift_up(struct ito__timer *h, uint32_t i)
{
    struct ito__timer x = h[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h[p].deadline <= x.deadline)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

static void sift_down(struct ito__timer *h, uint32_t len, uint32_t i)
{
    struct ito__timer x = h[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= len)
            break;
        if (c + 1 < len && h[c + 1].deadline < h[c].deadline)
            c++;
        if (x.deadline <= h[c].deadline)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static void publish_next(struct ito__timer_heap *th)
{
    atomic_store_explicit(&th->next, th->len ? th->heap[0].deadline : UINT64_MAX,
                          memory_order_relaxed);
}

/* Drop the entries of waits that already ended (lazy cancellation leaves
 * them behind), so that a heap holds at most twice its live timers. */
static void purge(struct ito__timer_heap *th)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < th->len; i++) {
        struct ito__timer *e = &th->heap[i];
        uint64_t st = atomic_load_explicit(&e->thread->wait.state, memory_order_relaxed);
        if (st == (e->seq << 2 | ITO__WAIT_WAITING))
            th->heap[k++] = *e;
    }
    th->len = k;
    for (uint32_t i = k / 2; i-- > 0;)
        sift_down(th->heap, k, i);
}

int ito__timer_arm(struct ito__vproc *vp, uint64_t deadline, struct ito__thread *t, uint64_t seq)
{
    struct ito__timer_heap *th = &vp->timers;
    ito__spin_lock(&th->lock);
    if (th->len == th->cap) {
        purge(th);
        if (th->len >= th->cap / 2) {   /* still at least half live: grow */
            uint32_t cap = th->cap ? th->cap * 2 : 64;
            struct ito__timer *h = realloc(th->heap, cap * sizeof *h);
            if (!h) {
                ito__spin_unlock(&th->lock);
                return ENOMEM;
            }
            th->heap = h;
            th->cap = cap;
        }
    }
    th->heap[th->len] = (struct ito__timer){ deadline, t, seq };
    sift_up(th->heap, th->len++);
    publish_next(th);
    ito__spin_unlock(&th->lock);
    ito__idle_timer_armed(deadline);
    ito__carrier_timer_armed(deadline);
    return 0;
}

unsigned ito__timers_run(struct ito__timer_heap *th, uint64_t now)
{
    enum { BATCH = 32 };
    struct ito__timer fired[BATCH];
    unsigned n = 0;
    if (!ito__spin_trylock(&th->lock))
        return 0;
    while (th->len && th->heap[0].deadline <= now && n < BATCH) {
        fired[n++] = th->heap[0];
        th->heap[0] = th->heap[--th->len];
        if (th->len)
            sift_down(th->heap, th->len, 0);
    }
    publish_next(th);
    ito__spin_unlock(&th->lock);
    /* Outside the lock: ending a wait makes a thread ready (policy, inbox). */
    for (unsigned i = 0; i < n; i++)
        ito__wait_timeout(fired[i].thread, fired[i].seq);
    return n;
}

uint64_t ito__timers_earliest(void)
{
    uint64_t m = UINT64_MAX;
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        uint64_t d = atomic_load_explicit(&ito__rt.vprocs[i]->timers.next, memory_order_relaxed);
        if (d < m)
            m = d;
    }
    return m;
}
