/* SPDX-License-Identifier: MIT */
/*
 * ito/policy.h — scheduling policies as a table of operations.
 *
 * Every scheduling decision of ito goes through one policy: where a thread
 * that became ready waits (enqueue), which ready thread a vproc runs next
 * (pick), and which thread an idle vproc takes from another (steal). The
 * built-in policies "ws" (work stealing, the default), "fifo" (one shared
 * FIFO queue), "prio" (O(1) priorities per vproc), "prio-shared" (one
 * O(1) priority queue for all vprocs) and "affinity" (cache affinity and
 * thread groups) are written against this same table. Register a policy before
 * ito initializes, then select it by name with ITO_POLICY or ito_config_t.
 *
 * What the core guarantees to a policy
 *   - enqueue and pick run on the vproc whose state they get (vp->local), one
 *     at a time: the core routes a thread made ready on another vproc, or by a
 *     foreign kernel thread, to the right vproc first. Only steal runs
 *     concurrently with the victims' enqueue and pick, so per-vproc structures
 *     need synchronization only between steal and the owner.
 *   - A node is handed to enqueue only while its thread is ready, and a node is
 *     in at most one policy structure at a time. The core never touches the
 *     node's fields while the policy holds it.
 *   - ops run in scheduler context: they must not block, switch, call ito
 *     functions that may switch, or allocate memory on the hot path.
 *
 * Versioning: `abi` must be ITO_POLICY_ABI and `size` sizeof(ito_policy_ops_t)
 * of the header the policy was built with; a table from an older header with a
 * smaller size is accepted as long as it holds every required operation.
 */
#ifndef ITO_POLICY_H
#define ITO_POLICY_H

#include <ito.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ITO_POLICY_ABI 1
#define ITO_POLICY_NAME_MAX 32   /* bytes including NUL; [a-z0-9_-] */
#define ITO_POLICIES_MAX 16

/* The part of a thread that belongs to the policy while the thread is ready. */
typedef struct ito_policy_node {
    struct ito_policy_node *next;   /* free for the policy's lists */
    struct ito_policy_node *prev;   /* free for the policy's lists */
    uintptr_t word[2];              /* free for the policy */
} ito_policy_node_t;

/* The part of a thread group (ito_group_create) that belongs to the policy:
 * zero when the group is created; the policy synchronizes its own accesses. */
typedef struct ito_policy_group {
    uintptr_t word[4];
} ito_policy_group_t;

/* Why a thread became ready. */
typedef enum ito_ready_reason {
    ITO_READY_SPAWN = 1,    /* newly created */
    ITO_READY_WAKE = 2,     /* its wait ended (lock, condition, timer, join...) */
    ITO_READY_YIELD = 3,    /* it called ito_yield */
    ITO_READY_RESUME = 4,   /* ito_resume after a suspension */
    ITO_READY_PREEMPT = 5,  /* its time slice ended, or it gave way, while it computed, to a thread a
                               due timer or a wake-up from outside made ready */
    ITO_READY_DISPLACED = 6, /* it gave way at the policy's request (ito_policy_preempt) */
} ito_ready_reason_t;

/* A vproc as the policy sees it. */
typedef struct ito_policy_vproc {
    void *shared;                             /* from ops->init */
    void *local;                              /* set by ops->vproc_init */
    int index;                                /* this vproc, 0..count-1 */
    int count;                                /* number of vprocs */
    struct ito_policy_vproc *const *all;      /* all[i]: every vproc's view */
} ito_policy_vproc_t;

