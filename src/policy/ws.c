/* SPDX-License-Identifier: MIT */
/*
 * "ws": work stealing, ito's default policy.
 *
 * Per vproc:
 *   - a "next" slot holding the thread made ready last on this vproc — just
 *     spawned, woken (a consumer woken by its producer) or resumed — which
 *     runs before anything else: producer/consumer pairs hand the vproc to
 *     each other like coroutines, and a parent that joins the child it just
 *     spawned finds it there. To keep such a pair from starving the rest, a
 *     thread that has used a time slice since it was last queued (a tick
 *     found it running: ito_policy_node_slices) is queued in the FIFO below
 *     instead, behind the threads that wait there, and a tick that charges
 *     a thread picked from the slot ends the streak of picks from it (the
 *     next pick takes the deque or the FIFO first): the pair keeps the vproc
 *     for about a slice of CPU time, as Go's runnext inherits the time
 *     slice. With slices off (ITO_TIMESLICE_US=0) nothing is charged, and
 *     at most ITO__WS_NEXT_CAP picks in a row come from the slot. Thieves may take
 *     a thread from the slot only after it has sat there, untouched by its
 *     owner, for ITO__WS_NEXT_GRACE_NS (as Go's runnext): usually the owner
 *     gets to it first, cheaper and with its data in cache;
 *   - a Chase-Lev deque (deque.c) for the threads that spawns push out of the
 *     slot: LIFO for the owner, so fork-join programs run depth-first with
 *     warm caches ([SA §4.2]; Cilk), FIFO for thieves, which take the
 *     oldest — usually largest — work;
 *   - a FIFO for threads that yielded or used a slice, and, at its front,
 *     for those that wake-ups push out of the slot, in turn (so a stream of
 *     wake-ups serves its threads in turn): a thread woken while threads
 *     that used a slice are ready runs before them (one look that ends
 *     several sleeps used to leave all but the last behind a slice of each
 *     spinner). So that a stream of wake-ups cannot starve those, the owner
 *     takes one of them after each ITO__WS_WOKEN_RUN threads from the front.
 *     Its owner uses it with plain loads and stores, so that ito_yield among
 *     the threads of one vproc costs no atomic instruction; a thief gets at
 *     it through a biased lock: the owner marks itself inside with a store
 *     and checks for a thief after a compiler barrier, a thief marks itself,
 *     runs the heavy fence (membarrier, idle.c) and waits for the owner to be
 *     out — a Dekker pair in which only the rare side pays.
 *
 * Stealing: an idle vproc visits the others from a random one on, and takes
 * half of the first non-empty deque it finds (at most ITO__WS_STEAL_MAX), one
 * Chase-Lev steal at a time: the first it runs, the rest it pushes on its own
 * deque. Failing that, half of a yield list, then a next-slot thread past its
 * grace period; one still within it makes the idle vproc come back in time
 * rather than sleep on (ito_policy_retry_after). A busy vproc that has
 * nothing else queued balances at the end of a slice (balance): it takes
 * from a vproc with at least two threads waiting, by the same steals.
 * Threads made ready from outside the vprocs are in the core's global
 * queue, which the core drains into the policy.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include <ito/policy.h>

#include "base/backoff.h"
#include "base/compiler.h"
#include "runtime/spinlock.h"
#include "runtime/runtime.h"
#include "runtime/sched.h"
#include "policy/deque.h"

#define ITO__WS_NEXT_CAP 8            /* picks in a row from the next slot, slices off */
#define ITO__WS_NEXT_GRACE_NS 5000    /* before a thief may take the next slot (Go: 3 µs) */
#define ITO__WS_STEAL_MAX 128         /* threads taken by one steal */
#define ITO__WS_LOG_CAP 8             /* initial deque capacity: 256 */
#define ITO__WS_WOKEN_RUN 8           /* woken threads taken from the FIFO's front per other one */

struct seen {                        /* a thief's last look at a victim's next slot */
    ito_policy_node_t *node;
    uint64_t picks;
    uint64_t since;
};

