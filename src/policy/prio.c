/* SPDX-License-Identifier: MIT */
/*
 * "prio" and "prio-shared": O(1) priority scheduling ([SSH]; Linux 2.6).
 *
 * Each vproc ("prio") — or the whole process ("prio-shared", the SSH
 * organization) — keeps an O(1) queue (prioq.c): per-level FIFO lists in an
 * active and an expired array. ITO_PRIO_LEVELS (1..140, default 140; SSH
 * used 16) sets the number of levels; the API's priorities 0..ITO_PRIO_MAX
 * are spread evenly over them.
 *
 * Time slices. A thread at level l has a quantum of 1 + 31·l/(levels-1)
 * slices (ITO_TIMESLICE_US each). Every slice it uses counts against it,
 * however it comes back: each tick of a vproc's CPU-time clock charges the
 * thread it finds running (ito_policy_node_slices), and enqueue takes off
 * what was charged since the thread was last queued — so a thread that parks
 * just before each slice would end (a pipe writer whose pipe fills every few
 * milliseconds) pays like one that computes through it; counting only the
 * slices that ended in a switch once let such threads keep both processors
 * for ever. A thread that used a slice goes to the back of its level in the
 * active array, so threads of one level take turns slice by slice; when its
 * quantum is spent it gets a new one and goes to the expired array. The
 * arrays swap when the active one is empty. Not where its queue holds only
 * threads of its own level, none expired: among equals alone there is no
 * epoch to wait for, and it goes to the back of its level with the new
 * quantum. (Quanta are charged from sampled CPU time, so equals spend theirs
 * in rounds one apart, and the first to expire waited a round more for the
 * others: 4 threads of one level on one vproc waited up to 68 ms for their
 * turns, against the 40 ms of one 10 ms slice each.) Within one such epoch every
 * ready thread runs its whole quantum, so a thread's CPU share grows
 * linearly with its level ([SSH §4.3.3]: not with its square, as when both
 * the slice and the order favour it), and no ready thread starves, whatever
 * its level. A new thread, or one that waited (locks, I/O, sleeps) and used
 * no slice since it was last queued, goes ahead of the threads of its level
 * that did, behind those that came so before it (prioq's WOKEN place; CFS's
 * sleeper credit in whole slices). A yield goes to the expired array, as sched_yield did in
 * Linux 2.6: it lets every ready thread run first, less urgent ones too — a
 * thread that polls with ito_yield cannot starve them. Should the active
 * array never empty (threads spawned again and again, each with a new
 * quantum), prio_tick's backstop sends every thread to the expired array
 * once an expired one has waited too long (Linux 2.6's EXPIRED_STARVING).
 * A ready thread whose priority changes moves to its new level
 * (prio_priority_changed); a raised one also leaves the expired array, so
 * that it runs at once where it is now more urgent than a running thread.
 *
 * Urgency across vprocs ([SA §1.2]). A thread that becomes ready
 * should not wait while a less urgent one runs on any vproc. A thread made
 * ready goes to the vproc running the lowest level below its own
 * (ito_policy_running_priority; a vproc that was just given a thread counts
 * at that thread's level until it picks, so that a burst of wake-ups
 * spreads) — the caller's, or another one's queue, under that queue's lock
 * — and that vproc is asked to give way at once (ito_policy_preempt: the time-slice signal, or, for
 * the caller's own vproc, the end of the current ito call). With none
 * lower, it waits where it was made ready. A vproc that picks takes the
 * most urgent queued thread of the process: its own queue's, unless another
 * vproc's `top` is higher, in which case it takes that one instead — or
 * equal, and that queue holds two threads more than its own (balance:
 * threads spawned on one vproc while the others were busy would otherwise
 * share that one for ever). Idle vprocs steal the most urgent thread there
 * is. Threads in an expired array
 * wait by design: that is what keeps the others from starving.
 *
 * Synchronization. "prio": one spinlock per vproc queue, taken by its owner
 * (enqueue, pick) and by others that place a thread there or take one; at
 * most one queue lock is held at a time. "prio-shared": one lock for the one
 * queue. A joiner takes its not-yet-started child out under the lock, and
 * only when the child is the queue's next choice (prio_take). `top` and
 * `promised` are hints written under the lock or by a placement and read
 * relaxed; like the running priority, a stale one only makes one decision
 * less urgent-first.
 *
 * Node words (prioq.h owns the low 16 bits of word[1]): bits 16..31 of
 * word[1] hold the quantum left, bits 32..47 the index + 1 of the vproc
 * whose queue holds the thread ("prio"), bits 48..63 the slice count seen
 * when it was last queued.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <ito/policy.h>

#include "base/compiler.h"
#include "base/clock.h"
#include "base/env.h"
#include "runtime/runtime.h"
#include "runtime/spinlock.h"
#include "policy/prioq.h"

#define PRIO_QUANTUM_MAX 32    /* slices of the most urgent level */

