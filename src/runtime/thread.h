/* SPDX-License-Identifier: MIT */
/*
 * The thread descriptor and its state machine.
 *
 * States (field `state`; every change goes through ito__thread_set_state,
 * which aborts with the values on an illegal transition):
 *
 *     NEW ──pick──> RUNNING ──park──> BLOCKED ──wake──> READY ──pick──> RUNNING
 *      │               │ ──yield/preempt──────────────> READY
 *      │               │ ──suspend self──> SUSPENDED ──resume──> READY
 *      │               └──exit──> EXITED
 *      └─(queued, suspend requested)──> SUSPENDED      READY ──pick, suspend requested──> SUSPENDED
 *
 * NEW and READY threads sit in a ready queue; NEW ones hold the promise of a
 * stack (or, rarely, a stack: stack.c) but no context yet.
 * Who may change the state: the thread itself while RUNNING; the vproc that
 * took it out of a ready queue (NEW/READY -> RUNNING/SUSPENDED); the single
 * waker that ended its wait (BLOCKED -> READY); ito_resume under t->lk
 * (SUSPENDED -> READY). Each of these holds the thread exclusively at that
 * moment, so the transitions are plain atomic stores, not CAS.
 *
 * Lifetime (field `ctl`, 64 bits): the handle generation in the high 32 bits
 * and the flags below in the low 32. Join, detach, exit and future release
 * race on it with CAS; a CAS carries the generation, so it fails on a
 * descriptor that was freed and reused in between. Once JOINED is set only
 * the exiting thread (setting EXITED) and the joiner touch ctl. Descriptors
 * are never returned to the system (type-stable memory), so reading a stale
 * one is safe.
 */
#ifndef ITO_RUNTIME_THREAD_H
#define ITO_RUNTIME_THREAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ito.h>
#include <ito/policy.h>

#include "base/compiler.h"
#include "runtime/spinlock.h"
#include "runtime/context.h"
#include "runtime/stack.h"
#include "runtime/timer.h"
#include "runtime/trace.h"
#include "runtime/wait.h"

/* The time-slice timer ticks this many times a slice (upcall/preempt.c). */
#define ITO__SLICE_PERIODS 4u

enum ito__tstate {
    ITO__TS_NEW = 0,
    ITO__TS_READY,
    ITO__TS_RUNNING,
    ITO__TS_BLOCKED,
    ITO__TS_SUSPENDED,
    ITO__TS_EXITED,
    ITO__TS_FREE,       /* descriptor not in use */
    ITO__TS_COUNT
};

/* ctl flags */
enum {
    ITO__CTL_DETACHED = 1u << 0,   /* frees itself at exit */
    ITO__CTL_JOINED = 1u << 1,     /* a joiner claimed it */
    ITO__CTL_EXITED = 1u << 2,     /* result is available */
    ITO__CTL_FUTURE = 1u << 3,     /* a future: many touchers, released by destroy */
    ITO__CTL_RELEASED = 1u << 4,   /* future destroyed: free at exit */
    ITO__CTL_FREE = 1u << 5,       /* descriptor free */
    ITO__CTL_JOINER_ITO = 1u << 6, /* the joiner is an ito thread: it will be in `joiner` */
    ITO__CTL_PIN_SHIFT = 8,        /* bits 8..31: touchers of a future that hold it */
};
#define ITO__CTL_PIN ((uint64_t)1 << ITO__CTL_PIN_SHIFT)
static inline uint32_t ito__ctl_pins(uint64_t ctl) { return (uint32_t)ctl >> ITO__CTL_PIN_SHIFT; }

/* thread flags (immutable while the thread lives) */
enum {
    ITO__TF_MAIN = 1u << 0,        /* the adopted initial kernel thread's context */
    ITO__TF_UNBLOCKED = 1u << 1,   /* back from a handed-off kernel call: report it (event.c) */
    ITO__TF_OWN_STACK = 1u << 2,   /* a stack of its own from its spawn (larger than the
                                      default, or its caller's), not the promise of one (stack.c) */
};

