/* SPDX-License-Identifier: MIT */
/*
 * Virtual processors and the activations that carry them.
 *
 * A vproc is a processor this process holds: its own ready structures (the
 * policy's per-vproc state), its pools (descriptors, stacks), its timers and
 * an inbox through which other vprocs hand it threads. An activation is a
 * kernel thread; it carries one vproc at a time and owns a scheduler context
 * (its idle loop). A vproc's activation changes when its carrier blocks in
 * the kernel and the monitor hands the vproc to a spare activation
 * (upcall/monitor.c); the carrier then finds, when its call returns, that it
 * has lost the vproc, readies its thread and becomes a spare itself.
 *
 * Fields are grouped by who writes them: the owner (the activation carrying
 * the vproc) writes the first group without atomics; other vprocs and foreign
 * kernel threads write the second group, which sits on its own cache lines.
 */
#ifndef ITO_RUNTIME_VPROC_H
#define ITO_RUNTIME_VPROC_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <time.h>

#include <ito/policy.h>

#include "base/compiler.h"
#include "runtime/critical.h"
#include "base/panic.h"
#include "runtime/spinlock.h"
#include "runtime/context.h"
#include "runtime/stack.h"
#include "runtime/timer.h"

struct ito__thread;
struct ito__ring;

/* Per-vproc counters (owner-written, read relaxed by ito_stats_get). */
struct ito__vproc_stats {
    uint64_t spawns;
    uint64_t exits;
    uint64_t switches;
    uint64_t decisions;
    uint64_t steals;
    uint64_t idle_sleeps;
    uint64_t wakeups;
    uint64_t preemptions;
    uint64_t recoveries;
    uint64_t handoffs;
    uint64_t stalls;
    uint64_t revocations;
    uint64_t displacements;
    uint64_t decision_cycles;
};

struct ito__activation {
    struct ito__vproc *vp;          /* the vproc it carries */
    struct ito__ctx sched;          /* its scheduler context (the idle loop) */
    struct ito__thread *pending;    /* for the scheduler context to run next (sched.c) */
    struct ito__stack sched_stack;  /* bounds of that context's stack */
    int *errno_ptr;                 /* this kernel thread's errno */
    uintptr_t tp;                   /* ITO_OWN_TLS: the thread pointer of its scheduler context */
    pid_t tid;                      /* written once by the activation itself at its start;
                                       others read it through ito__activation_tid */
    pthread_t pthread;
    struct ito__activation *all_next; /* every activation of the process (ito__rt.all_acts) */
    bool listed;                    /* on that list */
    bool adopted;                   /* the initializing kernel thread */
    void *altstack;                 /* signal stack (stack overflow reports) */
    size_t altstack_size;
    void *sched_fake_stack;         /* ASan state of the scheduler context */
    void *sched_tsan_fiber;         /* TSan fiber of the scheduler context */
    void *mapping;                  /* standalone stack of the scheduler context, if any */
    size_t mapping_size;
    /* Blocking calls and hand-offs (runtime/carrier.c, upcall/monitor.c). */
    unsigned blocking;              /* depth of ito_blocking_begin on this kernel thread */
    /* The thread inside the outermost bracket. Written by this activation;
     * the monitor reads it (relaxed) for the BLOCKED event, racing with a
     * call that ends meanwhile — it then discards what it read. */
    _Atomic(struct ito__thread *) blocked;
    struct ito__thread *requeue;    /* lost its vproc: the scheduler context readies it */
    _Atomic uint32_t park;          /* a spare sleeps on it; 1: it was given a vproc */
    struct ito__activation *spare_next; /* spare list (ito__rt.spare_lock) */
    /* Events (runtime/event.c). */
    bool in_hook;                   /* the application's hook runs here: no switching */
    uint64_t handoff_thread;        /* id of the thread whose blocked call gave us our vproc */
    /* Time slices (upcall/preempt.c); the activation's own. */
    timer_t slice_timer;
    uint64_t slice_ticks;           /* vp->ticks at the last tick */
    uint32_t slice_periods;         /* timer periods the running thread has surely run */
    bool slice_from_tick;           /* the running thread was picked at a tick: its slice_periods are whole */
    bool slice_deferred;            /* this slice's end was deferred for a TLS address */
    bool slice_pending;             /* a slice ended inside a section: yield at its end */
    /* Un-annotated blocking (runtime/carrier.c): what the monitor needs to see
     * this kernel thread from outside. Set once by the activation itself. */
    uint32_t *critical_word;        /* its ito__tls_critical; with ITO_OWN_TLS, the running
                                       context's copy: rewritten at every switch (sched.c) */
    clockid_t cpu_clock;            /* its CPU-time clock */
    /* That clock when the watched thread now running here started its slice
     * (cputime.c), and that thread (NULL: none watched). */
    _Atomic uint64_t cpu_mark;
    struct ito__thread *_Atomic cpu_mark_for;
    bool stall_handoff;             /* the vproc it was given came from a stall */
    uint64_t kmask;                 /* this kernel thread's signal mask (runtime/sigmask.c) */
    _Atomic uint32_t interrupts;    /* ito's own signals handled here (runtime/sigmask.h) */
};

