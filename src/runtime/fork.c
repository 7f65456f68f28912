/* SPDX-License-Identifier: MIT */
/*
 * The child of fork(): a working ito process whose one thread is the one
 * that forked.
 *
 * Problem. fork() copies the whole address space and one kernel thread, the
 * caller's: in an ito process, a carrier running an ito thread (or a kernel
 * thread ito did not create). The child gets a copy of every runtime
 * structure — ready queues holding threads that do not exist in it, locks
 * held by kernel threads that do not exist in it, io_uring rings whose memory
 * it shares with the parent — and none of the other kernel threads: carriers,
 * spares, the monitor, the allocator's agent. POSIX gives the child one
 * thread, the caller, and glibc makes it a working single-threaded process;
 * ito must do the same, or the child's first spawn waits for ever.
 *
 * Approach. The child trusts nothing that another kernel thread may have
 * been changing when the fork happened, and builds anew what it needs:
 *  - At once, in a pthread_atfork child handler (before fork returns, and
 *    before the handlers of the program and of other libraries): new locks
 *    and empty shared lists (descriptors, stacks, the global queue, spares);
 *    new vprocs with new policy state; for this kernel thread, a new
 *    activation carrying the vproc the thread ran on, with a fresh scheduler
 *    context; the forking thread becomes the child's main thread (the
 *    process ends when it has called ito_exit and no thread is left). The
 *    layers above reset theirs through the hooks (runtime/hooks.h). No
 *    kernel thread is started and nothing is pinned: a child that only execs
 *    or _exits pays for a few allocations and one mapping.
 *  - The rest at the child's first call through the init gate, which finds
 *    the state FORKED (api/init.c): ito__fork_resume lets go of the parent's
 *    rings and makes new ones, pins this kernel thread and starts the other
 *    vprocs' activations; api/ then starts the monitor and the agent.
 *  - The parent's threads: their descriptors keep an older epoch
 *    (ito__fork_epoch, thread.h). Their handles find nothing (ESRCH), and a
 *    wake-up of one — the child unlocks a mutex one of them waited for — is
 *    dropped (wait.c): they never run in the child. Their stacks, the pooled
 *    stacks and the free descriptors stay mapped and unused (shared with the
 *    parent's pages until written); the child makes new ones.
 *
 * Affinity and policy. fork() copies the caller's CPU affinity and
 * scheduling policy: a carrier is pinned to its vproc's CPU, and may run at
 * the idle weight (cpushare/weight.c). The child's thread gets the process's
 * affinity and the policy it had before the allocator weakened it at once,
 * and is pinned again only when the runtime resumes: a worker that the child
 * execs gets every CPU of the process.
 *
 * posix_spawn, and system and popen built on it, run no fork handlers:
 * spawn.c lifts the caller's pinning around them instead.
 *
 * Rejected: stopping every vproc at a safe point before the fork, so that
 * the child's copy is consistent (a fork would wait for every thread's next
 * switch, and a thread computing without one for its whole time slice);
 * starting the child's kernel threads in the handler (a fork followed by exec
 * would pay for them, pinned).
 */
#include "runtime/fork.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/panic.h"
#include "runtime/event.h"
#include "runtime/hooks.h"
#include "runtime/ring.h"
#include "runtime/runtime.h"
#include "runtime/sched.h"
#include "runtime/stack.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

uint32_t ito__fork_epoch;

/* The kernel thread that forks, as its parent knew it (the child's copy of
 * this thread's TLS keeps it). */
static __thread pid_t forking_tid;

/* What the child no longer uses, kept where a leak checker finds it: the
 * vprocs (with their activations, rings and policy state) and the spares of
 * each process this one descends from. */
struct forgotten {
    struct forgotten *older;
    struct ito__vproc **vprocs;
    ito_policy_vproc_t **pviews;
    struct ito__activation *spares;
    int nvprocs;
};
static struct forgotten *forgotten;

/* The vprocs whose rings the child has not let go of yet, and the
 * activation adopted in the child (pinned when the runtime resumes). */
static struct forgotten *rings_to_close;
static struct ito__activation *adopted;

static void prepare(void)
{
    forking_tid = gettid();
}

/* Locks and lists shared by every kernel thread: one that the fork left
 * behind may have held a lock, or been half-way through a list. `self` is
 * the forking thread (NULL: a kernel thread ito did not create). */
static void forget_shared(const struct ito__thread *self)
{
    ito__spin_init(&ito__rt.gq_lock, ITO__LOCK_GLOBAL_QUEUE);
    ito__rt.gq_head = ito__rt.gq_tail = NULL;
    atomic_store_explicit(&ito__rt.gq_len, 0, memory_order_relaxed);
    ito__spin_init(&ito__rt.spare_lock, ITO__LOCK_SPARES);
    ito__rt.spares = NULL;
    ito__rt.nspares = 0;
    atomic_store_explicit(&ito__rt.nactivations, 0, memory_order_relaxed);
    atomic_store_explicit(&ito__rt.all_acts, NULL, memory_order_relaxed);   /* the child's own, from now */
    atomic_store_explicit(&ito__rt.nspinning, 0, memory_order_relaxed);
    atomic_store_explicit(&ito__rt.nsleeping, 0, memory_order_relaxed);
    atomic_store_explicit(&ito__rt.nrevoked, 0, memory_order_relaxed);
    atomic_store_explicit(&ito__rt.monitor_asleep, 0, memory_order_relaxed);
    atomic_store_explicit(&ito__rt.foreign_spawns, 0, memory_order_relaxed);
    atomic_store_explicit(&ito__rt.main_exited, false, memory_order_relaxed);
    ito__handles_forked();
    ito__stacks_forked(self ? &self->stack : NULL);
    ito__keys_forked();
    ito__event_forked();
}