struct ito__vproc;
struct ito__keys;

struct ito__thread {
    /* --- written by the vproc that runs it --- */
    struct ito__vproc *vp;            /* vproc it runs on / last ran on (NULL: never ran) */
    int saved_errno;                  /* errno while switched out (not with ITO_OWN_TLS: its own) */
    _Atomic int susp_req;             /* ito_suspend asked it to stop */
    uint8_t flags;                    /* ITO__TF_* */
    _Atomic bool cpu_watched;         /* its CPU time is counted (cputime.c) */

    /* --- the hand-off line: its waiter record ends in it --- */
    /* A wake-up from another vproc writes the waiter's links and state, the
     * thread's state and its inbox link (and reads its preferred vproc); the
     * vproc that runs it next reads those and its saved stack pointer. All
     * of that is one cache line (checked below), so a wake-up moves one line
     * of the descriptor between the two processors: docs/architecture.md,
     * "A wake-up in cache lines". */
    struct ito__waiter wait;          /* this thread's waiter record */
    struct ito__ctx ctx;              /* saved context; NULL sp while running/not started */
    struct ito__thread *qnext;        /* link in a vproc inbox or the global queue */
    _Atomic int state;                /* enum ito__tstate */
    uint8_t ready_reason;             /* carried through inboxes and the global queue */
    bool started;                     /* has a context (ran at least once since its entry was set) */
    int16_t pref_vproc;               /* preferred vproc or -1 */

    /* --- scheduling --- */
    ito_policy_node_t node;           /* owned by the policy while queued */
    uintptr_t tp;                     /* ITO_OWN_TLS: its thread pointer, set at spawn, handed
                                         back (hooks.h: tp_done) after its last switch */
    const struct ito__cpus *_Atomic cpus; /* the CPUs it may run on, NULL: any (affinity.c) */
    int prio;
    _Atomic uint32_t periods;         /* timer periods whose ticks found it running (upcall/
                                         preempt.c): its CPU time, sampled, for the policy's charge
                                         (ITO__SLICE_PERIODS a slice) */
    struct ito__group *group;         /* its group or NULL (group.c; others read it relaxed) */

    /* --- lifetime --- */
    _Atomic uint64_t ctl;             /* gen << 32 | ITO__CTL_* */
    uint32_t index;                   /* slot in the handle table (fixed) */
    uint32_t epoch;                   /* ito__fork_epoch when it was made (runtime/fork.c) */
    void *(*fn)(void *);
    void *arg;
    void *result;
    struct ito__thread *_Atomic joiner; /* the ito thread that joins it (set after JOINED) */
    struct ito__inline_frame *inl;    /* running inline on its joiner's stack (inline.c) */
    struct ito__inline_frame *inl_wait; /* joining inline, after the joined thread was moved off */
    uint64_t fpctl;                   /* FP control the thread starts with (its creator's) */
    _Atomic uint64_t sigmask;         /* its signal mask (sigmask.c); written by itself */
    _Atomic uint64_t cpu_ns;          /* CPU time of its ended slices (cputime.c) */
    struct ito__stack stack;
    size_t stack_size;                /* requested usable size */

    /* --- waiting --- */
    ito__spinlock lk;                 /* exit_waiters, suspend/resume/set_entry, handle ops */
    struct ito__waitq exit_waiters;   /* joiners, future touchers (lk) */
    bool interruptible;               /* its next waits may be interrupted (wait.h; posix) */
    /* What its last wait was on (enum ito__wait_on) and the object's
     * address: written by the thread as it parks (wait_begin, join), read
     * relaxed by the reports that list threads (dump.c) — meaningful while
     * it is BLOCKED. */
    _Atomic uint8_t wait_on;
    const void *_Atomic wait_obj;
    struct ito__timer_spill timer_spill; /* its timer, when no heap had room (timer.c) */

    /* --- user data --- */
    void *data;                       /* ito_set_data */
    struct ito__keys *keys;           /* thread-specific values, allocated on first use */
    char name[ITO_NAME_MAX];

