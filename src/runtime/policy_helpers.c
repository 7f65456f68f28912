/* SPDX-License-Identifier: MIT */
/*
 * What the runtime offers a policy (include/ito/policy.h, "Helpers"): facts
 * about threads and vprocs, and the few actions a policy may take on a vproc
 * it does not run on (wake it, ask its thread to give way). Every helper is
 * here, so that a policy's author reads one file to know what a policy may
 * rely on.
 *
 * Each takes a vproc index from the policy and checks it (ito__vproc_at):
 * a policy written by the application may pass any int. Reads of another
 * vproc's fields are relaxed snapshots: the answer may be stale by the time
 * the policy acts on it, which every caller must tolerate (a policy's
 * decisions are heuristics; correctness never depends on them).
 */
#include <ito.h>
#include <ito/policy.h>

#include "base/clock.h"
#include "base/topology.h"
#include "runtime/carrier.h"
#include "runtime/group.h"
#include "runtime/runtime.h"
#include "runtime/sched.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

/* ------------------------------------------------------------- threads */

ITO_API int ito_policy_node_priority(const ito_policy_node_t *n)
{
    return __atomic_load_n(&ito__thread_of_node(n)->prio, __ATOMIC_RELAXED);
}

ITO_API uint32_t ito_policy_node_slices(const ito_policy_node_t *n)
{
    /* (Wraps with the counter: 2^32 is a multiple of the period count.) */
    return atomic_load_explicit(&ito__thread_of_node(n)->periods, memory_order_relaxed) / ITO__SLICE_PERIODS;
}

ITO_API int ito_policy_node_vproc_hint(const ito_policy_node_t *n) { return ito__thread_of_node(n)->pref_vproc; }

ITO_API int ito_policy_node_last_vproc(const ito_policy_node_t *n)
{
    const struct ito__thread *t = ito__thread_of_node(n);
    return t->vp ? t->vp->index : -1;
}

ITO_API ito_thread_t ito_policy_node_thread(const ito_policy_node_t *n)
{
    const struct ito__thread *t = ito__thread_of_node(n);
    return (ito_thread_t){ ito__thread_id(t, atomic_load_explicit(&((struct ito__thread *)t)->ctl,
                                                                   memory_order_relaxed)) };
}

ITO_API ito_policy_group_t *ito_policy_node_group(const ito_policy_node_t *n)
{
    struct ito__group *g = ito__group_of(ito__thread_of_node(n));
    return g && g != ITO__GROUP_GONE ? &g->pg : NULL;
}

ITO_API unsigned ito_policy_group_flags(const ito_policy_group_t *pg)
{
    return ITO_CONTAINER_OF(pg, struct ito__group, pg)->flags;
}

/* -------------------------------------------------------------- vprocs */

ITO_API int ito_policy_running_priority(int vproc)
{
    struct ito__vproc *vp = ito__vproc_at(vproc);
    if (!vp)
        return -1;
    /* A snapshot: the thread may switch out meanwhile, and its descriptor
     * be reused (descriptors stay mapped: the read is harmless). */
    struct ito__thread *t = __atomic_load_n(&vp->current, __ATOMIC_ACQUIRE);   /* pairs: sched.c's release store */
    return t ? __atomic_load_n(&t->prio, __ATOMIC_RELAXED) : -1;
}

int ito__vproc_least_urgent(int lo, int hi, int below, bool (*eligible)(int vproc))
{
    int least = -1;
    for (int i = lo; i < hi; i++) {
        int p = ito_policy_running_priority(i);
        if (p >= 0 && p < below && (!eligible || eligible(i))) {
            least = i;
            below = p;
        }
    }
    return least;
}

ITO_API unsigned ito_policy_idle_vprocs(void)
{
    /* The count of spinning vprocs may be -1 for a moment (idle.c, wake_spinning). */
    int n = atomic_load_explicit(&ito__rt.nspinning, memory_order_relaxed) +
            atomic_load_explicit(&ito__rt.nsleeping, memory_order_relaxed);
    return n > 0 ? (unsigned)n : 0;
}

