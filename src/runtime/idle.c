/* SPDX-License-Identifier: MIT */
/*
 * Idle vprocs: look for work briefly, then sleep, and never miss a wake-up.
 *
 * [SA §4.2]: a processor that runs out of work spins for a while before
 * declaring itself idle, because new work often arrives within microseconds
 * (hysteresis). Here an idle vproc, in its activation's scheduler context:
 *
 *   1. looks for work: its own policy, the global queue, expired timers (its
 *      own and other vprocs'), other vprocs' threads (the policy's steal), and
 *      threads stuck in the inbox of a vproc that has stopped picking;
 *   2. keeps looking for idle_spin_ns (ITO_IDLE_SPIN_US, default 50 µs): its
 *      own sources (inbox, policy) at every round, since a thread handed to
 *      it should start within a cache miss; the rest with exponential backoff,
 *      so as not to pound other vprocs' cache lines — and not at all for
 *      the first ITO__IDLE_QUIET_NS (but once if it has not looked at them for
 *      ITO__REMOTE_LOOK_NS). A vproc that has just run out of work
 *      is most often waiting for a wake-up from another vproc; each look
 *      at the others reads lines that the busy vprocs write at every switch
 *      (their inboxes and states, queue ends, next slots, pick counters),
 *      and each such read makes the busy vproc's next write a miss. The
 *      quiet phase alone took a signal-wait round trip across two vprocs to
 *      0.92x of its time (docs/architecture.md, "A wake-up in cache
 *      lines");
 *   3. then sleeps until woken or until the earliest timer: in io_uring_enter
 *      on its ring when it has one (so that I/O completions wake it too,
 *      runtime/ring.c), else on a futex.
 *
 * A process whose threads are all blocked therefore uses no CPU once the
 * window has passed.
 *
 * Wake-ups. Whoever makes work available (a spawn, a wake-up, a timer armed
 * on a busy vproc) checks whether some vproc is spinning; if none is and one
 * is asleep, it wakes one (an eventfd write for a vproc sleeping on its ring,
 * else a futex wake). Work and the idle counters are a Dekker
 * pair: the producer stores the work then loads the counters, the sleeper
 * stores the counters then loads the work; with a store-load barrier on both
 * sides, at least one of them sees the other, so work is never left with
 * every vproc asleep. The producer side is a hot path (every spawn and
 * wake-up), so the barrier is asymmetric: the sleeper issues
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which forces a full barrier
 * on every running thread of the process, and the producer needs only a
 * compiler barrier. Without membarrier both sides use a seq_cst fence.
 *
 * A burst of work (a loop of spawns) must reach every idle vproc at once,
 * without every producer paying for a futex wake. A waker counts the vproc
 * it wakes as spinning as soon as it has woken it (state WOKEN), so that the
 * spawns that follow see a vproc looking and wake nobody. As in Go's scheduler, a
 * spinning vproc that finds work and was the last one spinning wakes
 * another sleeper. Beyond Go's, a steal that takes more threads than it runs
 * (ws takes half a deque) wakes up to two more (ito_policy_spread), and
 * those do the same: the woken vprocs double at each step, log2(vprocs)
 * wake-up latencies instead of one per vproc in a chain. A vproc that finds
 * work in its last look before sleeping, when it no longer counts as
 * spinning, is a producer for what its steal left on its own queue.
 *
 * Rejected: a sleeping vproc that wakes up periodically to poll (uses CPU,
 * adds latency); one global condition variable (a lock on every wake-up).
 */
#include "base/libc.h"
#include "runtime/sched.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/futex.h"
#include "base/panic.h"
#include "runtime/runtime.h"
#include "runtime/carrier.h"
#include "runtime/deadlock.h"
#include "runtime/hooks.h"
#include "runtime/stats.h"
#include "runtime/ring.h"
#include "runtime/sigmask.h"
#include "runtime/trace.h"

/* An inbox that its vproc has not drained for this long, while the vproc made
 * no scheduling decision at all, is emptied by an idle vproc. */
#define ITO__RESCUE_NS 50000u
/* Upper bound of the backoff between two looks at other vprocs, in rounds of
 * the spin loop (one pause each: tens of cycles, more on
 * recent Intel cores). */
