/* SPDX-License-Identifier: MIT */
/*
 * A thread's CPU set: hard affinity for ito threads.
 *
 * Problem. A program may restrict a thread to some CPUs
 * (pthread_setaffinity_np, sched_setaffinity on itself). On ito the kernel
 * sees only the carriers, each pinned to its vproc's CPU, so the restriction
 * is the scheduler's to keep: the thread must run only on vprocs pinned to
 * CPUs of its set, whatever the policy, stealing and the allocator do.
 *
 * Approach. A thread with a set (t->cpus) never enters a policy's
 * structures while a vproc on one of its CPUs has a processor. Where it
 * becomes ready decides (ito__affinity_place): on such a vproc it joins that
 * vproc's queue of held threads (like the Linux run queue a pinned task
 * sits on); elsewhere it goes to the inbox of one (the vproc it last ran on
 * if it may, else the first from an offset that spreads threads sharing a
 * set), which drains it into that queue. A vproc's pick alternates between
 * its held threads and its policy's choice while both have some
 * (ito__pick_local), so neither starves the other; a policy's priorities
 * order its own threads only. An idle vproc takes a held thread from
 * another vproc's queue only if its own CPU is in that thread's set
 * (ito__affinity_steal), so a set of several CPUs keeps all of them busy;
 * the monitor counts held threads as work waiting for a vproc whose
 * carrier is blocked. A thread picked or stolen where it may not run (its
 * set changed while it was queued, or the vproc was moved to another CPU by
 * the allocator) is sent on before it runs.
 *
 * When no vproc on the set's CPUs has a processor (the allocator took them,
 * or ITO_VPROCS made none there), the set is broken: the thread runs where
 * it is, through the policy, until one has — as Linux runs a task whose
 * every allowed CPU went offline elsewhere. A set that names every CPU a
 * vproc is on is no restriction: the POSIX face stores none (posix/affinity.c).
 *
 * Without pinning (ITO_PIN=0) a vproc's carrier may run on any CPU: no set
 * can be honoured, and the POSIX face says so.
 *
 * Cost: one load of t->cpus (NULL) where a thread is made ready and picked,
 * and of the vproc's held_len at each pick.
 */
#include "runtime/affinity.h"

#include <ito/policy.h>

#include "base/panic.h"

#include "runtime/runtime.h"
#include "runtime/sched.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

bool ito__cpus_has(const struct ito__cpus *s, int cpu)
{
    return cpu >= 0 && cpu < ITO__CPUS_MAX &&
           (atomic_load_explicit(&s->w[cpu / 64], memory_order_relaxed) >> (cpu % 64)) & 1;
}

/* The CPU vproc vp is pinned to, or -1. The allocator's agent writes
 * grant_cpu; the owner repins to it at its next switch (a stale read sends a
 * thread to a vproc about to move: it is then sent on from there). */
static int vproc_cpu(const struct ito__vproc *vp)
{
    return ito__rt.pin ? atomic_load_explicit(&vp->grant_cpu, memory_order_relaxed) : -1;
}

static bool has_processor(const struct ito__vproc *vp)
{
    return atomic_load_explicit(&vp->run_state, memory_order_relaxed) != ITO__VP_REVOKED;
}

static bool may_run_on(const struct ito__cpus *cpus, const struct ito__vproc *vp)
{
    return has_processor(vp) && ito__cpus_has(cpus, vproc_cpu(vp));
}

bool ito__affinity_supported(void) { return ito__rt.pin; }

void ito__thread_set_cpus(struct ito__thread *t, const struct ito__cpus *cpus)
{
    /* Release: the set's words, written before, are seen by a vproc that
     * loads the pointer with acquire (ito__thread_cpus). */
    atomic_store_explicit(&t->cpus, cpus, memory_order_release);
}

void ito__affinity_kick(struct ito__thread *t)
{
    const struct ito__cpus *cpus = ito__thread_cpus(t);
    if (!cpus || t == ito__thread_self())
        return;   /* (the caller moves itself: ito__affinity_move_self) */
    /* Running where the set does not allow: it gives way now, not at the
     * end of its slice (and is queued where it may run). */
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        struct ito__vproc *vp = ito__rt.vprocs[i];
        if (__atomic_load_n(&vp->current, __ATOMIC_RELAXED) == t && !may_run_on(cpus, vp))
            ito_policy_preempt(i);
    }
}

struct ito__vproc *ito__affinity_place(struct ito__vproc *vp, struct ito__thread *t)
{
    const struct ito__cpus *cpus = ito__thread_cpus(t);
    if (!cpus || may_run_on(cpus, vp))
        return vp;
    if (t->vp && may_run_on(cpus, t->vp))
        return t->vp;
    int n = ito__rt.nvprocs;
    for (int k = 0; k < n; k++) {
        struct ito__vproc *other = ito__rt.vprocs[(t->index + (unsigned)k) % (unsigned)n];
        if (may_run_on(cpus, other))
            return other;
    }
    return vp;   /* broken: no vproc on its CPUs has a processor */
}