ITO_API bool ito_policy_vproc_active(int vproc)
{
    struct ito__vproc *vp = ito__vproc_at(vproc);
    return vp && atomic_load_explicit(&vp->run_state, memory_order_relaxed) != ITO__VP_REVOKED;
}

ITO_API int ito_policy_vproc_cpu(int vproc)
{
    struct ito__vproc *vp = ito__vproc_at(vproc);
    if (!vp || !ito__rt.pin)
        return -1;
    return atomic_load_explicit(&vp->grant_cpu, memory_order_relaxed);
}

ITO_API int ito_policy_cpu_shared_cache(int cpu_a, int cpu_b) { return ito__topo_shared_cache(cpu_a, cpu_b); }

/* ------------------------------------------------------------- actions */

ITO_API void ito_policy_share(void) { ito__idle_notify(); }

ITO_API bool ito_policy_wake(int vproc)
{
    struct ito__vproc *vp = ito__vproc_at(vproc);
    return vp && ito__vproc_kick_quiet(vp);
}

ITO_API void ito_policy_retry_after(uint64_t ns)
{
    ito__critical_enter();
    struct ito__vproc *vp = ito__vproc_self();
    if (vp)
        ito__vproc_retry_at(vp, ito__now_ns() + ns);
    ito__critical_exit();
}

ITO_API void ito_policy_spread(unsigned surplus)
{
    ito__critical_enter();
    ito__idle_spread(ito__vproc_self(), surplus);
    ito__critical_exit();
}

ITO_API void ito_policy_preempt(int index)
{
    struct ito__vproc *vp = ito__vproc_at(index);
    if (!vp)
        return;
    ito__critical_enter();
    struct ito__activation *a = ito__activation_self();
    if (a && a->vp == vp) {
        /* Our own vproc, from an op: the thread running here gives way when
         * its call into ito is done (critical.c recovers it). None: this is
         * the scheduler context, which picks next anyway. */
        if (ito__thread_self()) {
            atomic_store_explicit(&vp->displace, true, memory_order_relaxed);
            a->slice_pending = true;
            ito__arch_critical_or(ITO__CRITICAL_ATTENTION);
        }
    } else if (atomic_load_explicit(&vp->run_state, memory_order_relaxed) == ITO__VP_BUSY) {
        /* Release pairs with the tick handler's acquire load (upcall/preempt.c).
         * Only the first request signals; the owner clears the flag when it
         * picks. */
        pid_t tid = ito__vproc_carrier_tid(vp);
        if (tid && !atomic_exchange_explicit(&vp->displace, true, memory_order_release))
            ito__carrier_poke(tid);
    }
    ito__critical_exit();
}

pid_t ito__vproc_carrier_tid(struct ito__vproc *vp)
{
    /* Acquire pairs with the carrier's release store when it took vp
     * (activation.c): the carrier's fields. */
    uintptr_t ks = atomic_load_explicit(&vp->kstate, memory_order_acquire);
    struct ito__activation *c = ito__ks_carrier(ks);
    return (ks & ITO__KS_MASK) == ITO__KS_RUN && c ? ito__activation_tid(c) : 0;
}

void ito__vproc_look_again(struct ito__vproc *vp)
{
    if (atomic_load_explicit(&vp->run_state, memory_order_relaxed) != ITO__VP_BUSY)
        return;
    pid_t tid = ito__vproc_carrier_tid(vp);
    if (tid && (atomic_load_explicit(&vp->look, memory_order_relaxed) ||
                atomic_load_explicit(&vp->displace, memory_order_relaxed)))
        ito__carrier_poke(tid);
}

void ito__vproc_look(struct ito__vproc *vp)
{
    if (atomic_load_explicit(&vp->run_state, memory_order_relaxed) != ITO__VP_BUSY)
        return;   /* idle: it runs its timers and the global queue anyway */
    /* Only the first request signals; the owner clears the flag when it
     * does its periodic work (sched.c). A vproc whose carrier is in a
     * bracketed call is the monitor's to hand off when work waits for it. */
    pid_t tid = ito__vproc_carrier_tid(vp);
    if (tid && !atomic_exchange_explicit(&vp->look, true, memory_order_relaxed))
        ito__carrier_poke(tid);
}