struct prio_queue {
    ito__spinlock lock ITO_ALIGNED_CACHELINE;
    struct ito__prioq q;                /* lock */
    uint64_t expired_since;             /* lock: since when (about) the expired array has waited, 0: empty */
    uint64_t swaps_seen;                /* lock: q.swaps then */
    _Atomic bool starving;              /* lock to write: an expired thread waited too long */
    _Atomic int top ITO_ALIGNED_CACHELINE;   /* q's highest level, -1: empty (written under lock) */
    _Atomic unsigned size;              /* about how many threads q holds (written under lock) */
};

struct prio_vp {
    struct prio_queue *queue;           /* its own ("prio") or the one ("prio-shared") */
    _Atomic int promised ITO_ALIGNED_CACHELINE;  /* level placed here to run next, -1: none */
};

struct prio {
    unsigned levels;
    bool one_queue;
    struct prio_queue *shared;          /* "prio-shared" */
};

static struct prio *P(ito_policy_vproc_t *vp) { return vp->shared; }
static struct prio_vp *V(ito_policy_vproc_t *vp) { return vp->local; }

/* ----------------------------------------------------------- node words */

static unsigned quantum_left(const ito_policy_node_t *n) { return (unsigned)((ito__prioq_word(n) >> 16) & 0xffff); }
static void set_quantum_left(ito_policy_node_t *n, unsigned q)
{
    ito__prioq_set_word(n, (ito__prioq_word(n) & ~((uintptr_t)0xffff << 16)) | (uintptr_t)q << 16);
}
static int queued_on(const ito_policy_node_t *n) { return (int)((ito__prioq_word(n) >> 32) & 0xffff) - 1; }
static void set_queued_on(ito_policy_node_t *n, int index)
{
    ito__prioq_set_word(n, (ito__prioq_word(n) & ~((uintptr_t)0xffff << 32)) | (uintptr_t)(index + 1) << 32);
}

/* ito_policy_node_slices when it was last queued (16 bits: a difference is
 * all that is read). */
static unsigned slices_seen(const ito_policy_node_t *n) { return (unsigned)(ito__prioq_word(n) >> 48); }
static void set_slices_seen(ito_policy_node_t *n, uint32_t slices)
{
    ito__prioq_set_word(n, (ito__prioq_word(n) & ~((uintptr_t)0xffff << 48)) | (uintptr_t)(slices & 0xffff) << 48);
}

static int level_of_prio(const struct prio *p, int prio)
{
    if (prio < 0)
        prio = 0;
    if (prio > ITO_PRIO_MAX)
        prio = ITO_PRIO_MAX;
    return (prio * (int)(p->levels - 1) + ITO_PRIO_MAX / 2) / ITO_PRIO_MAX;
}

static unsigned level_of(const struct prio *p, const ito_policy_node_t *n)
{
    return (unsigned)level_of_prio(p, ito_policy_node_priority(n));
}