/* New vprocs, with the policy's state for them. */
static void new_vprocs(void)
{
    int n = ito__rt.nvprocs;
    const ito_policy_ops_t *pol = ito__rt.policy;
    void *shared = NULL;
    int e = ito__vprocs_recreate(ito__rt.vprocs, n);
    if (!e && pol->init)
        e = pol->init(n, &shared);
    for (int i = 0; !e && i < n; i++) {
        ito__rt.vprocs[i]->pv.shared = shared;
        if (pol->vproc_init)
            e = pol->vproc_init(&ito__rt.vprocs[i]->pv);
    }
    if (e)
        ito__panic("the child of fork cannot rebuild ito's vprocs (%s, policy \"%s\"); a child that "
                   "only calls exec or _exit does not need them: free memory, or call no ito function "
                   "there",
                   strerror(e), pol->name);
}

/* The forking thread, running: the child's main thread, which nobody joins
 * yet and nobody suspends. */
static void make_main(struct ito__thread *self)
{
    self->epoch = ito__fork_epoch;
    self->flags = (uint8_t)((self->flags & ~ITO__TF_UNBLOCKED) | ITO__TF_MAIN);
    ito__spin_init(&self->lk, ITO__LOCK_THREAD);
    ito__waitq_init(&self->exit_waiters);
    atomic_store_explicit(&self->joiner, NULL, memory_order_relaxed);
    uint64_t ctl = atomic_load_explicit(&self->ctl, memory_order_relaxed);
    atomic_store_explicit(&self->ctl, ctl & ~(uint64_t)(ITO__CTL_JOINED | ITO__CTL_JOINER_ITO),
                          memory_order_relaxed);
    atomic_store_explicit(&self->susp_req, 0, memory_order_relaxed);
    /* Running inline on its joiner's stack (inline.c): the joiner is the
     * parent's, so the thread ends like any other rather than return into
     * the join frame. */
    self->inl = NULL;
}

static void rebuild(void)
{
    ito__cpus_restore_self();
    int state = atomic_load_explicit(&ito__rt.state, memory_order_relaxed);
    if (state != ITO__RT_READY && state != ITO__RT_FORKED) {
        /* Not started, failed, or starting in another kernel thread: the
         * layers above forget that (api/init.c). */
        ito__hooks.forked(forking_tid);
        return;
    }
    uint32_t depth = ito__critical_depth();
    ito__critical_restore(depth + 1);   /* also drops an ATTENTION the parent's monitor set */
    struct ito__activation *old = ito__activation_self();
    struct ito__thread *self = old ? ito__thread_self() : NULL;
    /* The kernel thread that forked, as the parent knew it: the activation's
     * (a time slice may have moved the thread since the prepare handler). */
    pid_t parent_tid = old ? ito__activation_tid(old) : forking_tid;
    struct forgotten *f = malloc(sizeof *f);
    if (!f)
        ito__panic("the child of fork is out of memory rebuilding ito; a child that only calls exec or "
                   "_exit does not need it: free memory, or call no ito function there");
    *f = (struct forgotten){ forgotten, ito__rt.vprocs, ito__rt.pviews, ito__rt.spares, ito__rt.nvprocs };
    forgotten = f;
    if (state == ITO__RT_READY)
        rings_to_close = f;   /* (a child not yet resumed: its vprocs have none, the older ones are still open) */
    adopted = NULL;
    ito__fork_epoch++;
    forget_shared(self);
    ito__hooks.forked(parent_tid);
    ito__hooks.posix_forked();   /* before the adoption below takes a thread pointer */
    new_vprocs();
    ito__rings_on = false;   /* the new vprocs get theirs when the runtime resumes */
    ito__idle_init();
    if (self) {
        make_main(self);
        int vi = old->vp ? old->vp->index : 0;
        int e = ito__activation_adopt_forked(ito__rt.vprocs[vi], self, old);
        if (e)
            ito__panic("the child of fork cannot give its thread an activation (%s); free memory, or "
                       "call only exec or _exit there",
                       strerror(e));
        adopted = ito__rt.vprocs[vi]->act;
    } else if (old) {
        ito__activation_forget_self();   /* a scheduler context forked (an event hook): a foreign thread now */
    }
    /* Release: what was rebuilt above is visible to whoever reads FORKED
     * (acquire, api/init.c) — in this process, only threads created later. */
    atomic_store_explicit(&ito__rt.state, ITO__RT_FORKED, memory_order_release);
    ito__critical_restore(depth);
}

static void child(void)
{
    int saved_errno = errno;   /* the forking thread's, as fork left it */
    rebuild();
    errno = saved_errno;
}

/* Registered when the library is loaded, not when ito starts: child
 * handlers run in the order they were registered, and ito's must run before
 * those of the program and of libraries (which may create threads in the
 * child); prepare handlers run in the opposite order, so ito's runs last,
 * just before the fork. */
__attribute__((constructor)) static void register_handlers(void)
{
    pthread_atfork(prepare, NULL, child);
}

int ito__fork_resume(void)
{
    if (rings_to_close) {
        ito__rings_forked(rings_to_close->vprocs, rings_to_close->nvprocs);
        rings_to_close = NULL;
    }
    ito__rings_init();
    if (adopted && ito__rt.pin)
        ito__pin_thread(ito__activation_tid(adopted), adopted->vp->cpu);
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        if (ito__rt.vprocs[i]->act)
            continue;
        int e = ito__activation_start(ito__rt.vprocs[i]);
        if (e)
            return e;
    }
    return 0;
}