typedef struct ito_policy_ops {
    uint32_t abi;            /* ITO_POLICY_ABI */
    uint32_t size;           /* sizeof(ito_policy_ops_t) */
    const char *name;        /* unique, [a-z0-9_-], shorter than ITO_POLICY_NAME_MAX */

    /* Optional. Create the process-wide state; 0 or an errno value. */
    int (*init)(int nvprocs, void **shared);
    /* Optional. Create vp->local; 0 or an errno value. Runs before any other
     * op on this vproc. */
    int (*vproc_init)(ito_policy_vproc_t *vp);
    /* Required. Take a ready thread. */
    void (*enqueue)(ito_policy_vproc_t *vp, ito_policy_node_t *n, ito_ready_reason_t why);
    /* Required. Remove and return the thread to run next on vp, or NULL. */
    ito_policy_node_t *(*pick)(ito_policy_vproc_t *vp);
    /* Optional. n is a ready thread, perhaps queued on vp: if vp can give it
     * up cheaply (typically because it would run it next), remove it and
     * return true. Lets a thread that joins a thread not yet started run it
     * at once instead of parking and going through pick. */
    bool (*take)(ito_policy_vproc_t *vp, ito_policy_node_t *n);
    /* Optional. vp is idle: take a thread from another vproc (vp->all) and
     * return it, or NULL. May also enqueue more stolen threads on vp. */
    ito_policy_node_t *(*steal)(ito_policy_vproc_t *vp);
    /* Optional. Called on each vproc that runs threads, from its periodic
     * work (every 32nd pick, at the end of each time slice, and when asked to
     * look at an overdue timer), at most once a millisecond: a vproc that
     * runs one computing thread sees it once a slice. */
    void (*tick)(ito_policy_vproc_t *vp);
    /* Optional. The priority of n's thread changed while it was ready
     * (ito_set_priority, from a thread on vp — or from a kernel thread ito
     * did not create, with vp the first vproc's view: unlike the other ops,
     * this one must not assume it runs on vp). n may be queued anywhere, or
     * have been picked since: the policy checks that under its own
     * synchronization, and may move it (ito_policy_node_priority gives the
     * new priority). Without it, a new priority counts from the thread's
     * next enqueue. */
    void (*priority_changed)(ito_policy_vproc_t *vp, ito_policy_node_t *n);
} ito_policy_ops_t;

/*
 * Register a policy (the table must outlive the process). Returns 0; EINVAL
 * for a NULL table, a bad name, a size too small or a missing required op;
 * ENOTSUP for another ABI version; EEXIST if the name is taken (the built-in
 * "ws", "fifo", "prio", "prio-shared" and "affinity" are always taken);
 * ENOSPC beyond ITO_POLICIES_MAX, which counts the built-in policies; ENOMEM
 * if the registry cannot copy the table. May be called before or after ito_init (a
 * policy is chosen only at initialization).
 */
ITO_API int ito_policy_register(const ito_policy_ops_t *ops);

/* Facts about a node's thread, for policies. */
ITO_API int ito_policy_node_priority(const ito_policy_node_t *n);
/* Priority of the thread running on vproc `vproc` now, or -1 if it runs
 * none (idle, or in its scheduler context) or is out of range. A snapshot,
 * read without synchronization: it may be stale as soon as it is returned. */
ITO_API int ito_policy_running_priority(int vproc);
/* How many time-slice ticks found n's thread running since it was created:
 * its CPU time in slices (ITO_TIMESLICE_US), sampled — each tick of a
 * vproc's CPU-time clock counts for the thread it interrupts, whether or not
 * it was switched out then (Linux 2.6's scheduler_tick). A policy that keeps
 * the value it saw when it last queued the thread learns whether the thread
 * has used a slice since: a thread that parks just before each slice ends
 * is charged as surely as one that computes. 0 with slices off. */
ITO_API uint32_t ito_policy_node_slices(const ito_policy_node_t *n);
/* Whether n's thread used a slice since the count was last stored in *seen
 * (a word of the policy's: n->word[i], say), which it updates. */