    /* --- bookkeeping --- */
    struct ito__thread *free_next;    /* descriptor free lists */
    void *asan_fake_stack;            /* sanitizer state of this context */
    void *tsan_fiber;
} ITO_ALIGNED_CACHELINE;

#define ITO__LINE_OF(member) (offsetof(struct ito__thread, member) / ITO_CACHELINE)
#define ITO__HANDOFF_LINE ITO__LINE_OF(ctx)
_Static_assert(ITO__LINE_OF(wait) + 1 == ITO__HANDOFF_LINE &&
                   (offsetof(struct ito__thread, wait) + sizeof(struct ito__waiter) - ITO__WAITER_WAKE_BYTES) %
                           ITO_CACHELINE == 0,
               "the waiter's wake-up fields must open the hand-off line");
_Static_assert(ITO__LINE_OF(qnext) == ITO__HANDOFF_LINE && ITO__LINE_OF(state) == ITO__HANDOFF_LINE &&
                   ITO__LINE_OF(ready_reason) == ITO__HANDOFF_LINE && ITO__LINE_OF(started) == ITO__HANDOFF_LINE &&
                   ITO__LINE_OF(pref_vproc) == ITO__HANDOFF_LINE,
               "what a wake-up writes and the next vproc reads must share one cache line");

/* Acquire pairs with the release store of ito__thread_set_cpus: the set's
 * words are seen as written before it was given. */
static inline const struct ito__cpus *ito__thread_cpus(struct ito__thread *t)
{
    return atomic_load_explicit(&t->cpus, memory_order_acquire);
}

static inline struct ito__thread *ito__thread_of_node(const ito_policy_node_t *n)
{
    return ITO_CONTAINER_OF(n, struct ito__thread, node);
}

static inline uint32_t ito__ctl_gen(uint64_t ctl) { return (uint32_t)(ctl >> 32); }
static inline uint64_t ito__thread_id(const struct ito__thread *t, uint64_t ctl)
{
    return ((uint64_t)ito__ctl_gen(ctl) << 32) | t->index;
}

/* The state gateway: change t's state from `from` to `to`, aborting with the
 * values if the current state is not `from` or the transition is illegal. */
void ito__thread_bad_transition(struct ito__thread *t, int from, int to, int actual) ITO_COLD;

ITO_INLINE void ito__thread_set_state(struct ito__thread *t, int from, int to)
{
    /* legal[from] is the set of states reachable from `from`. */
    static const uint8_t legal[ITO__TS_COUNT] = {
        [ITO__TS_NEW] = 1u << ITO__TS_RUNNING | 1u << ITO__TS_SUSPENDED,
        [ITO__TS_READY] = 1u << ITO__TS_RUNNING | 1u << ITO__TS_SUSPENDED,
        [ITO__TS_RUNNING] = 1u << ITO__TS_BLOCKED | 1u << ITO__TS_READY | 1u << ITO__TS_SUSPENDED |
                           1u << ITO__TS_EXITED,
        [ITO__TS_BLOCKED] = 1u << ITO__TS_READY | 1u << ITO__TS_RUNNING,
        [ITO__TS_SUSPENDED] = 1u << ITO__TS_READY | 1u << ITO__TS_NEW,
        [ITO__TS_EXITED] = 1u << ITO__TS_FREE,
        [ITO__TS_FREE] = 1u << ITO__TS_NEW,
    };
    int actual = atomic_load_explicit(&t->state, memory_order_relaxed);
    if (ITO_UNLIKELY(actual != from || !(legal[from] & (1u << to))))
        ito__thread_bad_transition(t, from, to, actual);
    ITO_TRACE_STATE(t, from, to);   /* spawn, park, wake, exit (runtime/trace.h) */
    /* Release: what the previous owner wrote is visible to the next one, which
     * reads the state with acquire (ito__thread_state). */
    atomic_store_explicit(&t->state, to, memory_order_release);
}