static void held_push(struct ito__vproc *vp, struct ito__thread *t)
{
    t->qnext = NULL;
    ito__spin_lock(&vp->held_lk);
    if (vp->held_tail)
        vp->held_tail->qnext = t;
    else
        vp->held_head = t;
    vp->held_tail = t;
    atomic_store_explicit(&vp->held_len, atomic_load_explicit(&vp->held_len, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    ito__spin_unlock(&vp->held_lk);
}

/* Unlink t (after prev, or the head) from vp's held queue (held_lk). */
static void held_unlink(struct ito__vproc *vp, struct ito__thread *prev, struct ito__thread *t)
{
    if (prev)
        prev->qnext = t->qnext;
    else
        vp->held_head = t->qnext;
    if (vp->held_tail == t)
        vp->held_tail = prev;
    t->qnext = NULL;
    atomic_store_explicit(&vp->held_len, atomic_load_explicit(&vp->held_len, memory_order_relaxed) - 1,
                          memory_order_relaxed);
}

/* A thread held to `cpus` was queued on vp: wake a sleeping vproc on
 * another of those CPUs, which may take it (a spinning one looks by
 * itself). The producer's side of the idle protocol: the sleeper announces
 * itself, then looks again (find_work, which steals held threads). */
static void wake_for(struct ito__vproc *vp, const struct ito__cpus *cpus)
{
    ito__fence_light();
    if (atomic_load_explicit(&ito__rt.nsleeping, memory_order_relaxed) == 0)
        return;
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        struct ito__vproc *other = ito__rt.vprocs[i];
        if (other != vp && may_run_on(cpus, other) && ito__vproc_wake(other))
            return;
    }
}

void ito__affinity_enqueue(struct ito__vproc *vp, struct ito__thread *t, ito_ready_reason_t why)
{
    const struct ito__cpus *cpus = ito__thread_cpus(t);
    struct ito__vproc *to = ito__affinity_place(vp, t);
    if (to != vp) {
        t->ready_reason = (uint8_t)why;
        ito__send_home(to, t);
    } else if (!cpus) {
        ito__rt.policy->enqueue(&vp->pv, &t->node, why);   /* (its set was taken away meanwhile) */
    } else if (may_run_on(cpus, vp)) {
        held_push(vp, t);
        wake_for(vp, cpus);
    } else {
        ITO_WARN_ONCE("a thread held to some CPUs runs on others: no vproc on those CPUs has a "
                      "processor now (ITO_VPROCS put none there, or the processor allocator took "
                      "them); it goes back when one has");
        ito__rt.policy->enqueue(&vp->pv, &t->node, why);   /* broken: anywhere */
    }
}

bool ito__affinity_sent_on(struct ito__vproc *vp, struct ito__thread *t)
{
    if (ito__affinity_place(vp, t) == vp)
        return false;
    ito__affinity_enqueue(vp, t, ito__thread_state(t) == ITO__TS_NEW ? ITO_READY_SPAWN : ITO_READY_WAKE);
    return true;
}

struct ito__thread *ito__affinity_pop(struct ito__vproc *vp)
{
    if (!atomic_load_explicit(&vp->held_len, memory_order_relaxed))
        return NULL;
    ito__spin_lock(&vp->held_lk);
    struct ito__thread *t = vp->held_head;
    if (t)
        held_unlink(vp, NULL, t);
    ito__spin_unlock(&vp->held_lk);
    return t;
}

struct ito__thread *ito__affinity_steal(struct ito__vproc *vp)
{
    int n = ito__rt.nvprocs;
    for (int k = 1; k < n; k++) {
        struct ito__vproc *victim = ito__rt.vprocs[(vp->index + k) % n];
        if (!atomic_load_explicit(&victim->held_len, memory_order_relaxed))
            continue;
        ito__spin_lock(&victim->held_lk);
        struct ito__thread *prev = NULL;
        for (struct ito__thread *t = victim->held_head; t; prev = t, t = t->qnext) {
            const struct ito__cpus *cpus = ito__thread_cpus(t);
            if (!cpus || may_run_on(cpus, vp)) {
                held_unlink(victim, prev, t);
                ito__spin_unlock(&victim->held_lk);
                return t;
            }
        }
        ito__spin_unlock(&victim->held_lk);
    }
    return NULL;
}

void ito__affinity_move_self(void)
{
    struct ito__thread *self = ito__thread_self();
    if (!self || !ito__thread_cpus(self))
        return;
    ito__critical_enter();
    bool here = ito__affinity_place(ito__vproc_self(), self) == ito__vproc_self();
    ito__critical_exit();
    if (!here)
        ito__yield();   /* enqueued through ito__ready: it lands on its place */
}