#define ITO__BACKOFF_MAX 256u
/* How long a vproc that has just run out of work looks only at its own
 * sources: long enough for a wake-up from another vproc to arrive (a round
 * trip across two CPUs took 0.5-1.7 µs on the machines measured, bench/
 * signalwait), short beside the stealing it delays. */
#define ITO__IDLE_QUIET_NS 2000u
/* A vproc that has not looked beyond its own sources for this long looks
 * once before its quiet phase: one whose own work keeps coming back within
 * the phase (a ping-pong) would otherwise never steal, run another vproc's
 * due timers or rescue an inbox, while it counts as spinning, so that
 * nobody wakes a sleeper for that work either. */
#define ITO__REMOTE_LOOK_NS 20000u

void ito__idle_init(void)
{
    long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    ito__rt.asym_fence = q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                         syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* The sleeper's side: see ito__fence_light (sched.h). */
void ito__fence_heavy(void)
{
    if (!ito__rt.asym_fence) {
        ITO_FENCE();
        return;
    }
    /* The producers rely on it (they only use a compiler barrier), so a
     * failure cannot fall back to a local fence: retry (ENOMEM, EINTR are
     * transient), and stop with a message if it keeps failing. */
    for (int tries = 0; syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0; tries++) {
        if (tries == 1000)
            ito__panic("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) keeps failing (%s); ito cannot "
                       "keep its idle vprocs from losing wake-ups", strerror(errno));
        ito__libc_sched_yield();
    }
}

/* Wake vp if it sleeps, into state `to`. */
static bool wake_into(struct ito__vproc *vp, uint32_t to)
{
    uint32_t s = ITO__VP_SLEEPING;
    if (atomic_load_explicit(&vp->run_state, memory_order_relaxed) == ITO__VP_SLEEPING &&
        atomic_compare_exchange_strong_explicit(&vp->run_state, &s, to,
                                                memory_order_relaxed, memory_order_relaxed)) {
        if (vp->ring)
            ito__ring_kick(vp->ring);   /* it sleeps on its ring (runtime/ring.c) */
        else
            ito__futex_wake(&vp->run_state, 1);
        return true;
    }
    return false;
}

bool ito__vproc_wake(struct ito__vproc *vp) { return wake_into(vp, ITO__VP_IDLE); }

/* Wake up to `want` sleeping vprocs, each counted as spinning from now on
 * (state WOKEN: the vproc does not count itself again), so that the producers
 * that follow see a vproc looking and do not pay for a wake-up each while it
 * gets up. The count follows the wake-up, so it only ever stands for a vproc
 * that is awake and will look (with the heavy fence before it sleeps again);
 * counting first could stand for none, when the CAS fails, and a producer
 * reading it would wake nobody. The woken vproc may stop spinning before the
 * count is made, so nspinning may be -1 for a moment: every test treats a
 * count below 1 as nobody spinning, which costs at most one wake-up more. */
static unsigned wake_spinning(unsigned want, const struct ito__vproc *self)
{
    static _Atomic unsigned rotor;   /* spreads wake-ups; a hint, races are harmless */
    unsigned n = (unsigned)ito__rt.nvprocs, woken = 0;
    unsigned start = atomic_load_explicit(&rotor, memory_order_relaxed);
    for (unsigned i = 0; i < n && woken < want; i++) {
        unsigned k = (start + i) % n;
        struct ito__vproc *vp = ito__rt.vprocs[k];
        /* (self: a vproc stealing in its last look before sleeping is
         * SLEEPING already) */
        if (vp == self || atomic_load_explicit(&vp->run_state, memory_order_relaxed) != ITO__VP_SLEEPING)
            continue;
        if (wake_into(vp, ITO__VP_WOKEN)) {
            atomic_fetch_add_explicit(&ito__rt.nspinning, 1, memory_order_seq_cst);
            atomic_store_explicit(&rotor, k + 1, memory_order_relaxed);
            woken++;
        }
    }
    return woken;
}

void ito__wake_one(void) { wake_spinning(1, NULL); }

/* A burst reaches the idle vprocs as a tree: a vproc that took threads to
 * spare wakes up to two more, which do the same. */
void ito__idle_spread(const struct ito__vproc *self, unsigned surplus)
{
    if (surplus && atomic_load_explicit(&ito__rt.nsleeping, memory_order_relaxed) > 0)
        wake_spinning(surplus < 2 ? surplus : 2, self);
}

/* Something was placed where vp looks (its inbox, its policy's structure):
 * wake vp if it sleeps; false if vp has no processor. The placer's side of
 * the Dekker pairs of a vproc going to sleep (it stores SLEEPING, runs the
 * heavy fence, then looks) and of a vproc parking (it stores REVOKED, runs
 * the heavy fence, then gives away what it holds, revoke.c): either that
 * look sees the placement, or we see the state here. */
bool ito__vproc_kick_quiet(struct ito__vproc *vp)
{
    ito__fence_light();
    return ito__vproc_wake(vp) ||
           atomic_load_explicit(&vp->run_state, memory_order_relaxed) != ITO__VP_REVOKED;
}

void ito__vproc_kick(struct ito__vproc *vp)
{
    /* A vproc without a processor gives the thread back (revoke.c). */
    if (ITO_UNLIKELY(!ito__vproc_kick_quiet(vp)))
        ito__hooks.rescue(vp);
}

/* A timer was armed for `deadline`: wake a sleeper that would oversleep it. */
void ito__idle_timer_armed(uint64_t deadline)
{
    ito__fence_light();
    if (atomic_load_explicit(&ito__rt.nsleeping, memory_order_relaxed) == 0)
        return;
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        struct ito__vproc *vp = ito__rt.vprocs[i];
        if (atomic_load_explicit(&vp->run_state, memory_order_relaxed) != ITO__VP_SLEEPING)
            continue;
        uint64_t d = atomic_load_explicit(&vp->sleep_deadline, memory_order_relaxed);
        if ((d == 0 || d > deadline) && ito__vproc_wake(vp))
            return;
    }
}