static unsigned quantum(const struct prio *p, unsigned level)
{
    return p->levels > 1 ? 1 + level * (PRIO_QUANTUM_MAX - 1) / (p->levels - 1) : 1;
}

/* What is left of n's quantum; a whole one if it never had one (a thread
 * never queued before: the adopted main thread). */
static unsigned quantum_now(const struct prio *p, const ito_policy_node_t *n, unsigned level)
{
    unsigned left = quantum_left(n);
    return left == 0 || left > PRIO_QUANTUM_MAX ? quantum(p, level) : left;
}

/* ------------------------------------------------------------------ init */

static int prio_init_common(int nvprocs, void **shared, bool one_queue)
{
    (void)nvprocs;
    struct prio *p = calloc(1, sizeof *p);
    if (!p)
        return ENOMEM;
    p->levels = (unsigned)ito__env_int("ITO_PRIO_LEVELS", ITO__PRIOQ_LEVELS_MAX, 1, ITO__PRIOQ_LEVELS_MAX, false);
    p->one_queue = one_queue;
    *shared = p;
    return 0;
}

static int prio_init(int nvprocs, void **shared) { return prio_init_common(nvprocs, shared, false); }
static int prio_shared_init(int nvprocs, void **shared) { return prio_init_common(nvprocs, shared, true); }

static struct prio_queue *queue_new(unsigned levels, bool lazy)
{
    struct prio_queue *q = aligned_alloc(ITO_CACHELINE, sizeof *q);
    if (!q)
        return NULL;
    ito__prioq_init(&q->q, levels, lazy);
    ito__spin_init(&q->lock, ITO__LOCK_POLICY_QUEUE);
    atomic_init(&q->top, -1);
    atomic_init(&q->size, 0);
    return q;
}

static int prio_vproc_init(ito_policy_vproc_t *vp)
{
    struct prio *p = P(vp);
    struct prio_vp *v = aligned_alloc(ITO_CACHELINE, sizeof *v);
    if (!v)
        return ENOMEM;
    if (p->one_queue) {
        /* vproc_init runs for vproc 0 first, before any other op. */
        if (!p->shared && !(p->shared = queue_new(p->levels, true))) {
            free(v);
            return ENOMEM;
        }
        v->queue = p->shared;
    } else if (!(v->queue = queue_new(p->levels, false))) {
        free(v);
        return ENOMEM;
    }
    atomic_init(&v->promised, -1);
    vp->local = v;
    return 0;
}

/* ------------------------------------------------------------ the queues */

static void publish_top(struct prio_queue *q)
{
    atomic_store_explicit(&q->top, ito__prioq_top(&q->q), memory_order_relaxed);
    atomic_store_explicit(&q->size, (unsigned)q->q.len, memory_order_relaxed);
}

static int top_of(struct prio_queue *q) { return atomic_load_explicit(&q->top, memory_order_relaxed); }
static unsigned size_of(struct prio_queue *q) { return atomic_load_explicit(&q->size, memory_order_relaxed); }

/* The vproc picks: what was promised to it is now in its hands. */
static void picked(struct prio_vp *v)
{
    if (atomic_load_explicit(&v->promised, memory_order_relaxed) >= 0)
        atomic_store_explicit(&v->promised, -1, memory_order_relaxed);
}

/* Put n into queue q (of vproc `index`) under its lock. While an expired
 * thread starves there, every thread but a displaced one goes to the expired
 * array: the active one drains, and the arrays swap. */
static void put(struct prio_queue *q, int index, ito_policy_node_t *n, unsigned level, bool expired,
                bool spent, enum ito__prioq_place place)
{
    ito__spin_lock(&q->lock);
    if (spent && ito__prioq_only_level(&q->q, level))
        expired = false;   /* among equals alone: no epoch to wait for (see the essay) */
    if (atomic_load_explicit(&q->starving, memory_order_relaxed) && place != ITO__PRIOQ_FRONT)
        expired = true;
    set_queued_on(n, index);
    ito__prioq_push(&q->q, n, level, expired, place);
    publish_top(q);
    ito__spin_unlock(&q->lock);
}

