/* SPDX-License-Identifier: MIT */
/* The scheduler's interface to the rest of ito: making threads ready,
 * giving up the vproc, and the per-activation run loop. See sched.c. */
#ifndef ITO_RUNTIME_SCHED_H
#define ITO_RUNTIME_SCHED_H

#include <ito/policy.h>

#include "runtime/affinity.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

#include "runtime/hooks.h"
#include "runtime/runtime.h"

/* idle.c: the idle protocol */
struct ito__thread *ito__idle_find(struct ito__vproc *vp);
void ito__vproc_kick(struct ito__vproc *vp);
void ito__idle_init(void);
void ito__idle_timer_armed(uint64_t deadline);
void ito__wake_one(void);
/* A steal by `self` (or NULL) took `surplus` threads more than it runs:
 * wake up to two other sleepers. */
void ito__idle_spread(const struct ito__vproc *self, unsigned surplus);
/* The sleeper's (rare) side of an asymmetric fence: membarrier, or a full fence. */
void ito__fence_heavy(void);

/* The producer's side of the idle protocol (idle.c): a compiler barrier when
 * the sleepers use membarrier, a full fence otherwise. */
static inline void ito__fence_light(void)
{
    if (ITO_LIKELY(ito__rt.asym_fence))
        ITO_COMPILER_BARRIER();
    else
        ITO_FENCE();
}


/* Work was just made available: wake a sleeping vproc if none is looking. */
static inline void ito__idle_notify(void)
{
    ito__fence_light();
    /* <= 0: a woken vproc may stop spinning before its waker counts it (idle.c) */
    if (ITO_UNLIKELY(atomic_load_explicit(&ito__rt.nspinning, memory_order_relaxed) <= 0)) {
        if (atomic_load_explicit(&ito__rt.nsleeping, memory_order_relaxed) > 0)
            ito__wake_one();
        else if (ITO_UNLIKELY(atomic_load_explicit(&ito__rt.nrevoked, memory_order_relaxed) > 0))
            ito__hooks.backlog();
    }
}

/* A vproc that told the allocator it was idle has made ITO__PERIODIC_PICKS
 * picks, or run a thread for a whole slice, since: it is busy again
 * (idle.c). A short burst of work — a timer, one message — does not count,
 * so that it does not move processors between processes. */
void ito__vproc_busy_again(struct ito__vproc *vp);
static inline void ito__vproc_check_busy(struct ito__vproc *vp)
{
    if (ITO_UNLIKELY(atomic_load_explicit(&vp->idle_declared, memory_order_relaxed)))
        ito__vproc_busy_again(vp);
}

/* A thread to the global queue, where any vproc takes it (sched.c). */
void ito__global_push(struct ito__thread *t);
/* Wake vp if it sleeps; whether it did, or vp still has its processor
 * (it will look at its inbox) (idle.c). */
bool ito__vproc_kick_quiet(struct ito__vproc *vp);
/* The idle vp looks for work again at `at` rather than sleeping on (owner). */
void ito__vproc_retry_at(struct ito__vproc *vp, uint64_t at);
/* Wake vp if it sleeps; whether it did (idle.c). */
bool ito__vproc_wake(struct ito__vproc *vp);

void ito__ready_slow(struct ito__thread *t, ito_ready_reason_t why);
/* t (ready_reason set) to home's inbox, home woken (sched.c). */
void ito__send_home(struct ito__vproc *home, struct ito__thread *t);

/* t (READY or NEW) queued on vp, the caller's vproc (inside a critical
 * section): into vp's policy, or where its CPU set says (affinity.c). */
static inline void ito__enqueue(struct ito__vproc *vp, struct ito__thread *t, ito_ready_reason_t why)
{
    if (ITO_LIKELY(!ito__thread_cpus(t)))
        ito__rt.policy->enqueue(&vp->pv, &t->node, why);
    else
        ito__affinity_enqueue(vp, t, why);
}

/* Hand a ready thread (state NEW or READY) to a vproc: the caller's own (through
 * the policy), the thread's preferred one (through its inbox), or the global
 * queue when called from a foreign kernel thread. Never switches. */
static inline void ito__ready(struct ito__thread *t, ito_ready_reason_t why)
{
    ito__critical_enter();
    struct ito__vproc *vp = ito__vproc_self();
    if (ITO_LIKELY(vp && (t->pref_vproc < 0 || t->pref_vproc == vp->index))) {
        ito__enqueue(vp, t, why);
        if (why != ITO_READY_YIELD)
            ito__idle_notify();
    } else {
        ito__ready_slow(t, why);
    }
    ito__critical_exit();
}

/* The running thread `cur` gives up its vproc after changing its own state
 * (READY and enqueued, BLOCKED, SUSPENDED). Returns when it runs again,
 * possibly on another vproc. */