/* Record what t is about to wait on (t itself, as it parks). */
static inline void ito__thread_waits_on(struct ito__thread *t, enum ito__wait_on on, const void *obj)
{
    atomic_store_explicit(&t->wait_on, (uint8_t)on, memory_order_relaxed);
    atomic_store_explicit(&t->wait_obj, obj, memory_order_relaxed);
}

static inline int ito__thread_state(const struct ito__thread *t)
{
    return atomic_load_explicit(&((struct ito__thread *)t)->state, memory_order_acquire);
}

/* Thread-side helpers implemented in thread.c */
_Noreturn void ito__thread_exit(struct ito__thread *t, void *result);
void ito__thread_entry(ito__transfer_t tr);
/* The handle table (handle.c): chunks of descriptors, never freed. */
#define ITO__HANDLE_CHUNK_SHIFT 10
#define ITO__HANDLE_MAX_CHUNKS (1u << 16)          /* 64 Mi descriptors */
extern struct ito__thread *_Atomic ito__handle_chunks[ITO__HANDLE_MAX_CHUNKS];
extern _Atomic uint32_t ito__handle_nchunks;

/* Look up a live descriptor by handle; NULL if stale/forged. *ctl receives the
 * ctl word read (acquire). */
/* Which process a descriptor's thread runs in: bumped in the child of every
 * fork (runtime/fork.c). A descriptor whose epoch is older is a thread of
 * the parent's that the child only has a copy of: it is not found by its
 * handle and never made ready. Written only by the child's one thread,
 * before any other exists. */
extern uint32_t ito__fork_epoch;

static inline bool ito__thread_is_here(const struct ito__thread *t) { return t->epoch == ito__fork_epoch; }

static inline struct ito__thread *ito__handle_lookup(uint64_t id, uint64_t *ctl_out)
{
    uint32_t gen = (uint32_t)(id >> 32), idx = (uint32_t)id;
    uint32_t c = idx >> ITO__HANDLE_CHUNK_SHIFT;
    /* Acquire pairs with the release in handle.c's grow(). */
    if (ITO_UNLIKELY(gen == 0 || c >= atomic_load_explicit(&ito__handle_nchunks, memory_order_acquire)))
        return NULL;
    struct ito__thread *t = &atomic_load_explicit(&ito__handle_chunks[c], memory_order_acquire)
                                 [idx & ((1u << ITO__HANDLE_CHUNK_SHIFT) - 1)];
    uint64_t ctl = atomic_load_explicit(&t->ctl, memory_order_acquire);
    if (ITO_UNLIKELY(ito__ctl_gen(ctl) != gen || (ctl & ITO__CTL_FREE) || !ito__thread_is_here(t)))
        return NULL;
    *ctl_out = ctl;
    return t;
}

/* Descriptor allocation (handle.c). A free descriptor is clean: every field
 * that ito__spawn does not set holds the value a new thread starts with
 * (ito__thread_free resets what running changed). */
struct ito__thread *ito__thread_alloc(struct ito__vproc *vp);
void ito__thread_free(struct ito__vproc *vp, struct ito__thread *t);
/* Give back a descriptor that ito__thread_alloc gave and nobody saw. */
void ito__thread_unalloc(struct ito__thread *t);
/* ito__thread_free to the calling vproc's cache (or the shared pool). */
void ito__thread_free_here(struct ito__thread *t);
/* The child of fork: forget the shared free list (runtime/fork.c). */
void ito__handles_forked(void);
/* Atomically turn t's ctl into (ctl | set) + add while it still belongs to
 * the handle `id`: ESRCH if it does not (reused or freed), `err` if ctl has
 * any flag of `refuse` or lacks one of `need`. On success *ctl holds the value
 * before the change. *ctl comes in as the value read by the lookup. */
int ito__ctl_change(struct ito__thread *t, uint64_t id, uint64_t *ctl, uint64_t need, uint64_t refuse,
                    int err, uint64_t set, uint64_t add);