static bool run_timers(struct ito__vproc *self, uint64_t now)
{
    bool fired = false;
    int n = ito__rt.nvprocs;
    for (int i = 0; i < n; i++) {
        struct ito__vproc *vp = ito__rt.vprocs[(self->index + i) % n];
        if (atomic_load_explicit(&vp->timers.next, memory_order_relaxed) <= now)
            fired |= ito__timers_run(&vp->timers, now) > 0;
    }
    return fired;
}

void ito__vproc_retry_at(struct ito__vproc *vp, uint64_t at)
{
    if (!vp->retry_at || at < vp->retry_at)
        vp->retry_at = at;
}

/* Empty the inbox of a vproc that has stopped picking because its activation
 * runs one thread for a long time, so that threads sent there do not wait
 * while this vproc idles. Only a BUSY vproc qualifies — an idle one picks
 * its inbox itself, a sleeping one is woken by whoever fills its inbox — and
 * only after this vproc has seen the inbox non-empty and the owner's pick
 * count unchanged for the whole window. */
static void rescue_inboxes(struct ito__vproc *self, uint64_t now)
{
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        struct ito__vproc *vp = ito__rt.vprocs[i];
        if (vp == self)
            continue;
        if (!atomic_load_explicit(&vp->inbox, memory_order_relaxed) ||
            atomic_load_explicit(&vp->run_state, memory_order_relaxed) != ITO__VP_BUSY) {
            self->seen_since[i] = 0;   /* start over next time */
            continue;
        }
        uint64_t ticks = atomic_load_explicit(&vp->ticks, memory_order_relaxed);
        if (!self->seen_since[i] || ticks != self->seen_ticks[i]) {
            self->seen_ticks[i] = ticks;
            self->seen_since[i] = now;
            ito__vproc_retry_at(self, now + ITO__RESCUE_NS);   /* come back even if asleep by then */
        } else if (now - self->seen_since[i] < ITO__RESCUE_NS) {
            ito__vproc_retry_at(self, self->seen_since[i] + ITO__RESCUE_NS);
        } else {
            /* Any consumer may take the whole list: the exchange makes the
             * batches disjoint. Acquire pairs with inbox_push's release. */
            struct ito__thread *list = atomic_exchange_explicit(&vp->inbox, NULL, memory_order_acquire);
            ito__inbox_drain(self, list);
            self->seen_since[i] = 0;
        }
    }
}