static ito_policy_node_t *pop(struct prio_queue *q)
{
    if (top_of(q) < 0)
        return NULL;
    ito__spin_lock(&q->lock);
    ito_policy_node_t *n = ito__prioq_pop(&q->q);
    if (q->q.swaps != q->swaps_seen) {   /* a new epoch: nobody starves */
        q->swaps_seen = q->q.swaps;
        q->expired_since = 0;
        atomic_store_explicit(&q->starving, false, memory_order_relaxed);
    }
    publish_top(q);
    ito__spin_unlock(&q->lock);
    return n;
}

/* The vproc running the lowest level below `level` (-1: none lower). An idle
 * vproc (-1) counts as lowest of all. */
static int lowest_below(ito_policy_vproc_t *vp, unsigned level, int *its_level)
{
    struct prio *p = P(vp);
    int best = -1, best_level = (int)level;
    for (int i = 0; i < vp->count; i++) {
        int prio = ito_policy_running_priority(i);
        int r = prio < 0 ? -1 : level_of_prio(p, prio);
        int promised = atomic_load_explicit(&V(vp->all[i])->promised, memory_order_relaxed);
        if (promised > r)
            r = promised;
        if (r < best_level) {
            best = i;
            best_level = r;
        }
    }
    *its_level = best_level;
    return best;
}

/* ----------------------------------------------------------------- ops */

static void prio_enqueue(ito_policy_vproc_t *vp, ito_policy_node_t *n, ito_ready_reason_t why)
{
    struct prio *p = P(vp);
    unsigned level = level_of(p, n);
    /* The slices it used since it was last queued, however it came back:
     * from the end of a slice, or a wait that began just before one would
     * have ended. */
    uint32_t slices = ito_policy_node_slices(n);
    unsigned used = why == ITO_READY_SPAWN ? 0 : (slices - slices_seen(n)) & 0xffff;
    set_slices_seen(n, slices);
    unsigned left = why == ITO_READY_SPAWN ? quantum(p, level) : quantum_now(p, n, level);
    bool expired = false, spent = false;
    enum ito__prioq_place place = ITO__PRIOQ_BACK;
    if (used >= left) {
        expired = spent = true;   /* its quantum is spent: a new one, next epoch */
        left = quantum(p, level);
    } else {
        left -= used;
    }
    switch (why) {
    case ITO_READY_DISPLACED:   /* it was running: it keeps its place */
        if (!expired)
            place = ITO__PRIOQ_FRONT;
        break;
    case ITO_READY_YIELD:       /* after every other ready thread, less urgent ones too */
        expired = true;
        spent = false;
        break;
    case ITO_READY_SPAWN:
    case ITO_READY_WAKE:
    case ITO_READY_RESUME:
        /* New, or it waited, and has not used a slice since it last came:
         * ahead of the threads of its level that have (CFS's sleeper
         * credit, in slices); among themselves in the order they came. A
         * child at the back would wait a slice for every computing thread
         * of its level, and its joiner with it (the soak's spawners made no
         * join in 1 s of CPU time so). */
        if (!used)
            place = ITO__PRIOQ_WOKEN;
        break;
    default:                    /* PREEMPT (charged above): back of its level */
        break;
    }
    set_quantum_left(n, left);
    int target = vp->index, victim = -1;
    if (why == ITO_READY_SPAWN || why == ITO_READY_WAKE || why == ITO_READY_RESUME) {
        /* Made ready: is a less urgent thread running somewhere? (None
         * lower than an idle vproc's -1: an idle vproc will steal it, the
         * core wakes one.) */
        int low, i = lowest_below(vp, level, &low);
        if (i >= 0 && low >= 0) {
            /* Claim it for this thread: another wake-up looks elsewhere. */
            atomic_store_explicit(&V(vp->all[i])->promised, (int)level, memory_order_relaxed);
            target = victim = i;
        }
    }
    put(V(vp->all[target])->queue, target, n, level, expired, spent, place);
    /* Only now: a vproc that gave way before the thread was in its queue
     * would pick the one it displaced again. */
    if (victim >= 0)
        ito_policy_preempt(victim);
}

