/* SPDX-License-Identifier: MIT */
/*
 * "affinity": cache-affinity scheduling with thread groups ([SKY], SKY-1).
 *
 * A thread that ran on a processor left its data in that processor's
 * caches; moving it elsewhere throws that away, and threads that write the
 * same data from different processors invalidate each other's lines. SKY-1's
 * three rules, per vproc:
 *
 *   1. Same-vproc priority. A thread made ready goes back to the vproc it
 *      last ran on, wherever it was made ready (its preferred vproc if it has
 *      one, ito_attr_set_vproc; a new thread starts where it was spawned).
 *   2. Groups. All the threads of a group (ito_group_create) run on the one
 *      vproc that holds the group, its home, so the data they share stays in
 *      one cache. A new group is given a home round-robin.
 *   3. Load balancing. An idle vproc takes only threads that have waited at
 *      least ITO_AFFINITY_IDLE_US (default 500 µs; Linux's migration cost) —
 *      their data has likely left the cache anyway — and a group only as a
 *      whole, while none of its threads runs, never a pinned one
 *      (ITO_GROUP_PINNED). Three shortcuts, none for a thread that has a
 *      preferred vproc: a thread that never ran may be taken at once; so may
 *      one queued on a vproc whose CPU shares an L1 or L2 with the thief's
 *      (hwloc); and so may the oldest thread of a vproc that had threads
 *      queued at each of the thief's looks for the idle time — threads that
 *      take turns quickly never wait that long each, but such a backlog
 *      beside an idle vproc is an imbalance that lasts, not a burst (Linux
 *      likewise migrates cache-hot tasks after repeated failed balancing).
 *      Thieves look at the nearest vprocs first: those that share the
 *      smallest cache with them. A busy vproc with two threads fewer
 *      queued than the fullest other one takes from it too, by the same
 *      rules, at its tick (aff_tick): without that, threads spawned on one
 *      vproc while the others were busy stayed there for ever.
 *
 * Structures. Each vproc has a FIFO of ready threads (doubly linked, for
 * `take`) under a spinlock, taken by its owner (pick, its own enqueues), by
 * vprocs that place a thread there (rules 1 and 2: then ito_policy_wake) and
 * by thieves; nobody holds two of these locks at once. Node words: word[0]
 * the time the thread was queued (time-stamp counter); word[1] 1 + the index
 * of the vproc whose FIFO holds it (0: none), | NEVER_RAN. Group words:
 * word[0] 1 + the index of its home (0: none yet).
 *
 * Why a group's threads never run at the same time. A vproc runs a group
 * member only if, at its pick, under its own lock, it is the group's home
 * (a member found in the FIFO of a vproc that is no longer home is sent on,
 * not run). A group's home changes only
 *   - under the lock of the current home, by a thief that checked that the
 *     home's last pick (`cur_group`, written under that lock) was not a
 *     member: the home's pick found that member under the same lock, and the
 *     member stops running before its vproc picks again; or
 *   - under the lock of a home that has no processor (revoked: it parked
 *     after its last thread stopped), or from "none" with a CAS.
 * So at any moment at most one vproc may pick members, and it picks them one
 * at a time.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <ito/policy.h>

#include "base/compiler.h"
#include "base/env.h"
#include "runtime/spinlock.h"
#include "arch.h"

#define AFF_SCAN_MAX 64              /* queued threads a thief looks at per victim */
#define AFF_NEVER_RAN ((uintptr_t)1 << 32)
#define AFF_WAKE_GRANULARITY_NS 1000000u   /* a woken thread displaces one that ran this long */
#define AFF_FRESH ((uintptr_t)1 << 33)       /* queued ahead of the threads that used a slice */
#define AFF_KEEP (AFF_NEVER_RAN | AFF_FRESH | ((uintptr_t)0xffff << 48))
#define AFF_SLICES_SHIFT 48                  /* ito_policy_node_slices when last queued (16 bits) */
#define AFF_NEAR_LEVEL 2             /* sharing this cache level or a smaller one: near */

/* How long a thread has waited is measured in time-stamp-counter cycles: a
 * clock read at every enqueue would cost more than the rest of the policy
 * (bench/yield under ITO_POLICY=affinity shows it; docs/performance.md). The length
 * of ITO_AFFINITY_IDLE_US in cycles is learned at the first steal at least
 * AFF_CALIBRATE_NS after initialization; until then only the shortcuts of
 * rule 3 that do not need it (never ran, near) move threads. */
