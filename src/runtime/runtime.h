/* SPDX-License-Identifier: MIT */
/* The process-wide runtime state (the init gate is api/init.h). */
#ifndef ITO_RUNTIME_RUNTIME_H
#define ITO_RUNTIME_RUNTIME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <ito/policy.h>

#include "base/compiler.h"
#include "runtime/spinlock.h"
#include "runtime/vproc.h"

/* FORKED: the child of a fork, its runtime rebuilt in memory but its kernel
 * threads not started; the init gate resumes it (runtime/fork.c). */
enum { ITO__RT_UNINIT = 0, ITO__RT_READY = 2, ITO__RT_FAILED = 3, ITO__RT_FORKED = 4 };

/* The most vprocs a process may have (ITO_VPROCS, ito_config_t.vprocs). */
#define ITO__VPROCS_MAX 1024

struct ito__runtime {
    _Atomic int state;                    /* ITO__RT_* */
    int init_error;                       /* errno of a failed initialization */
    int nvprocs;
    struct ito__vproc **vprocs;
    ito_policy_vproc_t **pviews;          /* pviews[i] == &vprocs[i]->pv */
    const ito_policy_ops_t *policy;
    size_t stack_size;                    /* default usable stack size */
    uint64_t idle_spin_ns;
    bool pin;
    bool asym_fence;                      /* membarrier available (idle.c) */
    bool oversubscribed;                  /* more vprocs than CPUs: idle vprocs yield the CPU */
    bool stats_cycles;                    /* ITO_STATS_CYCLES: time the policy's picks */
    size_t page;

    /* Idle protocol (idle.c); on their own lines: written on idle transitions. */
    _Atomic int nspinning ITO_ALIGNED_CACHELINE;   /* vprocs looking for work */
    _Atomic int nsleeping ITO_ALIGNED_CACHELINE;   /* vprocs asleep */
    _Atomic int nrevoked;                 /* vprocs without a processor (cpushare/revoke.c) */

    /* Threads made ready by foreign kernel threads (sched.c). */
    ito__spinlock gq_lock ITO_ALIGNED_CACHELINE;
    struct ito__thread *gq_head, *gq_tail;          /* gq_lock; linked by node.next */
    _Atomic size_t gq_len;

    /* Activations beyond the vprocs' carriers (upcall/monitor.c). */
    bool activations;                     /* ITO_ACTIVATIONS: blocking calls hand vprocs on */
    int max_activations;                  /* ITO_MAX_ACTIVATIONS */
    _Atomic int nactivations;             /* all activations, carriers included */
    struct ito__activation *_Atomic all_acts; /* every one that started (activation.c) */
    ito__spinlock spare_lock ITO_ALIGNED_CACHELINE;
    struct ito__activation *spares;       /* spare_lock: parked, without a vproc */
    int nspares;                          /* spare_lock */
    _Atomic uint32_t monitor_asleep ITO_ALIGNED_CACHELINE; /* futex word of the monitor */
    _Atomic uint64_t monitor_until;     /* the monitor sleeps until then (0: awake; monitor.c) */

    /* The cross-process allocator (src/cpushare/agent.c). */
    bool allocator;                       /* this process takes part (ITO_ALLOCATOR) */

    /* Preemption (upcall/preempt.c); set before the activations start. */
    uint64_t timeslice_ns;                /* ITO_TIMESLICE_US; 0: off */
    int preempt_signal;                   /* ITO_PREEMPT_SIGNAL */

    /* Threads created or exited outside any vproc (foreign spawns). */
    _Atomic int64_t foreign_spawns ITO_ALIGNED_CACHELINE;
    _Atomic bool main_exited;             /* main called ito_exit */
};

extern struct ito__runtime ito__rt;

/* Whether initialization has completed. Acquire pairs with the release
 * store of ITO__RT_READY at its end (api/init.c): what it set up is visible.
 * The runtime never initializes itself: the public calls that may come
 * first pass api/init.h's gate, which does. */
static inline bool ito__initialized(void)
{
    return atomic_load_explicit(&ito__rt.state, memory_order_acquire) == ITO__RT_READY;
}

/* Whether the runtime's structures exist: initialized, or the child of a
 * fork not yet resumed. Acquire, as above. */
static inline bool ito__runtime_built(void)
{
    int s = atomic_load_explicit(&ito__rt.state, memory_order_acquire);
    return s == ITO__RT_READY || s == ITO__RT_FORKED;
}

/* vproc number i, or NULL if there is none (or ito is not initialized): the
 * check of every vproc index that comes from outside the runtime. */
static inline struct ito__vproc *ito__vproc_at(int i)
{
    if (i < 0 || !ito__runtime_built() || i >= ito__rt.nvprocs)
        return NULL;
    return ito__rt.vprocs[i];
}

/* Install the stack-overflow reporter (overflow.c). */
void ito__overflow_install(void);

#endif