/* Another vproc's queue with a higher top than `mine`, or NULL. */
static struct prio_queue *more_urgent(ito_policy_vproc_t *vp, int mine)
{
    struct prio_queue *best = NULL;
    for (int i = 0; i < vp->count; i++) {
        struct prio_queue *q = V(vp->all[i])->queue;
        int t = top_of(q);
        if (t > mine) {
            best = q;
            mine = t;
        }
    }
    return best == V(vp)->queue ? NULL : best;
}

/* The queue a pick takes from if not its own (mine), or NULL: another
 * vproc's with a more urgent level (the most urgent), or else one whose most
 * urgent level is ours and that holds at least two threads more than ours
 * (the fullest). Only idle vprocs steal; without the second, the threads
 * spawned on one vproc while the others were busy would share that one for
 * ever, however many others each ran a single thread (under 16 computing
 * threads on 2 vprocs, one vproc ran one of them and the other 15 plus 4
 * sleepers: bench/wakeup --mode timer made 0-170 sleeps/s of 4,000). Linux
 * 2.6 balanced its queues likewise, pulling from the busiest. */
static struct prio_queue *elsewhere(ito_policy_vproc_t *vp, struct prio_queue *mine)
{
    int top = top_of(mine), best_top = top;
    unsigned most = size_of(mine) + 1;
    struct prio_queue *urgent = NULL, *fuller = NULL;
    for (int i = 0; i < vp->count; i++) {
        struct prio_queue *q = V(vp->all[i])->queue;
        int t = top_of(q);
        unsigned n;
        if (q == mine)
            continue;
        if (t > best_top) {
            urgent = q;
            best_top = t;
        } else if (t == top && top >= 0 && (n = size_of(q)) > most) {
            fuller = q;
            most = n;
        }
    }
    return urgent ? urgent : fuller;
}

static ito_policy_node_t *prio_pick(ito_policy_vproc_t *vp)
{
    struct prio *p = P(vp);
    struct prio_vp *v = V(vp);
    ito_policy_node_t *n = NULL;
    if (!p->one_queue && vp->count > 1) {
        struct prio_queue *q = elsewhere(vp, v->queue);
        if (q)
            n = pop(q);   /* may have gone meanwhile: then our own */
    }
    if (!n)
        n = pop(v->queue);
    picked(v);
    return n;
}

static ito_policy_node_t *prio_steal(ito_policy_vproc_t *vp)
{
    struct prio *p = P(vp);
    if (p->one_queue || vp->count < 2)
        return NULL;   /* one queue: pick already looked at everything */
    struct prio_queue *q = more_urgent(vp, -1);
    ito_policy_node_t *n = q ? pop(q) : NULL;
    if (n && top_of(q) >= 0)
        ito_policy_spread(1);   /* more where it came from: another idle vproc may take it */
    return n;
}

/* A joiner may run its not-yet-started child at once only if the child is
 * what this vproc's pick would return now: the head of the most urgent
 * level here, with no more urgent thread on another vproc that pick would
 * take first. Otherwise the joiner parks and the child waits its turn, as
 * the policy's order says. */
static bool prio_take(ito_policy_vproc_t *vp, ito_policy_node_t *n)
{
    struct prio *p = P(vp);
    struct prio_vp *v = V(vp);
    struct prio_queue *q = v->queue;
    if (!p->one_queue && (queued_on(n) != vp->index || (vp->count > 1 && more_urgent(vp, top_of(q)))))
        return false;
    ito__spin_lock(&q->lock);
    /* Still here? A thief may have taken it since the look above. */
    bool got = (p->one_queue || queued_on(n) == vp->index) && ito__prioq_first(&q->q) == n &&
               ito__prioq_remove(&q->q, n);
    publish_top(q);
    ito__spin_unlock(&q->lock);
    return got;
}