struct ws {
    struct ito__deque dq;
    _Atomic(ito_policy_node_t *) next ITO_ALIGNED_CACHELINE;  /* owner; thieves CAS */
    _Atomic uint64_t picks;          /* owner writes, thieves read */
    /* the yield list: under the biased lock (yq_enter/yq_leave, steal_yq);
     * yq_head is also read without it, as a hint */
    _Atomic(ito_policy_node_t *) yq_head;
    ito_policy_node_t *yq_tail;
    ito_policy_node_t *yq_woken;     /* the last of the woken threads at its front, NULL: none */
    _Atomic int yq_owner;            /* the owner is inside */
    /* owner only */
    unsigned streak ITO_ALIGNED_CACHELINE;
    unsigned woken_run;              /* taken from the FIFO's woken front since one behind it */
    unsigned cap;                    /* picks in a row from the slot: ITO__WS_NEXT_CAP or none */
    ito_policy_node_t *last;         /* picked last, from the next slot (picked()) */
    uint32_t last_seen;              /* its slice count then */
    uint32_t rng;
    struct seen *seen;               /* [count] */
    /* thieves */
    _Atomic int yq_thief ITO_ALIGNED_CACHELINE;   /* a thief is inside */
    ito__spinlock yq_thieves;        /* one thief at a time */
};

static struct ws *W(ito_policy_vproc_t *vp) { return vp->local; }

static int ws_vproc_init(ito_policy_vproc_t *vp)
{
    struct ws *w = aligned_alloc(ITO_CACHELINE, sizeof *w);
    if (!w)
        return ENOMEM;
    *w = (struct ws){ .rng = 0x2545f491u * (uint32_t)(vp->index + 1) };
    ito__spin_init(&w->yq_thieves, ITO__LOCK_STEAL);
    w->seen = calloc((size_t)vp->count, sizeof *w->seen);
    if (!w->seen || ito__deque_init(&w->dq, ITO__WS_LOG_CAP)) {
        free(w->seen);
        free(w);
        return ENOMEM;
    }
    atomic_init(&w->next, NULL);
    atomic_init(&w->picks, 0);
    atomic_init(&w->yq_head, NULL);
    atomic_init(&w->yq_owner, 0);
    atomic_init(&w->yq_thief, 0);
    w->dq.solo = vp->count == 1;
    w->cap = ito__rt.timeslice_ns ? UINT_MAX : ITO__WS_NEXT_CAP;
    vp->local = w;
    return 0;
}

/* The owner's side of the biased lock. Dekker pair with steal_yq: owner
 * stores yq_owner then (light fence) loads yq_thief; thief stores yq_thief
 * then (heavy fence) loads yq_owner. Acquire on yq_thief pairs with the
 * thief's release when it leaves, so the owner sees the list it left. */
static ITO_NOINLINE void yq_enter_slow(struct ws *w)
{
    do {
        atomic_store_explicit(&w->yq_owner, 0, memory_order_release);
        while (atomic_load_explicit(&w->yq_thief, memory_order_acquire))
            ito__cpu_relax();
        atomic_store_explicit(&w->yq_owner, 1, memory_order_relaxed);
        ito__fence_light();
    } while (atomic_load_explicit(&w->yq_thief, memory_order_acquire));
}

static inline void yq_enter(struct ws *w)
{
    if (w->dq.solo)
        return;   /* one vproc: no thieves */
    atomic_store_explicit(&w->yq_owner, 1, memory_order_relaxed);
    ito__fence_light();
    if (ITO_UNLIKELY(atomic_load_explicit(&w->yq_thief, memory_order_acquire)))
        yq_enter_slow(w);
}

/* Release pairs with the thief's acquire load of yq_owner. */
static inline void yq_leave(struct ws *w)
{
    if (!w->dq.solo)
        atomic_store_explicit(&w->yq_owner, 0, memory_order_release);
}

static ito_policy_node_t *yq_head(struct ws *w) { return atomic_load_explicit(&w->yq_head, memory_order_relaxed); }
static void yq_set_head(struct ws *w, ito_policy_node_t *n) { atomic_store_explicit(&w->yq_head, n, memory_order_relaxed); }

static void yq_push(struct ws *w, ito_policy_node_t *n)
{
    yq_enter(w);
    bool others = yq_head(w) != NULL;
    n->next = NULL;
    if (w->yq_tail)
        w->yq_tail->next = n;
    else
        yq_set_head(w, n);
    w->yq_tail = n;
    yq_leave(w);
    if (others && !w->dq.solo)
        ito__idle_notify();   /* threads wait behind this one: idle vprocs may take them */
}