/* The vproc's own sources: completions on its ring, its inbox, its policy. */
static inline struct ito__thread *pick_own(struct ito__vproc *vp)
{
    if (vp->ring && ito__ring_ready(vp->ring))
        ito__ring_reap(vp->ring, false);
    return ito__pick_local(vp);
}

/* Reap the completions of busy vprocs' rings: their owners look at them only
 * every few dozen picks, and never while one thread runs for long. */
static void rescue_rings(struct ito__vproc *self)
{
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        struct ito__vproc *vp = ito__rt.vprocs[i];
        if (vp != self && vp->ring && ito__ring_ready(vp->ring) &&
            atomic_load_explicit(&vp->run_state, memory_order_relaxed) == ITO__VP_BUSY)
            ito__ring_reap(vp->ring, true);
    }
}

/* Everything but the vproc's own sources. Also sets vp->retry_at when some
 * thread may be taken later but not yet. */
static struct ito__thread *find_remote(struct ito__vproc *vp, uint64_t now)
{
    struct ito__thread *t;
    vp->retry_at = 0;
    vp->remote_looked_ns = now;
    if (ito__global_drain(vp, 32) && (t = ito__pick_local(vp)))
        return t;
    if (run_timers(vp, now) && (t = ito__pick_local(vp)))
        return t;
    if (ito__rt.policy->steal) {
        ito_policy_node_t *n = ito__rt.policy->steal(&vp->pv);
        if (n) {
            t = ito__thread_of_node(n);
            ITO_STAT_INC(vp, steals);
            ITO_TRACE_EVENT(steal, vp->index, t->index, t->vp ? t->vp->index : -1);
            if (ITO_UNLIKELY(ito__thread_cpus(t) != NULL) && ito__affinity_sent_on(vp, t))
                ;   /* (its CPU set changed since it was queued) */
            else if (ito__claim(t)) {
                ITO_STAT_INC(vp, decisions);
                return t;
            }
        }
    }
    /* A thread held to another vproc whose set has this vproc's CPU too. */
    if ((t = ito__affinity_steal(vp))) {
        ITO_STAT_INC(vp, steals);
        ITO_TRACE_EVENT(steal, vp->index, t->index, t->vp ? t->vp->index : -1);
        if (ito__claim(t)) {
            ITO_STAT_INC(vp, decisions);
            return t;
        }
    }
    rescue_inboxes(vp, now);
    if (ito__rings_on)
        rescue_rings(vp);
    return ito__pick_local(vp);
}

static struct ito__thread *find_work(struct ito__vproc *vp, uint64_t now)
{
    struct ito__thread *t = pick_own(vp);
    return t ? t : find_remote(vp, now);
}

/* main called ito_exit: end the process once no ito thread is left. Called
 * by a vproc about to sleep when all the others are asleep, so that the
 * per-vproc counters are quiescent. */
static void maybe_exit_process(void)
{
    if (!atomic_load_explicit(&ito__rt.main_exited, memory_order_acquire))
        return;
    if (atomic_load_explicit(&ito__rt.nsleeping, memory_order_acquire) +
            atomic_load_explicit(&ito__rt.nrevoked, memory_order_acquire) !=
        ito__rt.nvprocs)
        return;
    int64_t live = atomic_load_explicit(&ito__rt.foreign_spawns, memory_order_relaxed);
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        struct ito__vproc *vp = ito__rt.vprocs[i];
        live += (int64_t)ITO_STAT_READ(vp, spawns) - (int64_t)ITO_STAT_READ(vp, exits);
    }
    if (live == 0)
        exit(0);
}

/* A vproc leaves with work in hand and none is left looking: more may be
 * coming, or be left where it found this (a steal that took a batch), so
 * let another vproc take over the looking. */
static void hand_over_looking(void)
{
    if (atomic_load_explicit(&ito__rt.nsleeping, memory_order_relaxed) > 0)
        ito__wake_one();
}

static void stop_spinning(void)
{
    /* <= 1: see wake_spinning */
    if (atomic_fetch_sub_explicit(&ito__rt.nspinning, 1, memory_order_seq_cst) <= 1)
        hand_over_looking();
}

