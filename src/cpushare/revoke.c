/* SPDX-License-Identifier: MIT */
/*
 * A vproc whose processor was taken away ([SA]'s "processor preempted"
 * when the allocator reallocates: src/cpushare/agent.c).
 *
 * Problem. When another process gets one of our processors, one of our
 * vprocs must stop running threads — within a bounded time, without losing
 * the thread it was running or those queued on it, and without stranding
 * threads that others hand it later.
 *
 * Approach. The agent sets the vproc's `revoke` flag and pokes it: wakes it
 * if it sleeps, or sends its carrier the time-slice signal, so that a
 * thread computing there is switched out at its next safe point (or at the
 * end of the critical section it is in: upcall/preempt.c). A switch that
 * sees the flag goes to the scheduler context instead of the next thread;
 * the idle loop returns empty-handed. There the vproc parks:
 *
 *   1. It gives its queued threads and its inbox to the global queue, where
 *      the vprocs that keep their processors take them.
 *   2. It stores REVOKED, runs the heavy fence and empties its inbox again: a
 *      thread pushed there meanwhile is either seen here or its pusher saw
 *      REVOKED and took it back itself (ito__revoke_rescue, the Dekker pair
 *      of idle.c). Then it checks the flag again, against a grant that came
 *      before REVOKED was visible (the agent's store of the flag and CAS of
 *      the state are the other side).
 *   3. It reports VPROC_REMOVED and sleeps until the agent grants it a
 *      processor again (REVOKED -> IDLE and a wake-up). Meanwhile it still
 *      serves what only it can: completions on its io_uring ring and its own
 *      timers — the threads they wake go to the global queue at once. Its
 *      kernel thread runs no thread meanwhile, so it blocks every signal, as
 *      a parked spare does (runtime/activation.c), whether or not threads'
 *      masks are in use yet: otherwise one that slept here since before the
 *      first mask change kept the process's mask and took the signals for
 *      the process that every thread blocked (tests/posix/io_poll.c,
 *      ppoll_and_pselect, with another ito process sharing the CPUs).
 *   4. Granted: it pins its carrier to the new processor and reports
 *      VPROC_ADDED.
 * The agent moves the carrier onto the processors the process keeps when
 * it revokes: parking must not wait for, nor take, the processor given
 * away.
 *
 * Threads whose preferred vproc is revoked run elsewhere meanwhile.
 * Rejected: moving the vproc's ring and timers to another vproc (their
 * entries belong to parked threads that would then need a second home).
 */
#include "cpushare/revoke.h"

#include "base/clock.h"
#include "base/futex.h"
#include "runtime/event.h"
#include "runtime/sched.h"
#include "runtime/stats.h"
#include "runtime/ring.h"
#include "runtime/sigmask.h"

/* vp's inbox to the global queue (any caller); returns how many. */
static unsigned inbox_away(struct ito__vproc *vp)
{
    unsigned n = 0;
    /* Acquire pairs with the release CAS of inbox_push (sched.c). */
    struct ito__thread *list = atomic_exchange_explicit(&vp->inbox, NULL, memory_order_acquire);
    while (list) {
        struct ito__thread *next = list->qnext;
        ito__global_push(list);
        list = next;
        n++;
    }
    return n;
}

/* Queued threads and the inbox of vp to the global queue (the owner);
 * returns how many. */
static unsigned give_away(struct ito__vproc *vp)
{
    unsigned n = inbox_away(vp);
    ito_policy_node_t *node;
    while ((node = ito__rt.policy->pick(&vp->pv))) {
        struct ito__thread *t = ito__thread_of_node(node);
        /* The reason it was queued here is the policy's to forget: to the
         * next vproc's policy it is a thread made ready again (or new). */
        t->ready_reason = ito__thread_state(t) == ITO__TS_NEW ? ITO_READY_SPAWN : ITO_READY_WAKE;
        ito__global_push(t);
        n++;
    }
    /* Threads held here by their CPU set: to a vproc on another of their
     * CPUs, or anywhere while none has a processor (runtime/affinity.c). */
    struct ito__thread *t;
    while ((t = ito__affinity_pop(vp))) {
        t->ready_reason = ito__thread_state(t) == ITO__TS_NEW ? ITO_READY_SPAWN : ITO_READY_WAKE;
        ito__global_push(t);
        n++;
    }
    return n;
}

void ito__revoke_rescue(struct ito__vproc *vp)
{
    if (inbox_away(vp))
        ito__idle_notify();
}

static void pin_granted(struct ito__vproc *vp, bool always)
{
    int cpu = atomic_load_explicit(&vp->grant_cpu, memory_order_relaxed);
    if (ito__rt.pin && cpu >= 0 && (always || cpu != vp->cpu)) {
        vp->cpu = cpu;
        ito__pin_self(cpu);
    }
}

void ito__revoke_repin(struct ito__vproc *vp)
{
    pin_granted(vp, false);
}

void ito__revoke_park(struct ito__activation *act)
{
    struct ito__vproc *vp = act->vp;
    /* No signal is handled here while no thread runs (step 3). */
    uint64_t was = act->kmask;
    ito__sigmask_block_all(act);
    give_away(vp);
    atomic_store_explicit(&vp->run_state, ITO__VP_REVOKED, memory_order_seq_cst);
    atomic_fetch_add_explicit(&ito__rt.nrevoked, 1, memory_order_seq_cst);
    ito__fence_heavy();
    give_away(vp);
    ito__idle_notify();   /* what we gave away: to a vproc that keeps its processor */
    /* Seq_cst pairs with the agent's store of revoke = 0 before its CAS of
     * REVOKED -> IDLE (agent.c): one of us sees the other. */
    bool removed = atomic_load_explicit(&vp->revoke, memory_order_seq_cst);
    if (!removed) {
        uint32_t s = ITO__VP_REVOKED;
        atomic_compare_exchange_strong_explicit(&vp->run_state, &s, ITO__VP_IDLE, memory_order_acquire,
                                                memory_order_relaxed);
    } else {
        ITO_STAT_INC(vp, revocations);
        ito__event(ITO_EVENT_VPROC_REMOVED, vp, 0);
    }
    /* Acquire pairs with the agent's release CAS that grants it back. */
    while (atomic_load_explicit(&vp->run_state, memory_order_acquire) == ITO__VP_REVOKED) {
        uint64_t deadline = atomic_load_explicit(&vp->timers.next, memory_order_relaxed);
        if (deadline == UINT64_MAX)
            deadline = 0;
        if (vp->ring)
            ito__ring_sleep(vp, deadline);   /* completions wake threads onto vp: given away below */
        else
            ito__futex_wait(&vp->run_state, ITO__VP_REVOKED, deadline);
        uint64_t now = ito__now_ns();
        if (atomic_load_explicit(&vp->timers.next, memory_order_relaxed) <= now)
            ito__timers_run(&vp->timers, now);
        if (give_away(vp))
            ito__idle_notify();
    }
    atomic_fetch_sub_explicit(&ito__rt.nrevoked, 1, memory_order_seq_cst);
    /* Switches do not carry masks while none is in use: back to the one it
     * had. Once one is (ito__sigmasks_used, read relaxed as in
     * ito__activation_park: a switch that sees it later writes the mask of
     * the thread it runs), every signal stays blocked here until a switch
     * to a thread writes that thread's. */
    if (!atomic_load_explicit(&ito__sigmasks_used, memory_order_relaxed))
        ito__sigmask_write(act, was);
    pin_granted(vp, true);   /* the agent moved the carrier when it revoked */
    if (removed)
        ito__event(ITO_EVENT_VPROC_ADDED, vp, 0);
}