/* A woken thread that another pushed out of the next slot: after the woken
 * ones at the FIFO's front, before those that yielded or used a slice. */
static void yq_push_woken(struct ws *w, ito_policy_node_t *n)
{
    yq_enter(w);
    bool others = yq_head(w) != NULL;
    ito_policy_node_t *after = w->yq_woken;
    if (after) {
        n->next = after->next;
        after->next = n;
    } else {
        n->next = yq_head(w);
        yq_set_head(w, n);
        w->woken_run = 0;
    }
    if (!n->next)
        w->yq_tail = n;
    w->yq_woken = n;
    yq_leave(w);
    if (others && !w->dq.solo)
        ito__idle_notify();
}

/* Onto our deque; into our FIFO if there is no memory to grow the deque. */
static void dq_push(struct ws *w, ito_policy_node_t *n)
{
    if (ITO_UNLIKELY(!ito__deque_push(&w->dq, n)))
        yq_push(w, n);
}

static ito_policy_node_t *yq_pop(struct ws *w)
{
    if (!yq_head(w))
        return NULL;
    yq_enter(w);
    ito_policy_node_t *n = yq_head(w), *woken = w->yq_woken;
    if (ITO_UNLIKELY(woken) && woken->next && w->woken_run >= ITO__WS_WOKEN_RUN) {
        /* The turn of one that waits behind the woken ones. */
        n = woken->next;
        woken->next = n->next;
        if (!n->next)
            w->yq_tail = woken;
        w->woken_run = 0;
    } else if (n) {
        yq_set_head(w, n->next);
        if (!n->next)
            w->yq_tail = NULL;
        if (ITO_UNLIKELY(woken)) {
            w->woken_run++;
            if (n == woken)
                w->yq_woken = NULL;
        }
    }
    yq_leave(w);
    return n;
}

/* Into the next slot; a previous occupant moves to the deque when a spawn
 * pushes it out (fork-join order), to the FIFO otherwise: under a stream of
 * wake-ups (a server's I/O completions) the deque's LIFO order would keep
 * the older ones waiting indefinitely, as a FIFO does not (Go's runq). */
static void put_next(struct ws *w, ito_policy_node_t *n, ito_ready_reason_t why)
{
    ito_policy_node_t *old = atomic_load_explicit(&w->next, memory_order_relaxed);
    if (w->dq.solo) {   /* no thieves */
        atomic_store_explicit(&w->next, n, memory_order_relaxed);
    } else if (!old) {
        /* Safe as a plain store: thieves only ever change the slot from
         * non-empty to empty. Release pairs with a thief's acquire load. */
        atomic_store_explicit(&w->next, n, memory_order_release);
    } else {
        /* A thief may be taking `old` right now: exchange, and push out
         * whatever we really took. */
        old = atomic_exchange_explicit(&w->next, n, memory_order_acq_rel);
    }
    if (old) {
        if (why == ITO_READY_SPAWN)
            dq_push(w, old);
        else
            yq_push_woken(w, old);
    }
}