#define AFF_CALIBRATE_NS 1000000u

struct aff {
    uint64_t idle_ns;
    uint64_t c0, t0;                 /* cycles and ns at initialization */
    _Atomic uint64_t idle_cycles;    /* idle_ns in cycles; 0: not known yet */
    _Atomic uint64_t gran_cycles;    /* AFF_WAKE_GRANULARITY_NS in cycles; 0: not known yet */
    _Atomic unsigned rotor;          /* homes of new groups */
};

struct aff_vp {
    ito__spinlock lock ITO_ALIGNED_CACHELINE;
    ito_policy_node_t *head, *tail;  /* lock */
    ito_policy_node_t *fresh;        /* lock: the last of the AFF_FRESH ones at the head's side, or NULL */
    /* What the owner picked or stole last (NULL: nothing), and its slice
     * count then: written by the owner, read by vprocs that place a woken
     * thread here (wake_preempts). */
    _Atomic(ito_policy_node_t *) running;
    _Atomic uint32_t running_seen;
    _Atomic uint64_t running_since;  /* time-stamp counter when picked */
    /* The group of what this vproc last picked or stole (NULL: none, or a
     * thread in no group). Written by the owner only: under the lock at a
     * pick; before a release store of a group's home when it pulls a group
     * (thieves read it under the lock, or after an acquire load of home). */
    _Atomic(const ito_policy_group_t *) cur_group;
    _Atomic long len;                /* lock; read relaxed by thieves as a hint */
    /* owner only (steal) */
    int *order ITO_ALIGNED_CACHELINE;   /* other vprocs, nearest first */
    int *level;                      /* [victim]: cache level shared with it */
    uint64_t *backlog_since;         /* [victim]: cycles when it was first seen with threads queued (0: not) */
    int order_cpu;                   /* the CPU `order` was computed for (-2: never) */
    uint32_t rng;
};

static struct aff *A(ito_policy_vproc_t *vp) { return vp->shared; }
static struct aff_vp *V(ito_policy_vproc_t *vp) { return vp->local; }

/* ------------------------------------------------------------ the words */

static uintptr_t word(const ito_policy_node_t *n, int i) { return __atomic_load_n(&n->word[i], __ATOMIC_RELAXED); }
static void set_word(ito_policy_node_t *n, int i, uintptr_t v) { __atomic_store_n(&n->word[i], v, __ATOMIC_RELAXED); }
static int queued_on(const ito_policy_node_t *n) { return (int)(word(n, 1) & 0xffffffffu) - 1; }

/* Acquire pairs with set_home's release (see cur_group). */
static int home_of(const ito_policy_group_t *g)
{
    return (int)__atomic_load_n(&g->word[0], __ATOMIC_ACQUIRE) - 1;
}
static void set_home(ito_policy_group_t *g, int index)
{
    __atomic_store_n(&g->word[0], (uintptr_t)(index + 1), __ATOMIC_RELEASE);
}

static const ito_policy_group_t *cur_group(struct aff_vp *v)
{
    return atomic_load_explicit(&v->cur_group, memory_order_relaxed);
}
static void set_cur_group(struct aff_vp *v, const ito_policy_group_t *g)
{
    if (cur_group(v) != g)
        atomic_store_explicit(&v->cur_group, g, memory_order_relaxed);
}

/* ----------------------------------------------------------- the FIFOs */

/* Under v->lock. */
static void push(struct aff_vp *v, int index, ito_policy_node_t *n)
{
    set_word(n, 1, (word(n, 1) & AFF_KEEP) | (uintptr_t)(index + 1));
    /* A thread that has not used a slice since it was last queued goes
     * ahead of those that have, behind the others like it (aff_enqueue). */
    ito_policy_node_t *after = word(n, 1) & AFF_FRESH ? v->fresh : v->tail;
    if (word(n, 1) & AFF_FRESH)
        v->fresh = n;
    n->prev = after;
    n->next = after ? after->next : v->head;
    if (n->next)
        n->next->prev = n;
    else
        v->tail = n;
    if (after)
        after->next = n;
    else
        v->head = n;
    atomic_store_explicit(&v->len, atomic_load_explicit(&v->len, memory_order_relaxed) + 1, memory_order_relaxed);
}

static void unlink_node(struct aff_vp *v, ito_policy_node_t *n)
{
    if (v->fresh == n)
        v->fresh = n->prev;   /* the one before it is fresh too, or NULL */
    if (n->prev)
        n->prev->next = n->next;
    else
        v->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        v->tail = n->prev;
    set_word(n, 1, word(n, 1) & AFF_KEEP);
    atomic_store_explicit(&v->len, atomic_load_explicit(&v->len, memory_order_relaxed) - 1, memory_order_relaxed);
}