void ito__switch_out(struct ito__thread *cur);

/* Ask busy vproc vp to do its periodic work (timers, completions, the
 * global queue) at its running thread's next safe point, and the thread to
 * give way if that made any thread ready (vp->look; the time-slice signal).
 * For a timer overdue or threads waiting from outside while every vproc
 * computes. Callable from anywhere, foreign kernel threads included. */
void ito__vproc_look(struct ito__vproc *vp);
/* Send that request's signal again, if it (or a request to give way) is
 * still pending on busy vp: the first found the thread where it could not
 * be switched out (preempt.c: a register that may hold a TLS address is
 * given one tick), and what the look made ready waits for it. */
void ito__vproc_look_again(struct ito__vproc *vp);
/* The kernel thread that carries vp's running thread, if it runs it (not
 * in a bracketed call, not handing it on); 0 otherwise. */
pid_t ito__vproc_carrier_tid(struct ito__vproc *vp);
/* The vproc of [lo, hi) whose running thread is the least urgent of those
 * less urgent than `below` (ITO_PRIO_MAX + 1: any), among the vprocs
 * `eligible` accepts (NULL: all); -1 if none (runtime/policy_helpers.c). */
int ito__vproc_least_urgent(int lo, int hi, int below, bool (*eligible)(int vproc));

/* The running thread `self` (RUNNING) has used up its time slice — do the
 * periodic work and queue it (ITO_READY_PREEMPT) — or was asked to give way
 * (vp->displace: queue it as ITO_READY_DISPLACED), or its vproc was asked to
 * look (vp->look: the periodic work, then as at a slice's end if that made a
 * thread ready, else it returns at once); run another. Returns when self
 * runs again. */
void ito__preempt_switch(struct ito__thread *self);

/* From the tick's handler, asked to look (vp->look) while its thread was
 * at depth 0 but not at a point where it may be switched out (in the C
 * library: a system call, most often). Do the periodic work now — it takes
 * only ito's own locks and system calls; the threads it makes ready wait
 * for this one's next switch. */
void ito__look_unswitched(void);

/* The running thread has exited: run `next` (claimed) if not NULL, else
 * whatever vp has; never come back. */
_Noreturn void ito__switch_out_dead(struct ito__vproc *vp, struct ito__thread *next);

/* The carrier of the running thread `cur` has lost its vproc (the monitor
 * gave it to a spare while cur was in a blocking call): save cur, make it
 * ready from this activation's scheduler context, and park the activation
 * as a spare. Returns when cur runs again, on some vproc. */
void ito__switch_detach(struct ito__thread *cur);

/* Directed switch: the running thread `cur` (already BLOCKED) hands its vproc
 * to `next` (claimed, RUNNING), bypassing the policy. Returns when cur runs
 * again. */
void ito__switch_to(struct ito__thread *cur, struct ito__thread *next);

/* First thing a newly made context does: finish the switch that started it. */
void ito__after_switch_fresh(void);

/* Run loop of an activation's scheduler context. */
_Noreturn void ito__sched_loop(struct ito__activation *act);
void ito__sched_entry(ito__transfer_t tr);

/* Take the next thread from vp's local sources (inbox, policy), claimed
 * (state RUNNING), or NULL. */
struct ito__thread *ito__pick_local(struct ito__vproc *vp);
/* Move threads from the global queue to vp's policy; returns how many. */
unsigned ito__global_drain(struct ito__vproc *vp, unsigned max);
bool ito__claim_slow(struct ito__thread *t);

/* Claim a thread just taken from a policy: RUNNING, or diverted to SUSPENDED
 * (returns false) when a suspension was requested.
 *
 * With ito_suspend this is a Dekker pair: claim stores RUNNING then loads
 * susp_req; suspend stores susp_req then loads the state (after the heavy
 * fence). Either the claim sees the request and diverts the thread before it
 * runs a single instruction of its own, or the suspender sees RUNNING and
 * waits until the thread stops. */
static inline bool ito__claim(struct ito__thread *t)
{
    /* A request made well before: divert without ever showing RUNNING.
     * Acquire (both loads): a 0 written by ito_resume is a release, after
     * which ito_set_entry's new entry is visible to whoever runs t. */
    if (ITO_UNLIKELY(atomic_load_explicit(&t->susp_req, memory_order_acquire)))
        return ito__claim_slow(t);
    ito__thread_set_state(t, ito__thread_state(t), ITO__TS_RUNNING);
    ito__fence_light();
    if (ITO_UNLIKELY(atomic_load_explicit(&t->susp_req, memory_order_acquire)))
        return ito__claim_slow(t);
    return true;
}
/* Move vp's inbox into its policy. */
void ito__inbox_drain(struct ito__vproc *vp, struct ito__thread *list);


#endif