/* An expired thread may wait this long before the active array is drained
 * for it (prio_tick): four of the most urgent level's quanta. */
static uint64_t starve_ns(void)
{
    uint64_t slice = ito__rt.timeslice_ns ? ito__rt.timeslice_ns : 10000000u;
    return 4u * PRIO_QUANTUM_MAX * slice;
}

/* The backstop against starvation (Linux 2.6's EXPIRED_STARVING). Every
 * thread that runs is charged for the slices it uses, so an epoch ends by
 * itself as long as the threads in the active array stay the same; threads
 * spawned again and again, each with a fresh quantum, could keep it going.
 * Once the expired array has waited starve_ns, every thread made ready goes
 * there too (put) until the arrays swap. */
static void prio_tick(ito_policy_vproc_t *vp)
{
    struct prio_queue *q = V(vp)->queue;
    uint64_t now = ito__now_ns();
    ito__spin_lock(&q->lock);
    if (q->q.swaps != q->swaps_seen || !ito__prioq_expired_any(&q->q)) {
        q->swaps_seen = q->q.swaps;
        q->expired_since = ito__prioq_expired_any(&q->q) ? now : 0;
        atomic_store_explicit(&q->starving, false, memory_order_relaxed);
    } else if (!q->expired_since) {
        q->expired_since = now;
    } else if (now - q->expired_since >= starve_ns()) {
        atomic_store_explicit(&q->starving, true, memory_order_relaxed);
    }
    ito__spin_unlock(&q->lock);
}

/* A ready thread's priority changed: move it to its new level, and make room
 * for it if it is now more urgent than a running thread. */
static void prio_priority_changed(ito_policy_vproc_t *vp, ito_policy_node_t *n)
{
    struct prio *p = P(vp);
    int on = queued_on(n);
    if (!p->one_queue && (on < 0 || on >= vp->count))
        return;
    struct prio_queue *q = p->one_queue ? p->shared : V(vp->all[on])->queue;
    unsigned level = level_of(p, n);
    bool moved = false;
    ito__spin_lock(&q->lock);
    /* Still queued here? It may have been picked, run and queued elsewhere. */
    if ((p->one_queue || queued_on(n) == on) && ito__prioq_state(n) == ITO__PRIOQ_ENQUEUED &&
        ito__prioq_level(n) != level) {
        /* A raise takes it out of the expired array: the program says it
         * matters now (each raise lets it skip the wait once; a lowered
         * one stays where it was). */
        bool expired = ito__prioq_in_expired(&q->q, n) && level < ito__prioq_level(n);
        if (ito__prioq_remove(&q->q, n)) {
            ito__prioq_push(&q->q, n, level, expired, ITO__PRIOQ_BACK);
            moved = !expired;
        }
        publish_top(q);
    }
    ito__spin_unlock(&q->lock);
    int low, i;
    if (moved && (i = lowest_below(vp, level, &low)) >= 0 && low >= 0)
        ito_policy_preempt(i);   /* that vproc picks the most urgent thread there is */
}

const ito_policy_ops_t ito__policy_prio = {
    .abi = ITO_POLICY_ABI,
    .size = sizeof(ito_policy_ops_t),
    .name = "prio",
    .init = prio_init,
    .vproc_init = prio_vproc_init,
    .enqueue = prio_enqueue,
    .pick = prio_pick,
    .take = prio_take,
    .steal = prio_steal,
    .tick = prio_tick,
    .priority_changed = prio_priority_changed,
};

const ito_policy_ops_t ito__policy_prio_shared = {
    .abi = ITO_POLICY_ABI,
    .size = sizeof(ito_policy_ops_t),
    .name = "prio-shared",
    .init = prio_shared_init,
    .vproc_init = prio_vproc_init,
    .enqueue = prio_enqueue,
    .pick = prio_pick,
    .take = prio_take,
    .tick = prio_tick,
    .priority_changed = prio_priority_changed,
};