/* What the next context to run on this vproc must finish for the previous
 * one (it cannot be done before the switch: the previous one is still on its
 * stack). */
struct ito__handover {
    struct ito__stack dead_stack;   /* stack of a thread that exited */
    void *dead_tsan_fiber;
    struct ito__thread *dead;       /* detached descriptor to free after the switch */
    uintptr_t dead_tp;              /* ITO_OWN_TLS: the exited thread's thread pointer */
};

struct ito__vproc {
    /* --- owner only --- */
    struct ito__thread *current;            /* running thread (NULL: scheduler context); others
                                               read it relaxed (ito_policy_running_priority) */
    struct ito__activation *act;
    int index;
    int cpu;                                /* pinned CPU or -1 */
    ito_policy_vproc_t pv;                  /* the policy's view of this vproc */
    bool held_turn;                         /* the next pick is a held thread's (affinity.c) */
    uint64_t last_tick_ns;                  /* last policy tick */
    uint64_t retry_at;                      /* idle.c: look again then rather than sleep on (0: no) */
    bool idle_remote;                       /* idle.c: the last idle period ended with work from
                                               another vproc or the global queue */
    uint64_t remote_looked_ns;              /* idle.c: when it last looked beyond its own sources */
    struct ito__handover handover;
    struct ito__thread *free_threads;       /* descriptor cache */
    unsigned nfree_threads;
    struct ito__stack_cache *stacks;        /* stack cache (stack.c) */
    struct ito__ring *ring;                 /* io_uring ring or NULL (runtime/ring.c; set at init) */
    uint64_t *seen_ticks;                   /* idle.c: what this vproc saw of others */
    uint64_t *seen_since;
    uint32_t rng;                           /* victim selection */
    _Atomic bool idle_declared;             /* idle.c: told the allocator it is idle (the agent reads it) */
    /* Threads waiting for this vproc while others have no processor
     * (cpushare/agent.c, ito__agent_backlog): since when (0: none seen), and for how long in
     * all within the window that began at backlog_window. */
    uint64_t backlog_since;
    uint64_t backlog_ns;
    uint64_t backlog_window;
    struct ito__vproc_stats stats;

    /* --- written by others --- */
    _Atomic uint64_t ticks ITO_ALIGNED_CACHELINE;  /* owner: +1 per pick; others read */
    /* The mailbox line: a thread sent here from another vproc is pushed on
     * the inbox, and the sender reads the state to know whether to wake the
     * vproc; the vproc takes the inbox and writes its state. One line, so
     * that the hand-off moves one line of the vproc (docs/architecture.md,
     * "A wake-up in cache lines"). */
    _Atomic(struct ito__thread *) inbox ITO_ALIGNED_CACHELINE; /* MPSC stack of ready threads */
    _Atomic uint32_t run_state;             /* ITO__VP_*; the futex word of a sleeper */
    _Atomic uint64_t sleep_deadline;        /* when a sleeping vproc wakes by itself (0: never) */
    struct ito__timer_heap timers ITO_ALIGNED_CACHELINE;
    /* The carrier: its activation's address | ITO__KS_*; the protocol,
     * with its transition table, is runtime/carrier.c. */
    _Atomic uintptr_t kstate ITO_ALIGNED_CACHELINE;
    _Atomic uint64_t kcalls;                /* blocking calls begun here (carrier; monitor reads) */
    /* The cross-process allocator (src/cpushare/agent.c) takes the vproc's
     * processor away (revoke: 1) and gives it back (0, and a CPU to pin
     * to); the owner acts at its next switch (cpushare/revoke.c). Read at
     * every switch, written at reallocations only: a line of their own. */
    _Atomic uint32_t revoke ITO_ALIGNED_CACHELINE;
    _Atomic int grant_cpu;                  /* the CPU to pin to (-1: unpinned) */
    /* Threads held to this vproc by their CPU set (affinity.c), oldest
     * first, linked by qnext: the owner queues and takes them, an idle vproc
     * on another CPU of a thread's set may take that thread; held_len is
     * read without the lock (the owner's pick, the monitor). */
    ito__spinlock held_lk ITO_ALIGNED_CACHELINE;
    struct ito__thread *held_head, *held_tail;
    _Atomic uint32_t held_len;
    /* A policy asked the running thread to give way (ito_policy_preempt):
     * set by anyone, cleared by the owner when it picks or switches the
     * thread out (upcall/preempt.c). */
    _Atomic bool displace ITO_ALIGNED_CACHELINE;
    /* Someone outside asked the owner to do its periodic work now — a timer
     * of its is overdue, or threads wait in the global queue, while its
     * thread computes (ito__vproc_look): set by anyone, cleared by the owner
     * when it does that work. A hint: the work itself is found under the
     * heap's and the queue's locks. */
    _Atomic bool look;
} ITO_ALIGNED_CACHELINE;


/* The kernel thread id of activation a, or 0 while it is still starting: a
 * vproc names its new carrier (kstate) before that thread has run. Acquire
 * pairs with the release store in ito__activation_setup_self. */