static inline bool ito_policy_node_charged(const ito_policy_node_t *n, uintptr_t *seen)
{
    uintptr_t slices = ito_policy_node_slices(n);
    if (*seen == slices)
        return false;
    *seen = slices;
    return true;
}
/* Preferred vproc of the thread (ito_attr_set_vproc), or -1. */
ITO_API int ito_policy_node_vproc_hint(const ito_policy_node_t *n);
/* vproc the thread last ran on, or -1 if it never ran. */
ITO_API int ito_policy_node_last_vproc(const ito_policy_node_t *n);
ITO_API ito_thread_t ito_policy_node_thread(const ito_policy_node_t *n);
/* The group of n's thread, or NULL. A snapshot (ito_group_add may change it
 * meanwhile); the group stays valid while the thread belongs to it. */
ITO_API ito_policy_group_t *ito_policy_node_group(const ito_policy_node_t *n);
/* ITO_GROUP_* flags the group was created with. */
ITO_API unsigned ito_policy_group_flags(const ito_policy_group_t *g);

/* Whether vproc `vproc` has a processor now (false while the allocator has
 * taken it away, and out of range). A snapshot. */
ITO_API bool ito_policy_vproc_active(int vproc);
/* The CPU vproc `vproc` is pinned to, or -1 (unpinned, out of range). */
ITO_API int ito_policy_vproc_cpu(int vproc);
/* How near two CPUs are: the level of the smallest cache they share (1 for
 * L1, as hardware threads of one core; 2; 3...), 0 if they share none or
 * the topology is unknown. From hwloc, read once. */
ITO_API int ito_policy_cpu_shared_cache(int cpu_a, int cpu_b);

/* A policy that placed a thread in the structure of another vproc (not
 * the caller's) calls this afterwards, so that vproc looks at it: it is
 * woken if it sleeps. Returns false if the vproc has no processor (the
 * allocator took it away; it gave away what was queued on it when it did):
 * the policy must then take back what it placed there, if still there, and
 * queue it elsewhere. The placement must be visible to the vproc's pick
 * (a lock both take, or a release store its pick reads with acquire). */
ITO_API bool ito_policy_wake(int vproc);

/* Number of vprocs that are idle right now (looking for work or asleep). A
 * policy that keeps threads where others cannot steal them should share them
 * when this is not 0. Two relaxed loads. */
ITO_API unsigned ito_policy_idle_vprocs(void);

/* Call when threads became ready that other vprocs could take (pushed where
 * steal can find them): wakes a sleeping vproc if none is looking for work,
 * so that they do not wait for this vproc. */
ITO_API void ito_policy_share(void);

/* From steal: `surplus` ready threads are left to take beyond the one it
 * returns (queued on this vproc by a steal that took a batch, or still on the
 * victim). Wakes up to two sleeping vprocs (one when surplus is 1), each
 * counted as looking for work from then on: a burst of work reaches the idle
 * vprocs as a tree, each vproc woken so waking at most two more, instead of
 * one after another. */
ITO_API void ito_policy_spread(unsigned surplus);

/* Ask vproc `vproc` to give way: the thread it runs now is switched out at
 * its next safe point — sent the time-slice signal at once — and
 * enqueued with ITO_READY_DISPLACED; the vproc then picks again. Meant for a
 * policy that has just given that vproc a thread more urgent than the one it
 * runs ([SA §1.2]: a ready thread should not wait while a less urgent
 * one runs). From an op running on the vproc itself, the switch happens
 * when the current ito call is done. A vproc that is not running a thread
 * picks anyway and is left alone, as is everything without time slicing
 * (ITO_TIMESLICE_US=0) except the caller's own vproc. Out of range: ignored.
 * Callable from any op. */
ITO_API void ito_policy_preempt(int vproc);

/* From steal: there is a thread the policy may not take yet (it sits in a
 * busy vproc's structure for a grace period): look again after `ns` instead
 * of sleeping indefinitely. */
ITO_API void ito_policy_retry_after(uint64_t ns);

#ifdef __cplusplus
}
#endif

#endif /* ITO_POLICY_H */
