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
 *
 * Memory. Arming must not fail: the thread has already begun its wait, under
 * its object's lock, and an error there could only abort. When the heap is
 * full and cannot grow, the timer goes into the heap's spill list instead,
 * linked through the thread (its timer_spill record): no allocation. A
 * thread has at most one spilled timer, so a thread whose record is still
 * linked (an earlier wait's, stale or not) is unlinked before it arms
 * again. The list is walked only when its earliest deadline is due, and it
 * is empty unless memory ran short; spilled timers go as they fire or their
 * waits end, and the heap takes new ones as soon as it can grow again.
 * `spill_min` is a lower bound: unlinking does not raise it, the next walk
 * does. Thread descriptors are never freed (runtime/handle.c), so a stale
 * link names valid memory.
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
    uint64_t next = th->len ? th->heap[0].deadline : UINT64_MAX;
    atomic_store_explicit(&th->next, th->spill_min < next ? th->spill_min : next, memory_order_relaxed);
}

static bool live(const struct ito__thread *t, uint64_t seq)
{
    return atomic_load_explicit(&t->wait.state, memory_order_relaxed) == (seq << 2 | ITO__WAIT_WAITING);
}

/* ---- the spill list (th->lock held) ---- */

static void spill_link(struct ito__timer_heap *th, struct ito__thread *t, uint64_t deadline, uint64_t seq)
{
    struct ito__timer_spill *s = &t->timer_spill;
    s->deadline = deadline;
    s->seq = seq;
    s->prev = NULL;
    s->next = th->spill;
    if (th->spill)
        th->spill->timer_spill.prev = t;
    th->spill = t;
    if (deadline < th->spill_min)
        th->spill_min = deadline;
    atomic_store_explicit(&s->in, th, memory_order_relaxed);
}

static void spill_unlink(struct ito__timer_heap *th, struct ito__thread *t)
{
    struct ito__timer_spill *s = &t->timer_spill;
    if (s->prev)
        s->prev->timer_spill.next = s->next;
    else
        th->spill = s->next;
    if (s->next)
        s->next->timer_spill.prev = s->prev;
    if (!th->spill)
        th->spill_min = UINT64_MAX;
    atomic_store_explicit(&s->in, NULL, memory_order_relaxed);
}

/* Take t's record out of the list that holds it, if any (no heap lock held). */
static void unspill(struct ito__thread *t)
{
    struct ito__timer_heap *th = atomic_load_explicit(&t->timer_spill.in, memory_order_relaxed);
    if (!th)
        return;   /* (only t links its record; a walk may unlink it: checked under the lock) */
    ito__spin_lock(&th->lock);
    if (atomic_load_explicit(&t->timer_spill.in, memory_order_relaxed) == th)
        spill_unlink(th, t);
    publish_next(th);
    ito__spin_unlock(&th->lock);
}

/* Move the due spilled timers into fired[n..max), drop the stale ones, and
 * set spill_min to the earliest left; returns the new n. */
static unsigned spill_run(struct ito__timer_heap *th, uint64_t now, struct ito__timer *fired, unsigned n,
                          unsigned max)
{
    uint64_t min = UINT64_MAX;
    for (struct ito__thread *t = th->spill, *next; t; t = next) {
        struct ito__timer_spill *s = &t->timer_spill;
        next = s->next;
        if (!live(t, s->seq)) {
            spill_unlink(th, t);
        } else if (s->deadline <= now && n < max) {
            fired[n++] = (struct ito__timer){ s->deadline, t, s->seq };
            spill_unlink(th, t);
        } else if (s->deadline < min) {
            min = s->deadline;
        }
    }
    th->spill_min = min;
    return n;
}

/* Drop the entries of waits that already ended (lazy cancellation leaves
 * them behind), so that a heap holds at most twice its live timers. */
static void purge(struct ito__timer_heap *th)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < th->len; i++)
        if (live(th->heap[i].thread, th->heap[i].seq))
            th->heap[k++] = th->heap[i];
    th->len = k;
    for (uint32_t i = k / 2; i-- > 0;)
        sift_down(th->heap, k, i);
}

/* Room for one more entry; false if the heap is full and cannot grow. */
static bool make_room(struct ito__timer_heap *th)
{
    if (th->len < th->cap)
        return true;
    purge(th);
    if (th->len < th->cap / 2)
        return true;
    /* Still at least half live: grow. */
    uint32_t cap = th->cap ? th->cap * 2 : 64;
    struct ito__timer *h = cap > th->cap ? realloc(th->heap, (size_t)cap * sizeof *h) : NULL;
    if (!h)
        return th->len < th->cap;
    th->heap = h;
    th->cap = cap;
    return true;
}

void ito__timer_arm(struct ito__vproc *vp, uint64_t deadline, struct ito__thread *t, uint64_t seq)
{
    struct ito__timer_heap *th = &vp->timers;
    if (ITO_UNLIKELY(atomic_load_explicit(&t->timer_spill.in, memory_order_relaxed)))
        unspill(t);
    ito__spin_lock(&th->lock);
    if (ITO_LIKELY(make_room(th))) {
        th->heap[th->len] = (struct ito__timer){ deadline, t, seq };
        sift_up(th->heap, th->len++);
    } else {
        spill_link(th, t, deadline, seq);
    }
    publish_next(th);
    ito__spin_unlock(&th->lock);
    ito__idle_timer_armed(deadline);
    ito__carrier_timer_armed(deadline);
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
    if (ITO_UNLIKELY(th->spill_min <= now))
        n = spill_run(th, now, fired, n, BATCH);
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