static uint32_t xorshift(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static ito_policy_node_t *steal_half(struct ws *thief, struct ws *victim);
static ito_policy_node_t *steal_yq(struct ws *thief, struct ws *victim, unsigned min);

/* Balance, at a slice's end (before its thread is queued: nobody can want
 * it yet, so the work done on its stack delays no one — sched.c): a vproc
 * that has nothing else to run takes from another that has at least two
 * threads waiting, as an idle one would, and queues what it took. Only
 * idle vprocs stole: threads spawned on one vproc while the others were
 * busy shared it for ever, while another vproc ran a single thread
 * (tests/policy/balance). At a slice's end only, not at each pick: a vproc
 * that switches often is not the one left with a single computing thread. */
static ITO_NOINLINE void balance(ito_policy_vproc_t *vp, struct ws *self)
{
    if (ito__deque_size(&self->dq) > 0 || yq_head(self) || atomic_load_explicit(&self->next, memory_order_relaxed))
        return;
    int n = vp->count, start = (int)(xorshift(&self->rng) % (uint32_t)n);
    for (int i = 0; i < n; i++) {
        struct ws *w = W(vp->all[(start + i) % n]);
        ito_policy_node_t *x = NULL;
        if (w == self)
            continue;
        if (ito__deque_size(&w->dq) >= 2)
            x = steal_half(self, w);
        if (!x && yq_head(w))
            x = steal_yq(self, w, 2);
        if (x) {
            dq_push(self, x);
            return;
        }
    }
}

static void ws_enqueue(ito_policy_vproc_t *vp, ito_policy_node_t *n, ito_ready_reason_t why)
{
    struct ws *w = W(vp);
    bool used = ito_policy_node_charged(n, &n->word[0]);   /* word[0]: the count seen */
    if (why == ITO_READY_PREEMPT && !w->dq.solo)
        balance(vp, w);
    if (ITO_LIKELY(why != ITO_READY_YIELD && why != ITO_READY_PREEMPT && !used))
        put_next(w, n, why);   /* SPAWN, WAKE, RESUME */
    else
        yq_push(w, n);    /* idle vprocs may take it (steal_yq) */
}

static ito_policy_node_t *take_next(struct ws *w)
{
    ito_policy_node_t *n = atomic_load_explicit(&w->next, memory_order_relaxed);
    if (!n)
        return NULL;
    if (w->dq.solo) {   /* no thieves */
        atomic_store_explicit(&w->next, NULL, memory_order_relaxed);
        return n;
    }
    /* Acquire pairs with the release of whoever filled the slot. */
    return atomic_exchange_explicit(&w->next, NULL, memory_order_acquire);
}

/* The thread this vproc picked last from the next slot (NULL: the last pick
 * came from elsewhere), and its slice count then: a streak of picks from the
 * slot ends when a tick charged one of them. */
static ito_policy_node_t *picked(struct ws *w, ito_policy_node_t *n, bool from_next)
{
    w->last = from_next ? n : NULL;
    if (from_next && n)
        w->last_seen = ito_policy_node_slices(n);
    return n;
}

static ito_policy_node_t *ws_pick(ito_policy_vproc_t *vp)
{
    struct ws *w = W(vp);
    atomic_store_explicit(&w->picks, atomic_load_explicit(&w->picks, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    ito_policy_node_t *n;
    /* A chain of threads that wake each other through the slot keeps the
     * vproc for about a slice: the one running when a tick came breaks it
     * (threads that only wake are charged nothing each, but a chain of them
     * can take every processor). */
    bool slice_used = w->last && ito_policy_node_slices(w->last) != w->last_seen;
    if (w->streak < w->cap && !slice_used && (n = take_next(w))) {
        w->streak++;
        return picked(w, n, true);
    }
    w->streak = 0;
    if ((n = ito__deque_take(&w->dq)))
        return picked(w, n, false);
    if ((n = yq_pop(w)))
        return picked(w, n, false);
    return picked(w, take_next(w), false);   /* over the cap, but nothing else is ready */
}

static bool ws_take(ito_policy_vproc_t *vp, ito_policy_node_t *n)
{
    struct ws *w = W(vp);
    /* Only if n would run next: in the next slot, or at the bottom of the
     * deque. Either may still be lost to a thief. */
    if (atomic_load_explicit(&w->next, memory_order_relaxed) == n)
        return take_next(w) == n;   /* a thief can only have emptied the slot */
    return ito__deque_peek(&w->dq) == n && ito__deque_take(&w->dq) == n;
}

/* Take the first half of victim's yield list through the biased lock, if it
 * holds at least `min` threads: the first to run, the rest onto our deque. */
static ito_policy_node_t *steal_yq(struct ws *thief, struct ws *victim, unsigned min)
{
    if (!yq_head(victim) || !ito__spin_trylock(&victim->yq_thieves))
        return NULL;
    atomic_store_explicit(&victim->yq_thief, 1, memory_order_relaxed);
    ito__fence_heavy();
    /* Acquire pairs with yq_leave's release: the list as the owner left it. */
    for (unsigned spins = 0; atomic_load_explicit(&victim->yq_owner, memory_order_acquire);)
        ito__backoff(&spins);   /* long only if the owner's activation was preempted inside */
    ito_policy_node_t *first = yq_head(victim), *last = first;
    unsigned n = 0;
    for (ito_policy_node_t *x = first; x; x = x->next)
        n++;
    if (n < min)
        first = NULL;   /* (leave it as it is) */
    bool took_woken = first && first == victim->yq_woken;
    for (unsigned k = 1; first && k < (n + 1) / 2; k++) {
        last = last->next;
        took_woken |= last == victim->yq_woken;
    }
    if (first) {
        yq_set_head(victim, last->next);
        if (!last->next)
            victim->yq_tail = NULL;
        last->next = NULL;
        if (took_woken)
            victim->yq_woken = NULL;   /* the woken front went whole (it is a prefix) */
    }
    /* Release: the owner (acquire in yq_enter) sees the shortened list. */
    atomic_store_explicit(&victim->yq_thief, 0, memory_order_release);
    ito__spin_unlock(&victim->yq_thieves);
    if (first)
        for (ito_policy_node_t *x = first->next, *nx; x; x = nx) {
            nx = x->next;
            dq_push(thief, x);
        }
    if (first && n > 1)
        ito_policy_spread(n - 1);   /* the rest, here and on the victim */
    return first;
}

/* Take up to half of victim's deque: the first to run, the rest onto ours. */
static ito_policy_node_t *steal_half(struct ws *thief, struct ws *victim)
{
    int64_t size = ito__deque_size(&victim->dq);
    int64_t want = (size + 1) / 2;
    if (want > ITO__WS_STEAL_MAX)
        want = ITO__WS_STEAL_MAX;
    ito_policy_node_t *first = NULL;
    for (int64_t got = 0, tries = 0; got < want && tries < 2 * want + 2; tries++) {
        void *x;
        int r = ito__deque_steal(&victim->dq, &x);
        if (r == ITO__DEQUE_EMPTY)
            break;
        if (r == ITO__DEQUE_LOST)
            continue;
        if (!first)
            first = x;
        else
            dq_push(thief, x);
        got++;
    }
    /* The rest of a burst, here and on the victim: for more idle vprocs. */
    if (first && size > 1)
        ito_policy_spread((unsigned)(size - 1));
    return first;
}

static ito_policy_node_t *ws_steal(ito_policy_vproc_t *vp)
{
    struct ws *self = W(vp);
    int n = vp->count;
    if (n < 2)
        return NULL;
    int start = (int)(xorshift(&self->rng) % (uint32_t)n);
    for (int i = 0; i < n; i++) {
        ito_policy_vproc_t *v = vp->all[(start + i) % n];
        if (v == vp)
            continue;
        ito_policy_node_t *x = steal_half(self, W(v));
        if (x)
            return x;
    }
    for (int i = 0; i < n; i++) {
        ito_policy_vproc_t *v = vp->all[(start + i) % n];
        if (v == vp)
            continue;
        ito_policy_node_t *x = steal_yq(self, W(v), 1);
        if (x)
            return x;
    }
    /* Deques are empty: a thread may be sitting in a busy vproc's next slot. */
    uint64_t now = 0;
    for (int i = 0; i < n; i++) {
        ito_policy_vproc_t *v = vp->all[(start + i) % n];
        if (v == vp)
            continue;
        struct ws *w = W(v);
        struct seen *s = &self->seen[v->index];
        ito_policy_node_t *x = atomic_load_explicit(&w->next, memory_order_acquire);
        uint64_t picks = atomic_load_explicit(&w->picks, memory_order_relaxed);
        if (!x) {
            s->node = NULL;
            continue;
        }
        if (!now)
            now = ito_now_ns();   /* only when some slot is occupied */
        if (x != s->node || picks != s->picks) {
            *s = (struct seen){ x, picks, now };
            ito_policy_retry_after(ITO__WS_NEXT_GRACE_NS);   /* do not sleep past its grace */
            continue;
        }
        if (now - s->since < ITO__WS_NEXT_GRACE_NS) {
            ito_policy_retry_after(ITO__WS_NEXT_GRACE_NS - (now - s->since));
            continue;
        }
        if (atomic_compare_exchange_strong_explicit(&w->next, &x, NULL, memory_order_acquire,
                                                    memory_order_relaxed)) {
            s->node = NULL;
            return x;
        }
    }
    return NULL;
}

const ito_policy_ops_t ito__policy_ws = {
    .abi = ITO_POLICY_ABI,
    .size = sizeof(ito_policy_ops_t),
    .name = "ws",
    .vproc_init = ws_vproc_init,
    .enqueue = ws_enqueue,
    .pick = ws_pick,
    .take = ws_take,
    .steal = ws_steal,
};