/* Does a vproc whose processor was taken away still run a thread? Its
 * carrier computes on our processors until its next safe point (the agent
 * moved it there: cpushare/agent.c), and the thread comes to a vproc that kept
 * one when it parks (revoke.c): those are not idle meanwhile. Under TSan, or
 * in a long critical section, that can take longer than the hysteresis.
 * (One blocked in a call uses no processor: the monitor hands it off.)
 * Relaxed: a stale answer only moves the hint by one hysteresis period. */
static bool revocation_running(void)
{
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        struct ito__vproc *o = ito__rt.vprocs[i];
        if (atomic_load_explicit(&o->revoke, memory_order_relaxed) &&
            atomic_load_explicit(&o->run_state, memory_order_relaxed) == ITO__VP_BUSY &&
            (atomic_load_explicit(&o->kstate, memory_order_relaxed) & ITO__KS_MASK) == ITO__KS_RUN)
            return true;   /* not in a blocking call: it computes */
    }
    return false;
}

/* Tell the allocator whether vp is idle (agent.c), on transitions only. */
static void declare_idle(struct ito__vproc *vp, bool idle)
{
    if (atomic_load_explicit(&vp->idle_declared, memory_order_relaxed) == idle)
        return;
    atomic_store_explicit(&vp->idle_declared, idle, memory_order_relaxed);
    ito__hooks.idle(idle);
}

void ito__vproc_busy_again(struct ito__vproc *vp) { declare_idle(vp, false); }

/* The first moments of idleness: the vproc's own sources only, until
 * `quiet` ns have passed or its processor is being taken away. */
static struct ito__thread *look_quietly(struct ito__vproc *vp, uint64_t start, uint64_t quiet)
{
    struct ito__thread *t;
    for (unsigned round = 1;; round++) {
        if ((t = pick_own(vp)))
            return t;
        if (!(round & 15) && (ito__now_ns() - start >= quiet || ito__vproc_revoked(vp)))
            return NULL;
        ito__cpu_relax();
    }
}

/* Returns a thread for vp, or NULL if vp's processor is being taken away
 * (revoke.c). */