/* ------------------------------------------------------------- placing */

/* The home of g, as the caller (vp) should use it: one is chosen for a new
 * group; a home without a processor hands the group to vp. */
static int group_home(ito_policy_vproc_t *vp, ito_policy_group_t *g)
{
    int h = home_of(g);
    if (h < 0) {
        /* Round-robin over the vprocs that have a processor. */
        unsigned r = atomic_fetch_add_explicit(&A(vp)->rotor, 1, memory_order_relaxed);
        int pick = vp->index;
        for (int i = 0; i < vp->count; i++) {
            int c = (int)((r + (unsigned)i) % (unsigned)vp->count);
            if (ito_policy_vproc_active(c)) {
                pick = c;
                break;
            }
        }
        uintptr_t none = 0;
        if (__atomic_compare_exchange_n(&g->word[0], &none, (uintptr_t)(pick + 1), false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return pick;
        h = (int)none - 1;
    }
    if (h != vp->index && !ito_policy_vproc_active(h)) {
        /* Its home parked after its last thread stopped: no member runs. */
        struct aff_vp *o = V(vp->all[h]);
        ito__spin_lock(&o->lock);
        if (home_of(g) == h && !ito_policy_vproc_active(h))
            set_home(g, vp->index);
        h = home_of(g);
        ito__spin_unlock(&o->lock);
    }
    return h;
}

/* Where n should wait. */
static int target_of(ito_policy_vproc_t *vp, ito_policy_node_t *n, ito_ready_reason_t why)
{
    ito_policy_group_t *g = ito_policy_node_group(n);
    if (g)
        return group_home(vp, g);
    int t = ito_policy_node_vproc_hint(n);
    if (t < 0)
        t = why == ITO_READY_SPAWN ? -1 : ito_policy_node_last_vproc(n);
    if (t < 0 || t >= vp->count || (t != vp->index && !ito_policy_vproc_active(t)))
        t = vp->index;
    return t;
}

/* The owner of v runs n now (NULL: nothing). */
static void ran(struct aff_vp *v, ito_policy_node_t *n)
{
    atomic_store_explicit(&v->running, n, memory_order_relaxed);
    if (n) {
        atomic_store_explicit(&v->running_seen, ito_policy_node_slices(n), memory_order_relaxed);
        atomic_store_explicit(&v->running_since, ito__cycles(), memory_order_relaxed);
    }
}

/* AFF_WAKE_GRANULARITY_NS in time-stamp counter cycles, once the counter's
 * rate is known (AFF_CALIBRATE_NS after start); 0 before. */
static uint64_t gran_cycles(struct aff *a)
{
    uint64_t g = atomic_load_explicit(&a->gran_cycles, memory_order_relaxed);
    if (g)
        return g;
    uint64_t t = ito_now_ns(), c = ito__cycles();
    if (t - a->t0 < AFF_CALIBRATE_NS)
        return 0;
    g = (uint64_t)((double)AFF_WAKE_GRANULARITY_NS * (double)(c - a->c0) / (double)(t - a->t0));
    atomic_store_explicit(&a->gran_cycles, g ? g : 1, memory_order_relaxed);
    return g;
}

/* A thread woken without having used a slice was queued on vproc t: if the
 * thread t runs has run AFF_WAKE_GRANULARITY_NS since it was picked (or used
 * a slice: before the counter is calibrated), t gives way to it — CFS's
 * wake-up preemption and its granularity. Otherwise a thread that wakes on a
 * vproc kept by a computing thread waits for that thread to park or its
 * slice to end: a semaphore ping-pong split over two vprocs beside pipe
 * writers that compute ~9 ms between parks made ~100 round trips a second.
 * A snapshot: a descriptor stays mapped when its thread exits, and a stale
 * look only costs one switch. */
static void wake_preempts(ito_policy_vproc_t *vp, int t)
{
    struct aff_vp *o = V(vp->all[t]);
    ito_policy_node_t *r = atomic_load_explicit(&o->running, memory_order_relaxed);
    if (!r || ito_policy_running_priority(t) < 0)
        return;   /* (idle: it picks anyway) */
    uint64_t g = gran_cycles(A(vp));
    bool long_run = g ? ito__cycles() - atomic_load_explicit(&o->running_since, memory_order_relaxed) >= g
                      : ito_policy_node_slices(r) != atomic_load_explicit(&o->running_seen, memory_order_relaxed);
    if (long_run)
        ito_policy_preempt(t);
}

/* Queue n (its words set) where it belongs, from vp; returns the vproc
 * whose FIFO it went to (-1: none, it went on through the global queue). */
static int place(ito_policy_vproc_t *vp, ito_policy_node_t *n, ito_ready_reason_t why)
{
    for (;;) {
        int t = target_of(vp, n, why);
        struct aff_vp *v = V(vp->all[t]);
        ito__spin_lock(&v->lock);
        push(v, t, n);
        ito__spin_unlock(&v->lock);
        /* The lock orders the push before the owner's next pick; wake pairs
         * it with the owner's sleep or park (policy.h). */
        if (t == vp->index || ito_policy_wake(t))
            return t;
        /* t lost its processor meanwhile: take n back if it did not give it
         * away already, and choose again (t now counts as inactive). */
        ito__spin_lock(&v->lock);
        bool back = queued_on(n) == t;
        if (back)
            unlink_node(v, n);
        ito__spin_unlock(&v->lock);
        if (!back)
            return -1;   /* on its way through the global queue */
    }
}

/* ----------------------------------------------------------------- ops */

static int aff_init(int nvprocs, void **shared)
{
    (void)nvprocs;
    struct aff *a = calloc(1, sizeof *a);
    if (!a)
        return ENOMEM;
    a->idle_ns = (uint64_t)ito__env_int("ITO_AFFINITY_IDLE_US", 500, 0, 10000000, false) * 1000u;
    atomic_init(&a->rotor, 0);
    atomic_init(&a->idle_cycles, 0);
    a->c0 = ito__cycles();
    a->t0 = ito_now_ns();
    ito_policy_cpu_shared_cache(0, 0);   /* read the topology now, not inside an op */
    *shared = a;
    return 0;
}

static int aff_vproc_init(ito_policy_vproc_t *vp)
{
    struct aff_vp *v = aligned_alloc(ITO_CACHELINE, sizeof *v);
    if (!v)
        return ENOMEM;
    *v = (struct aff_vp){ .order_cpu = -2, .rng = 0x9e3779b9u * (uint32_t)(vp->index + 1) };
    ito__spin_init(&v->lock, ITO__LOCK_POLICY_QUEUE);
    atomic_init(&v->len, 0);
    atomic_init(&v->cur_group, NULL);
    v->order = calloc((size_t)vp->count, sizeof *v->order);
    v->level = calloc((size_t)vp->count, sizeof *v->level);
    v->backlog_since = calloc((size_t)vp->count, sizeof *v->backlog_since);
    if (!v->order || !v->level || !v->backlog_since) {
        free(v->order);
        free(v->level);
        free(v->backlog_since);
        free(v);
        return ENOMEM;
    }
    vp->local = v;
    return 0;
}

static void aff_enqueue(ito_policy_vproc_t *vp, ito_policy_node_t *n, ito_ready_reason_t why)
{
    set_word(n, 0, (uintptr_t)ito__cycles());
    /* Fresh: it has not used a slice since it was last queued (a tick never
     * found it running: ito_policy_node_slices), and neither yielded nor
     * used up one now. */
    uint32_t slices = ito_policy_node_slices(n);
    bool used = why != ITO_READY_SPAWN && ((word(n, 1) >> AFF_SLICES_SHIFT) & 0xffff) != (slices & 0xffff);
    bool fresh = !used && why != ITO_READY_PREEMPT && why != ITO_READY_YIELD;
    set_word(n, 1, (why == ITO_READY_SPAWN ? AFF_NEVER_RAN : 0) | (fresh ? AFF_FRESH : 0) |
                       (uintptr_t)(slices & 0xffff) << AFF_SLICES_SHIFT);
    int t = place(vp, n, why);
    if (t >= 0 && fresh && (why == ITO_READY_WAKE || why == ITO_READY_RESUME))
        wake_preempts(vp, t);
}

static ito_policy_node_t *aff_pick(ito_policy_vproc_t *vp)
{
    struct aff_vp *v = V(vp);
    if (!atomic_load_explicit(&v->len, memory_order_relaxed) && !cur_group(v))
        return NULL;   /* nothing queued, and nothing to record */
    ito_policy_node_t *n, *moved = NULL;
    ito__spin_lock(&v->lock);
    while ((n = v->head)) {
        unlink_node(v, n);
        ito_policy_group_t *g = ito_policy_node_group(n);
        if (!g || home_of(g) == vp->index)
            break;
        n->next = moved;   /* its group moved on: send it after */
        moved = n;
    }
    set_cur_group(v, n ? ito_policy_node_group(n) : NULL);
    ito__spin_unlock(&v->lock);
    while (moved) {
        ito_policy_node_t *next = moved->next;
        place(vp, moved, ITO_READY_WAKE);
        moved = next;
    }
    ran(v, n);
    return n;
}

static bool aff_take(ito_policy_vproc_t *vp, ito_policy_node_t *n)
{
    struct aff_vp *v = V(vp);
    if (queued_on(n) != vp->index || ito_policy_node_group(n))
        return false;   /* elsewhere, or a group member: its home runs it */
    ito__spin_lock(&v->lock);
    bool got = queued_on(n) == vp->index;   /* a thief may have taken it */
    if (got)
        unlink_node(v, n);
    ito__spin_unlock(&v->lock);
    return got;
}

/* The other vprocs, nearest (smallest shared cache) first, ties from a
 * random start; recomputed when this vproc's CPU changes. */
static void order_victims(ito_policy_vproc_t *vp, struct aff_vp *v)
{
    int cpu = ito_policy_vproc_cpu(vp->index);
    if (cpu == v->order_cpu)
        return;
    v->order_cpu = cpu;
    int k = 0, start = (int)(v->rng % (uint32_t)vp->count);
    v->rng = v->rng * 1103515245u + 12345u;
    for (int x = 0; x < vp->count; x++) {
        int l = ito_policy_cpu_shared_cache(cpu, ito_policy_vproc_cpu(x));
        v->level[x] = l > 7 ? 7 : l;
    }
    for (int lvl = 1; lvl <= 8; lvl++)   /* level 8 stands for 0: no shared cache, last */
        for (int i = 0; i < vp->count; i++) {
            int x = (start + i) % vp->count;
            if (x != vp->index && v->level[x] == lvl % 8)
                v->order[k++] = x;
        }
}

/* ITO_AFFINITY_IDLE_US in cycles (now: the counter), or 0 until the
 * counter's rate is known; then the caller may retry. */
static uint64_t idle_cycles(struct aff *a, uint64_t now)
{
    uint64_t idle = atomic_load_explicit(&a->idle_cycles, memory_order_relaxed);
    if (!idle) {
        uint64_t t = ito_now_ns();
        if (t - a->t0 >= AFF_CALIBRATE_NS) {
            idle = (uint64_t)((double)a->idle_ns * (double)(now - a->c0) / (double)(t - a->t0));
            idle += !idle;
            atomic_store_explicit(&a->idle_cycles, idle, memory_order_relaxed);
        } else {
            ito_policy_retry_after(AFF_CALIBRATE_NS - (t - a->t0));
        }
    }
    return idle;
}

/* Under victim x's lock: take a thread, or a whole group, that may move to
 * vp. Returns the first to run; the rest of a group is chained on ->next. */
static ito_policy_node_t *take_from(ito_policy_vproc_t *vp, int x, struct aff_vp *o, bool near, uint64_t now,
                                    uint64_t idle, uint64_t *soonest)
{
    int scanned = 0;
    for (ito_policy_node_t *n = o->head; n && scanned < AFF_SCAN_MAX; n = n->next, scanned++) {
        uint64_t stamp = (uint64_t)word(n, 0);
        uint64_t waited = now > stamp ? now - stamp : 0;   /* counters of two cores may differ a little */
        bool long_enough = idle && waited >= idle;
        /* A thread that asked for its vproc (ito_attr_set_vproc) leaves it
         * only after waiting the idle time itself. */
        bool shortcut = (near || (word(n, 1) & AFF_NEVER_RAN)) && ito_policy_node_vproc_hint(n) < 0;
        if (!long_enough && !shortcut) {
            if (idle && idle - waited < *soonest)
                *soonest = idle - waited;
            continue;
        }
        ito_policy_group_t *g = ito_policy_node_group(n);
        if (!g) {
            unlink_node(o, n);
            n->next = NULL;
            return n;
        }
        if (home_of(g) != x || (ito_policy_group_flags(g) & ITO_GROUP_PINNED) || cur_group(o) == g)
            continue;   /* not x's to give, pinned, or one of its threads runs there */
        /* Ours now, and about to run here: say so before anyone can see us
         * as its home (another thief must not pull it from us). */
        set_cur_group(V(vp), g);
        set_home(g, vp->index);
        ito_policy_node_t *first = NULL, *last = NULL;
        for (ito_policy_node_t *m = o->head, *next; m; m = next) {
            next = m->next;
            if (ito_policy_node_group(m) != g)
                continue;
            unlink_node(o, m);
            m->next = NULL;
            if (last)
                last->next = m;
            else
                first = m;
            last = m;
        }
        return first;
    }
    return NULL;
}

static ito_policy_node_t *aff_steal(ito_policy_vproc_t *vp)
{
    struct aff_vp *self = V(vp);
    if (vp->count < 2)
        return NULL;
    order_victims(vp, self);
    struct aff *a = A(vp);
    uint64_t now = ito__cycles(), soonest = UINT64_MAX;
    uint64_t idle = idle_cycles(a, now);
    for (int i = 0; i < vp->count - 1; i++) {
        int x = self->order[i];
        struct aff_vp *o = V(vp->all[x]);
        uint64_t *since = &self->backlog_since[x];
        if (!atomic_load_explicit(&o->len, memory_order_relaxed)) {
            *since = 0;
            continue;
        }
        if (!*since)
            *since = now;
        bool overdue = idle && now - *since >= idle;
        if (idle && !overdue && *since + idle - now < soonest)
            soonest = *since + idle - now;
        bool near = self->level[x] > 0 && self->level[x] <= AFF_NEAR_LEVEL;
        ito__spin_lock(&o->lock);
        ito_policy_node_t *first = take_from(vp, x, o, near || overdue, now, idle, &soonest);
        ito__spin_unlock(&o->lock);
        if (!first)
            continue;
        *since = 0;
        /* It runs here now: record it, and queue the rest of its group. */
        ito__spin_lock(&self->lock);
        for (ito_policy_node_t *m = first->next, *next; m; m = next) {
            next = m->next;
            push(self, vp->index, m);
        }
        set_cur_group(self, ito_policy_node_group(first));
        ito__spin_unlock(&self->lock);
        ran(self, first);
        return first;
    }
    if (soonest != UINT64_MAX)   /* a thread becomes movable then */
        ito_policy_retry_after((uint64_t)((double)soonest * (double)a->idle_ns / (double)idle) + 1);
    return NULL;
}

/* Balance, at the policy's tick (about once a millisecond of a vproc that
 * switches, at each slice's end of one whose thread computes): a busy vproc
 * whose queue holds two threads fewer than the fullest other one takes one
 * from it, under a thief's rules (rule 3). Only idle vprocs stole: the
 * threads spawned on one vproc while the others were busy shared it for
 * ever, while another vproc ran a single thread (beside 32 computing
 * threads on 16 vprocs, a semaphore ping-pong made no round trip in 0.3 s). */
static void aff_tick(ito_policy_vproc_t *vp)
{
    if (vp->count < 2)
        return;
    struct aff_vp *self = V(vp);
    unsigned most = atomic_load_explicit(&self->len, memory_order_relaxed) + 1;
    int x = -1;
    for (int i = 0; i < vp->count; i++) {
        unsigned len = atomic_load_explicit(&V(vp->all[i])->len, memory_order_relaxed);
        if (i != vp->index && len > most) {
            most = len;
            x = i;
        }
    }
    if (x < 0)
        return;
    order_victims(vp, self);   /* (self->level, for `near`) */
    uint64_t now = ito__cycles(), soonest = UINT64_MAX, idle = idle_cycles(A(vp), now);
    bool near = self->level[x] > 0 && self->level[x] <= AFF_NEAR_LEVEL;
    struct aff_vp *o = V(vp->all[x]);
    ito__spin_lock(&o->lock);
    ito_policy_node_t *first = take_from(vp, x, o, near, now, idle, &soonest);
    ito__spin_unlock(&o->lock);
    if (!first)
        return;
    ito__spin_lock(&self->lock);
    for (ito_policy_node_t *m = first, *next; m; m = next) {
        next = m->next;
        push(self, vp->index, m);
    }
    ito__spin_unlock(&self->lock);
}

const ito_policy_ops_t ito__policy_affinity = {
    .abi = ITO_POLICY_ABI,
    .size = sizeof(ito_policy_ops_t),
    .name = "affinity",
    .init = aff_init,
    .vproc_init = aff_vproc_init,
    .enqueue = aff_enqueue,
    .pick = aff_pick,
    .take = aff_take,
    .steal = aff_steal,
    .tick = aff_tick,
};