/* Lock t->lk and check that `id` still names t; false (unlocked) if stale. */
bool ito__thread_lock_live(struct ito__thread *t, uint64_t id);
/* Look up th (initializing ito if needed) and lock it; the caller unlocks
 * t->lk. NULL: ESRCH. */
struct ito__thread *ito__thread_lock_handle(ito_thread_t th);
/* ito_attr_t's private values (runtime/attr.c). */
#define ITO__ATTR_MAGIC 0x6974f0a7u   /* set by ito_attr_init */
#define ITO__ATTR_DETACHED 1u         /* flags_ */
/* Is every field of a as its setters leave them? (spawn's check: attr.c) */
bool ito__attr_valid(const ito_attr_t *a);

/* Create a thread (ito_spawn, ito_future_spawn); ctl_flags: ITO__CTL_FUTURE. */
/* What the posix layer adds to a spawn (NULL: nothing). */
struct ito__spawn_extra {
    uintptr_t tp;       /* ITO_OWN_TLS: the thread pointer it runs with (0: ask the posix
                           layer for one, hooks.h); the thread owns it if the spawn succeeds */
    void *stack_lo;     /* a stack the caller provides and keeps (NULL: one from the pool) */
    size_t stack_size;
    bool has_sigmask;   /* it starts with this signal mask, not its creator's */
    uint64_t sigmask;
    const struct ito__cpus *cpus;   /* the CPUs it may run on (affinity.h); NULL: any */
};

int ito__spawn(uint64_t *id_out, const ito_attr_t *attr, void *(*fn)(void *), void *arg, uint32_t ctl_flags,
               const struct ito__spawn_extra *x);
/* The work of ito_spawn, ito_exit, ito_join, ito_detach, ito_yield, ito_self
 * and ito_sleep_ns, without the init gate: api/thread.c passes it first. */
_Noreturn void ito__exit(void *result);
int ito__join(ito_thread_t th, void **result);
int ito__detach(ito_thread_t th);
void ito__yield(void);
ito_thread_t ito__self(void);
int ito__sleep_ns(uint64_t ns);
/* The calling ito thread sleeps until `deadline` (CLOCK_MONOTONIC ns; 0:
 * for ever): 0, or EINTR if ito__wait_interrupt ended it first. */
int ito__sleep_until(uint64_t deadline);
/* Wait until t has exited (t must be pinned: joined, or a touched future). MAY SWITCH. */
void ito__thread_wait_exit(struct ito__thread *t);
/* inline.c: running a joined thread that has not started on the joiner's stack */
/* t has only the promise of a stack (a stack of its own is used there), and
 * self's stack has room for t's entire stack, plus a page for our frames. */
static inline bool ito__join_inline_fits(const struct ito__thread *self, const struct ito__thread *t)
{
    if (ITO_OWN_TLS || (t->flags & ITO__TF_OWN_STACK))
        return false;   /* (with ITO_OWN_TLS it would run on its joiner's thread pointer) */
    uintptr_t sp = (uintptr_t)ito__arch_sp(), lo = (uintptr_t)self->stack.lo;
    return self->stack.lo && sp > lo && sp - lo >= t->stack_size + 4096;
}
void ito__join_inline(struct ito__thread *self, struct ito__thread *t);
_Noreturn void ito__inline_exit(struct ito__thread *t, void *result);
void ito__inline_detach(struct ito__thread *t);
/* Key destructors at exit (key.c). */
/* t's values (runtime/key.c); with ITO_OWN_TLS, t must be the caller. */
#if ITO_OWN_TLS
bool ito__keys_any(struct ito__thread *t);
#else
static inline bool ito__keys_any(struct ito__thread *t) { return t->keys != NULL; }
#endif
void ito__keys_run_destructors(struct ito__thread *t);
void ito__keys_free(struct ito__thread *t);
void ito__keys_forked(void);   /* the child of fork (runtime/fork.c) */
/* ito_setspecific and ito_getspecific once ito is initialized (api/thread.c). */
int ito__setspecific(ito_key_t k, const void *value);
void *ito__getspecific(ito_key_t k);

#endif