static inline pid_t ito__activation_tid(const struct ito__activation *a)
{
    return __atomic_load_n(&a->tid, __ATOMIC_ACQUIRE);
}


/* What a vproc is doing: running threads; idle in its scheduler context
 * (looking for work); asleep in the kernel; without a processor (the
 * allocator revoked it: cpushare/revoke.c); woken by a waker that counted
 * it among the spinning vprocs (idle.c: like IDLE to everyone else). Written
 * by the owner, except SLEEPING -> IDLE or WOKEN by whoever wakes it and
 * REVOKED -> IDLE by the allocator's agent that grants the processor back. */
enum { ITO__VP_IDLE = 0, ITO__VP_SLEEPING = 1, ITO__VP_BUSY = 2, ITO__VP_REVOKED = 3, ITO__VP_WOKEN = 4 };

/* The activation running the caller, NULL for a foreign kernel thread.
 * An ito thread may be preempted and resume on another activation at any
 * instruction outside a critical section (runtime/critical.h), so the result —
 * and its vproc — may only be used inside one (checked in ITO_DEBUG builds). */
static inline struct ito__activation *ito__activation_self(void)
{
    struct ito__activation *a = ito__arch_activation();
    ITO_ASSERT(!a || ito__critical_depth() > 0);
    return a;
}

/* Whether the caller runs on one of ito's activations (a stable answer). */
static inline bool ito__on_activation(void) { return ito__arch_activation() != NULL; }

static inline struct ito__vproc *ito__vproc_self(void)
{
    struct ito__activation *a = ito__activation_self();
    return a ? a->vp : NULL;
}

/* The errno that the code running on activation `a` sees now: the kernel
 * thread's (its value is saved and restored at every switch), or with
 * ITO_OWN_TLS the running thread's own. */
static inline int *ito__errno_ptr(struct ito__activation *a)
{
    return ITO_OWN_TLS ? &errno : a->errno_ptr;
}

/* Set errno of the kernel thread running the caller now. An ito thread may
 * have moved to another kernel thread since it last read errno, and the C
 * library lets the compiler keep errno's address across calls (it declares
 * __errno_location const): library code that puts a caller's errno back
 * after anything that may switch uses this. */
void ito__errno_set(int e);

/* The running ito thread, NULL for a foreign kernel thread (or in a
 * scheduler context). One thread-local load: valid wherever it is called. */
static inline struct ito__thread *ito__thread_self(void) { return ito__arch_current(); }

/* Make t the running thread of vp, on the calling activation. */
static inline void ito__vproc_set_current(struct ito__vproc *vp, struct ito__thread *t)
{
    __atomic_store_n(&vp->current, t, __ATOMIC_RELAXED);   /* others read it: ito_policy_running_priority */
    ito__arch_set_current(t);
}

/* Is vp's processor being taken away (cpushare/revoke.c)? One load, at
 * every switch. Acquire pairs with the agent's release store of revoke. */
static inline bool ito__vproc_revoked(const struct ito__vproc *vp)
{
    return ITO_UNLIKELY(atomic_load_explicit(&vp->revoke, memory_order_acquire) != 0);
}

/* vproc.c: CPU discovery and pinning */
int ito__cpus_usable(int *cpus, int max);
void ito__pin_self(int cpu);
void ito__pin_thread(pid_t tid, int cpu);   /* another kernel thread of this process */
/* The CPUs the process may use, as they were before ito pinned anything;
 * false if unknown. */
bool ito__cpus_of_process(cpu_set_t *set);
/* Give the calling kernel thread the affinity the process had before ito
 * pinned anything (a child's after fork: runtime/fork.c). */
void ito__cpus_restore_self(void);
int ito__vprocs_create(int n, bool pin);
/* The same on the CPUs of the vprocs old[0..n) (the child of fork). */
int ito__vprocs_recreate(struct ito__vproc *const *old, int n);

/* activation.c */
int ito__activation_adopt(struct ito__vproc *vp);
/* Whether tid is one of ito's kernel threads (an activation: a carrier or a
 * spare), not a kernel thread of the program's or the C library's. */
bool ito__activation_tid_known(pid_t tid);
/* The child of fork: the calling kernel thread, whose activation was old,
 * gets a new one carrying vp, and t (running) is vp's current thread
 * (runtime/fork.c). Not pinned. */
int ito__activation_adopt_forked(struct ito__vproc *vp, struct ito__thread *t, const struct ito__activation *old);
int ito__activation_start(struct ito__vproc *vp);
/* Start a spare activation (no vproc); it parks until given one. */
int ito__activation_start_spare(void);
/* The calling activation has no vproc: offer it as a spare and sleep until
 * the monitor gives it one (upcall/monitor.c). */
void ito__activation_park(struct ito__activation *a);
/* The spare list (ito__rt.spare_lock): a parked spare, or NULL; put one back. */
struct ito__activation *ito__spare_take(void);
void ito__spare_put(struct ito__activation *a);
void ito__activation_setup_self(struct ito__activation *a, bool pin);
/* The calling kernel thread is no activation any more (runtime/fork.c). */
void ito__activation_forget_self(void);

#endif