struct ito__thread *ito__idle_find(struct ito__vproc *vp)
{
    uint64_t now = ito__now_ns();
    struct ito__thread *t = pick_own(vp);
    if (t || ito__vproc_revoked(vp))
        goto found;
    atomic_fetch_add_explicit(&ito__rt.nspinning, 1, memory_order_seq_cst);
    /* Not with more vprocs than CPUs (another activation may wait for this
     * CPU), nor when the last idle period ended with work from elsewhere (a
     * thief in a fork-join program steals at once: fork-many on 2 vprocs
     * took 1.09x its time with a quiet phase before every steal). The spin
     * loop below looks at the rest at once. At most half the spin window.
     * One look beyond its own sources first when the last is
     * ITO__REMOTE_LOOK_NS old. */
    uint64_t quiet = ito__rt.idle_spin_ns / 2 < ITO__IDLE_QUIET_NS ? ito__rt.idle_spin_ns / 2 : ITO__IDLE_QUIET_NS;
    if (!ito__rt.oversubscribed && quiet && !vp->idle_remote &&
        ((now - vp->remote_looked_ns >= ITO__REMOTE_LOOK_NS && (t = find_remote(vp, now))) ||
         (t = look_quietly(vp, now, quiet)))) {
        stop_spinning();
        goto found;
    }
    for (;;) {
        /* Spin: our own sources every round, the rest with backoff. */
        uint64_t start = now;
        unsigned backoff = 1, round = 0;
        bool revoked = false;
        for (;;) {
            /* With more vprocs than CPUs, another activation may be waiting
             * for this CPU: let it run rather than spin in its way. */
            if (ITO_UNLIKELY(ito__rt.oversubscribed))
                ito__libc_sched_yield();
            else
                ito__cpu_relax();
            if ((t = pick_own(vp))) {
                vp->idle_remote = false;
                break;
            }
            if (++round < backoff)
                continue;
            round = 0;
            if (backoff < ITO__BACKOFF_MAX)
                backoff <<= 1;
            if ((revoked = ito__vproc_revoked(vp)))
                break;
            now = ito__now_ns();
            if (now - start >= ito__rt.idle_spin_ns)
                break;
            if ((t = find_remote(vp, now))) {
                vp->idle_remote = true;
                break;
            }
        }
        if (t || revoked) {
            stop_spinning();
            goto found;
        }
        /* Sleep. Announce it, then look once more (the Dekker pair above). */
        atomic_store_explicit(&vp->sleep_deadline, 0, memory_order_relaxed);
        atomic_store_explicit(&vp->run_state, ITO__VP_SLEEPING, memory_order_relaxed);
        atomic_fetch_add_explicit(&ito__rt.nsleeping, 1, memory_order_seq_cst);
        atomic_fetch_sub_explicit(&ito__rt.nspinning, 1, memory_order_seq_cst);
        ito__fence_heavy();
        t = find_work(vp, ito__now_ns());
        bool idle_timeout = false;
        uint32_t was;
        if (!t) {
            maybe_exit_process();
            ito__sigmask_idle(ito__activation_self());
            uint64_t deadline = ito__timers_earliest();
            if (vp->retry_at && vp->retry_at < deadline)
                deadline = vp->retry_at;   /* something to take later (find_remote) */
            /* [SA §4.2]: a vproc tells the allocator it is idle only
             * after sleeping a while (hysteresis): wake up then to say so. */
            uint64_t declare_at = 0;
            if (ito__rt.allocator && !atomic_load_explicit(&vp->idle_declared, memory_order_relaxed)) {
                declare_at = ito__now_ns() + ITO__ALLOC_IDLE_NS;
                if (declare_at < deadline)
                    deadline = declare_at;
            }
            /* Every vproc asleep with nothing ahead: a deadlock, unless
             * something moves within the grace period (deadlock.c). */
            uint64_t suspect = 0;
            if (deadline == UINT64_MAX)
                deadline = suspect = ito__deadlock_suspect(ito__now_ns());
            atomic_store_explicit(&vp->sleep_deadline, deadline, memory_order_relaxed);
            ITO_STAT_INC(vp, idle_sleeps);
            while (atomic_load_explicit(&vp->run_state, memory_order_acquire) == ITO__VP_SLEEPING) {
                if (vp->ring) {
                    /* Completions made threads ready here: stop sleeping. */
                    if (ito__ring_sleep(vp, deadline) > 0 || (deadline && ito__now_ns() >= deadline))
                        break;
                    continue;
                }
                int r = ito__futex_wait(&vp->run_state, ITO__VP_SLEEPING, deadline);
                if (r == ETIMEDOUT)
                    break;
            }
            if ((was = atomic_exchange_explicit(&vp->run_state, ITO__VP_IDLE, memory_order_acquire)) !=
                ITO__VP_SLEEPING)
                ITO_STAT_INC(vp, wakeups);
            idle_timeout = declare_at && ito__now_ns() >= declare_at;
            if (suspect && was == ITO__VP_SLEEPING && ito__now_ns() >= suspect && !(t = find_work(vp, ito__now_ns())))
                ito__deadlock_check();   /* returns if some thread may still run */
        } else {
            was = atomic_exchange_explicit(&vp->run_state, ITO__VP_IDLE, memory_order_relaxed);
        }
        /* WOKEN: the waker counted this vproc as spinning (wake_spinning). */
        bool counted = was == ITO__VP_WOKEN;
        atomic_fetch_sub_explicit(&ito__rt.nsleeping, 1, memory_order_seq_cst);
        if (t || ito__vproc_revoked(vp)) {
            if (counted)
                stop_spinning();
            else if (t) {
                /* Found in the last look, when it no longer counted as
                 * spinning: what a steal there took beyond t is new work on
                 * its queue, for which it is the producer (the Dekker pair
                 * above; ws and prio also spread). Without this, a batch
                 * stayed behind the thread it runs while the others slept
                 * (slices off: for ever). Rare (the work came during the
                 * last look); not a demand for processors (t may be all). */
                ito__fence_light();
                if (atomic_load_explicit(&ito__rt.nspinning, memory_order_relaxed) <= 0)
                    hand_over_looking();
            }
            goto found;
        }
        if (idle_timeout && !revocation_running())
            declare_idle(vp, true);
        if (!counted)
            atomic_fetch_add_explicit(&ito__rt.nspinning, 1, memory_order_seq_cst);
        now = ito__now_ns();
    }
found:
    return t;
}
