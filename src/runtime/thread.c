/* SPDX-License-Identifier: MIT */
/*
 * Threads: the public thread API on top of descriptors (handle.c), the
 * scheduler (sched.c) and waiting (runtime/wait.c).
 *
 * Spawning allocates a descriptor from the vproc's cache, takes the promise
 * of a stack (stack.c: running out of memory is EAGAIN here, never a failure
 * of the thread later), and hands the thread to the policy as NEW: no stack,
 * no context yet (start_frame in sched.c gives it both when it first runs).
 * Exiting publishes the result, wakes the joiner (or frees a detached
 * thread) and leaves the stack to the next context on the vproc (handover),
 * because the exiting thread is still standing on it.
 *
 * Join, detach, exit and futures race on the ctl word (thread.h): whoever
 * sets EXITED while JOINED is set, or JOINED while EXITED is set, knows the
 * other party exists; the joiner frees the descriptor. Operations through a
 * handle that read or write other fields (priority, data, suspension) hold
 * t->lk and re-check the generation under it (ito__thread_lock_live), which
 * is what makes a stale handle harmless.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ito.h>
#include <ito/policy.h>

#include "base/libc.h"
#include "base/backoff.h"
#include "base/panic.h"
#include "runtime/group.h"
#include "runtime/hooks.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"
#include "runtime/sched.h"
#include "runtime/stats.h"
#include "runtime/thread.h"
#include "runtime/wait.h"
#include "runtime/sigmask.h"



void ito__thread_bad_transition(struct ito__thread *t, int from, int to, int actual)
{
    static const char *const names[] = { "NEW", "READY", "RUNNING", "BLOCKED", "SUSPENDED", "EXITED", "FREE" };
    /* The caller is t, running, yet t is no longer RUNNING, and ito's own
     * code is on the stack twice (two critical sections): t was interrupted
     * inside ito between its state change and its switch, and a signal
     * handler called ito again. The caller's mistake, not ito's. (Found
     * here, where it would abort anyway: no check on the fast paths.) */
    if (t == ito__thread_self() && from == ITO__TS_RUNNING && actual != ITO__TS_RUNNING &&
        ito__critical_depth() > 1)
        ito__panic("thread %u \"%s\" called an ito function that may switch (ito_yield, ito_join, a lock, "
                   "a wait...) from a signal handler that interrupted it inside ito; such functions are "
                   "not async-signal-safe. Let the handler only record the signal (set a flag, write to a "
                   "pipe or an eventfd; sem_post in libito-pthread) and act on it in an ito thread",
                   t->index, t->name);
    ito__panic("internal error: thread %u: illegal state change %s -> %s (state is %s); please report it",
               t->index, names[from], names[to], actual >= 0 && actual < ITO__TS_COUNT ? names[actual] : "?");
}

/* ------------------------------------------------------------- spawning */

/* The stack of a new thread t, where it is not simply one of the vproc's
 * spare promises: its caller's, one larger than the default (mapped now), or
 * a promise from the pool (stack.c). 0 or ENOMEM. */
static ITO_NOINLINE int spawn_stack(struct ito__vproc *vp, struct ito__thread *t, size_t mapped,
                                    const struct ito__spawn_extra *x, size_t *stack_size)
{
    if (x && x->stack_lo) {
        t->stack = (struct ito__stack){ .lo = x->stack_lo, .size = x->stack_size, .flags = ITO__STACK_CALLER };
        t->flags |= ITO__TF_OWN_STACK;   /* not pooled, no guard page of ours */
        *stack_size = x->stack_size;
        return 0;
    }
    int e = ito__stack_promise(vp, vp ? vp->stacks : NULL, mapped, &t->stack);
    if (!e && t->stack.lo)
        t->flags |= ITO__TF_OWN_STACK;
    return e;
}

int ito__spawn(uint64_t *id_out, const ito_attr_t *attr, void *(*fn)(void *), void *arg, uint32_t ctl_flags,
               const struct ito__spawn_extra *x)
{
    uintptr_t tp = x ? x->tp : 0;
    if (!fn)
        return EINVAL;
    ito__critical_none();
    size_t stack_size = ito__rt.stack_size, stack_mapped = 0;   /* 0: promised (stack.h) */
    int prio = ITO_PRIO_DEFAULT, pref = -1;
    const char *name = NULL;
    ito_group_t *group = NULL;
    if (attr) {
        if (ITO_UNLIKELY(!ito__attr_valid(attr)))
            return EINVAL;
        if (ITO_UNLIKELY(attr->stack_size_ > stack_size))
            stack_mapped = ito__stack_reserve(ito__stack_round(attr->stack_size_));
        if (attr->stack_size_)
            stack_size = ito__stack_round(attr->stack_size_);
        prio = attr->priority_;
        pref = attr->vproc_;
        if ((attr->flags_ & ITO__ATTR_DETACHED) && !(ctl_flags & ITO__CTL_FUTURE))
            ctl_flags |= ITO__CTL_DETACHED;
        name = attr->name_;
        group = attr->group_;
    }
    if (!id_out && !(ctl_flags & ITO__CTL_DETACHED))
        return EINVAL;
    struct ito__group *grp = NULL;
    if (group && !(grp = ito__group_enrol(group)))
        return EINVAL;   /* destroyed since the attribute was set */

    bool own_tp = false;
    if (ITO_OWN_TLS && !tp) {
        if (!(tp = ito__hooks.tp_new())) {
            if (grp)
                ito__group_discharge(grp);
            return EAGAIN;
        }
        own_tp = true;
    }
    ito__critical_enter();   /* the vproc's caches and ready queue */
    struct ito__vproc *vp = ito__vproc_self();
    struct ito__thread *t = ito__thread_alloc(vp);
    if (!t)
        goto lacking;
    /* Its stack: promised (the descriptor's is NULL), or one of its own. */
    if (ITO_UNLIKELY(stack_mapped || (x && x->stack_lo) || !vp || !ito__stack_promise_spare(vp->stacks)) &&
        spawn_stack(vp, t, stack_mapped, x, &stack_size)) {
        ito__thread_unalloc(t);
        goto lacking;
    }
    t->tp = tp;
    /* The descriptor is clean (thread.h): set only what this thread chose. */
    t->pref_vproc = (int16_t)pref;
    __atomic_store_n(&t->group, grp, __ATOMIC_RELAXED);
    __atomic_store_n(&t->prio, prio, __ATOMIC_RELAXED);   /* policies read it unsynchronized */
    t->fn = fn;
    t->arg = arg;
    t->fpctl = ito__arch_fpctl();   /* POSIX: a thread inherits its creator's FP environment */
    /* ... and signal mask. */
    if (ITO_UNLIKELY(x && x->has_sigmask)) {
        atomic_store_explicit(&t->sigmask, x->sigmask & ~ito__sigmask_reserved(), memory_order_relaxed);
        ito__sigmasks_begin();   /* before it is ready */
    } else {
        atomic_store_explicit(&t->sigmask, ito__sigmask_spawned(), memory_order_relaxed);
    }
    if (ITO_UNLIKELY(x && x->cpus))
        ito__thread_set_cpus(t, x->cpus);   /* (before it is ready: its first place) */
    t->stack_size = stack_size;
    if (ITO_UNLIKELY(name && name[0]))
        memcpy(t->name, name, ITO_NAME_MAX);

    uint64_t ctl = (atomic_load_explicit(&t->ctl, memory_order_relaxed) & ~(uint64_t)UINT32_MAX) | ctl_flags;
    if (id_out)
        __atomic_store_n(id_out, ito__thread_id(t, ctl), __ATOMIC_RELAXED);   /* read meanwhile by others */
    if (vp)
        ITO_STAT_INC(vp, spawns);
    else
        atomic_fetch_add_explicit(&ito__rt.foreign_spawns, 1, memory_order_relaxed);
    ito__thread_set_state(t, ITO__TS_FREE, ITO__TS_NEW);
    /* Release: handle lookups (acquire) see an initialized descriptor. */
    atomic_store_explicit(&t->ctl, ctl, memory_order_release);
    ito__ready(t, ITO_READY_SPAWN);
    ito__critical_exit();
    return 0;

lacking:
    ito__critical_exit();
    if (grp)
        ito__group_discharge(grp);
    if (own_tp)
        ito__hooks.tp_done(tp);
    return EAGAIN;
}


/* ------------------------------------------------------------------ exit */

/* Wait for t's exit (t->lk protects exit_waiters). */
void ito__thread_wait_exit(struct ito__thread *t)
{
    struct ito__waiter local;
    ito__spin_lock(&t->lk);
    if (atomic_load_explicit(&t->ctl, memory_order_acquire) & ITO__CTL_EXITED) {
        ito__spin_unlock(&t->lk);
        return;
    }
    struct ito__waiter *w = ito__waiter_init(&local);
    ito__waitq_push(&t->exit_waiters, w);
    ito__wait_begin(w, 0, &t->lk, &t->exit_waiters, ITO__ON_JOIN, t);
    ito__spin_unlock(&t->lk);
    ito__wait_end(w, &t->lk, &t->exit_waiters);
}

void ito__thread_exit(struct ito__thread *t, void *result)
{
    if (t->inl)
        ito__inline_exit(t, result);   /* running on its joiner's stack: jump back there */
    if (ito__keys_any(t)) {
        ito__keys_run_destructors(t);   /* user code: may switch */
        if (ITO_OWN_TLS)
            ito__keys_free(t);   /* in its own TLS block, which the next thread gets anew */
    }
    t->result = result;
    ito__critical_enter();   /* never left: the thread ends in its last switch */
    ito__group_exit(t);
    struct ito__vproc *vp = ito__vproc_self();
    if (ITO_UNLIKELY(t->flags & ITO__TF_MAIN)) {
        /* The child of a fork whose runtime never resumed has no other
         * thread (a spawn resumes it): it was the last (runtime/fork.c). */
        if (atomic_load_explicit(&ito__rt.state, memory_order_relaxed) == ITO__RT_FORKED)
            exit(0);
        atomic_store_explicit(&ito__rt.main_exited, true, memory_order_release);
    } else
        ITO_STAT_INC(vp, exits);
    /* The stack and the TSan fiber outlive the thread until the next context
     * runs on this vproc (after_resume in sched.c). Main's kernel stack and
     * fiber are not ours to free. */
    if (t->stack.flags & ITO__STACK_POOLED) {
        vp->handover.dead_stack = t->stack;
        vp->handover.dead_tsan_fiber = t->tsan_fiber;
        t->tsan_fiber = NULL;
    }
    t->stack.lo = NULL;
    t->stack.flags = 0;
    t->started = false;
    vp->handover.dead_tp = t->tp;   /* still ours until the switch: the same hand-over */
    t->tp = 0;
    ito__thread_set_state(t, ITO__TS_RUNNING, ITO__TS_EXITED);

    /* Publish EXITED. Release: the result is visible to whoever sees it.
     * - An ito joiner (JOINER_ITO) is blocked and only we can wake it, so it
     *   cannot free t before we are done: a plain store (once JOINED is set
     *   nobody else touches ctl).
     * - Waiters in exit_waiters (a foreign joiner, future touchers) may free
     *   t as soon as they see EXITED: publish and claim them under t->lk,
     *   which every freeing path takes (ito__thread_free, the check in
     *   ito__thread_wait_exit), and touch t no more after unlocking.
     * - Nobody waits: a CAS, which fails if a joiner arrives meanwhile. */
    struct ito__waiter *waiters = NULL;
    uint64_t ctl = atomic_load_explicit(&t->ctl, memory_order_acquire);
    for (;;) {
        if (ctl & ITO__CTL_JOINER_ITO) {
            atomic_store_explicit(&t->ctl, ctl | ITO__CTL_EXITED, memory_order_release);
            break;
        }
        if (ctl & (ITO__CTL_JOINED | ITO__CTL_FUTURE)) {
            ito__spin_lock(&t->lk);
            ctl = atomic_fetch_or_explicit(&t->ctl, ITO__CTL_EXITED, memory_order_acq_rel);
            waiters = ito__waitq_claim_all(&t->exit_waiters);
            ito__spin_unlock(&t->lk);
            break;
        }
        if (atomic_compare_exchange_weak_explicit(&t->ctl, &ctl, ctl | ITO__CTL_EXITED, memory_order_acq_rel,
                                                  memory_order_acquire))
            break;
    }

    struct ito__thread *next = NULL;
    if (ctl & ITO__CTL_JOINER_ITO) {
        /* An ito thread joins us: it is BLOCKED and only we can wake it. It
         * stores itself in `joiner` right after its claim (acquire pairs with
         * that release store, inside the same critical section as the
         * claim); the wait is a few instructions, unless the kernel
         * preempts its activation right there. */
        struct ito__thread *j;
        for (unsigned spins = 0; !(j = atomic_load_explicit(&t->joiner, memory_order_acquire));)
            ito__backoff(&spins);
        ito__thread_set_state(j, ITO__TS_BLOCKED, ITO__TS_READY);
        /* A group member goes through its policy, which decides where its
         * group runs. */
        if ((j->pref_vproc < 0 || j->pref_vproc == vp->index) && !__atomic_load_n(&j->group, __ATOMIC_RELAXED) &&
            (!ito__thread_cpus(j) || ito__affinity_place(vp, j) == vp)) {
            if (ito__claim(j))
                next = j;   /* hand the vproc straight back to the joiner */
        } else {
            ito__ready(j, ITO_READY_WAKE);
        }
    }
    ito__wake_finish_all(waiters);
    /* Since the publication t may have been freed (except by an ito joiner,
     * which waits for the wake above): only the detached case still names
     * it, and then nobody else does. */
    if ((ctl & ITO__CTL_DETACHED) || ((ctl & ITO__CTL_RELEASED) && ito__ctl_pins(ctl) == 0))
        vp->handover.dead = t;
    ito__switch_out_dead(vp, next);
}

void ito__exit(void *result)
{
    struct ito__thread *self = ito__thread_self();
    if (self)
        ito__thread_exit(self, result);
    ito__panic("ito_exit() called from a kernel thread that ito did not create; "
               "only ito threads (and main, once ito is initialized there) can exit this way");
}

/* ------------------------------------------------------------ join/detach */

int ito__ctl_change(struct ito__thread *t, uint64_t id, uint64_t *ctl, uint64_t need, uint64_t refuse,
                    int err, uint64_t set, uint64_t add)
{
    uint64_t c = *ctl;
    for (;;) {
        if (ito__ctl_gen(c) != (uint32_t)(id >> 32) || (c & ITO__CTL_FREE))
            return ESRCH;
        if ((c & need) != need || (c & refuse))
            return err;
        /* acq_rel: acquires what the exiting thread released with EXITED
         * (its result), releases what the caller wrote before the change. */
        if (atomic_compare_exchange_weak_explicit(&t->ctl, &c, (c | set) + add, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            *ctl = c;
            return 0;
        }
    }
}

int ito__join(ito_thread_t th, void **result)
{
    uint64_t ctl;
    struct ito__thread *t = ito__handle_lookup(th.id, &ctl);
    if (!t)
        return ESRCH;
    struct ito__thread *self = ito__thread_self();
    if (t == self)
        return EDEADLK;
    ito__critical_none();
    uint32_t claim = self ? ITO__CTL_JOINED | ITO__CTL_JOINER_ITO : ITO__CTL_JOINED;
    /* From the claim until `joiner` is stored, t may be exiting and waiting
     * for it (thread_exit): no time slice may end in between, or on one
     * vproc t would wait for ever. */
    ito__critical_enter();
    int e = ito__ctl_change(t, th.id, &ctl, 0, ITO__CTL_DETACHED | ITO__CTL_JOINED | ITO__CTL_FUTURE, EINVAL, claim, 0);
    if (e) {
        ito__critical_exit();
        return e;
    }
    /* Claimed: nobody else frees t now. */
    if (!(ctl & ITO__CTL_EXITED)) {
        if (!self) {
            ito__thread_wait_exit(t);
        } else {
            /* Block, and tell t who to wake; t cannot exit without waking us
             * (it waits for `joiner` once it sees JOINER_ITO). */
            ito__thread_waits_on(self, ITO__ON_JOIN, t);
            ito__thread_set_state(self, ITO__TS_RUNNING, ITO__TS_BLOCKED);
            atomic_store_explicit(&t->joiner, self, memory_order_release);
            ito_policy_vproc_t *pv = &ito__vproc_self()->pv;
            if (ito__thread_state(t) == ITO__TS_NEW && ito__rt.policy->take &&
                (!ito__thread_cpus(t) || ito__affinity_place(ito__vproc_self(), t) == ito__vproc_self()) &&
                ito__rt.policy->take(pv, &t->node) && ito__claim(t)) {
                /* Not started yet: run it right now — on our own stack if it
                 * fits there (inline.c), else on its own. It was NEW when we
                 * looked, but another vproc may have started it since and it
                 * may be queued again (READY, with a saved context): only a
                 * thread that never ran may start afresh on our stack.
                 * `started` was written before it first ran, and reaches us
                 * through the queue that `take` took it from. */
                if (!t->started && ito__join_inline_fits(self, t))
                    ito__join_inline(self, t);
                else
                    ito__switch_to(self, t);
            } else {
                ito__switch_out(self);
            }
        }
    }
    if (result)
        *result = t->result;
    ito__thread_free(ito__vproc_self(), t);
    ito__critical_exit();
    return 0;
}

int ito__detach(ito_thread_t th)
{
    uint64_t ctl;
    struct ito__thread *t = ito__handle_lookup(th.id, &ctl);
    if (!t)
        return ESRCH;
    int e = ito__ctl_change(t, th.id, &ctl, 0, ITO__CTL_DETACHED | ITO__CTL_JOINED | ITO__CTL_FUTURE, EINVAL,
                        ITO__CTL_DETACHED, 0);
    if (e)
        return e;
    if (ctl & ITO__CTL_EXITED)   /* already exited: we are the last to know it */
        ito__thread_free_here(t);
    return 0;
}

/* ----------------------------------------------------------- scheduling */

ito_thread_t ito__self(void)
{
    struct ito__thread *self = ito__thread_self();
    if (!self)
        return ITO_THREAD_NULL;
    return (ito_thread_t){ ito__thread_id(self, atomic_load_explicit(&self->ctl, memory_order_relaxed)) };
}

struct ito__thread *ito__thread_lock_handle(ito_thread_t th)
{
    if (!ito__runtime_built())
        return NULL;   /* no thread has a handle yet */
    uint64_t ctl;
    struct ito__thread *t = ito__handle_lookup(th.id, &ctl);
    if (!t || !ito__thread_lock_live(t, th.id))
        return NULL;
    return t;
}

/* Ask the vproc running t to switch it out now (the time-slice signal, also
 * with slices off): for a thread that computes without calling ito. */
static void interrupt(struct ito__thread *t)
{
    for (int i = 0; i < ito__rt.nvprocs; i++)
        if (__atomic_load_n(&ito__rt.vprocs[i]->current, __ATOMIC_RELAXED) == t)
            ito_policy_preempt(i);
}

/* Wait until t (named by id) no longer runs user code. It stops at its next
 * call that may switch; one that has not come to one within about a
 * millisecond is interrupted (and again every 10 ms or so, should it have
 * moved meanwhile). */
static void wait_stopped(struct ito__thread *t, uint64_t id)
{
    for (unsigned i = 0;; i++) {
        uint64_t ctl = atomic_load_explicit(&t->ctl, memory_order_acquire);
        if (ito__ctl_gen(ctl) != (uint32_t)(id >> 32) || (ctl & ITO__CTL_FREE))
            return;
        if (ito__thread_state(t) != ITO__TS_RUNNING)
            return;
        if (i >= 64 + 50 && (i - 64 - 50) % 500 == 0)
            interrupt(t);
        if (i < 64)
            ito__yield();
        else {
            struct timespec ts = { 0, 20000 };
            if (ito__thread_self())
                ito__sleep_ns(20000);
            else
                ito__libc_nanosleep(&ts, NULL);
        }
    }
}

ITO_API int ito_suspend(ito_thread_t th)
{
    struct ito__thread *t = ito__thread_lock_handle(th);
    if (!t)
        return ESRCH;
    int s = ito__thread_state(t);
    if (s == ITO__TS_EXITED) {
        ito__spin_unlock(&t->lk);
        return ESRCH;
    }
    atomic_store_explicit(&t->susp_req, 1, memory_order_relaxed);
    if (t == ito__thread_self()) {
        ito__critical_enter();   /* from SUSPENDED to the switch (runtime/critical.h) */
        ito__thread_set_state(t, ITO__TS_RUNNING, ITO__TS_SUSPENDED);
        ito__spin_unlock(&t->lk);
        ito__switch_out(t);
        ito__critical_exit();
        return 0;
    }
    ito__spin_unlock(&t->lk);
    /* The Dekker pair with ito__claim (sched.h): request stored, then state
     * loaded. A thread seen not RUNNING will divert before it runs again. */
    ito__fence_heavy();
    if (ito__thread_state(t) == ITO__TS_RUNNING)
        wait_stopped(t, th.id);
    return 0;
}

ITO_API int ito_resume(ito_thread_t th)
{
    struct ito__thread *t = ito__thread_lock_handle(th);
    if (!t)
        return ESRCH;
    if (ito__thread_state(t) == ITO__TS_EXITED) {
        ito__spin_unlock(&t->lk);
        return ESRCH;
    }
    /* Release: pairs with the acquire loads in ito__claim, which may run t
     * without taking t->lk — it must see what ito_set_entry wrote. */
    atomic_store_explicit(&t->susp_req, 0, memory_order_release);
    if (ito__thread_state(t) == ITO__TS_SUSPENDED) {
        ito__thread_set_state(t, ITO__TS_SUSPENDED, t->started ? ITO__TS_READY : ITO__TS_NEW);
        ito__spin_unlock(&t->lk);
        ito__ready(t, ITO_READY_RESUME);
        return 0;
    }
    ito__spin_unlock(&t->lk);
    return 0;
}

/* Under t->lk: restart a stopped thread at fn(arg). EBUSY if it has not
 * stopped yet. A queued thread counts as stopped only once `fenced`: after a
 * heavy fence of our own, a claim that did not see the suspension request
 * has made its RUNNING visible (the Dekker pair with ito__claim), so what we
 * see as READY or NEW will be diverted when picked. */
static int set_entry_locked(struct ito__thread *t, void *(*fn)(void *), void *arg, bool fenced)
{
    int st = ito__thread_state(t);
    bool asked = atomic_load_explicit(&t->susp_req, memory_order_relaxed);
    if (st == ITO__TS_EXITED)
        return ESRCH;
    if (t == ito__thread_self())
        return EINVAL;
    /* Stopped means SUSPENDED, or still queued with the request (it will be
     * diverted when picked: ito__claim). Running or waiting: not yet. */
    if (st != ITO__TS_SUSPENDED && !(asked && (st == ITO__TS_READY || st == ITO__TS_NEW)))
        return asked ? EBUSY : EINVAL;
    if (st != ITO__TS_SUSPENDED && !fenced)
        return EAGAIN;   /* the caller fences and asks again */
    if (t->started) {
        /* Its switch out may not have saved its context yet (it suspended
         * itself, or yielded and is being diverted): not stopped yet. Never
         * wait for that here, under t->lk, which the diversion may need.
         * Acquire pairs with the store of ctx.sp in ito__ctx_jump. */
        if (!__atomic_load_n(&t->ctx.sp, __ATOMIC_ACQUIRE))
            return EBUSY;
        /* Main's kernel stack (or a caller's): start anew on a pooled one,
         * promised now as at a spawn. Under t->lk, so in a critical section:
         * the vproc's cache is ours. */
        bool moved = !t->inl && !(t->stack.flags & ITO__STACK_POOLED);
        struct ito__stack fresh = { 0 };
        if (moved) {
            struct ito__vproc *vp = ito__vproc_self();
            size_t mapped = t->stack_size > ito__rt.stack_size ? ito__stack_reserve(t->stack_size) : 0;
            if (ito__stack_promise(vp, vp ? vp->stacks : NULL, mapped, &fresh))
                return ENOMEM;
        }
        ito__tsan_acquire(&t->ctx);
        t->ctx.sp = NULL;
        t->started = false;
        t->asan_fake_stack = NULL;
        if (t->inl)
            ito__inline_detach(t);   /* it ran on its joiner's stack: move it off */
        else if (moved) {
            t->stack = fresh;   /* (lo NULL if promised: taken at its next run) */
            t->flags = (uint8_t)((t->flags & ~ITO__TF_OWN_STACK) | (fresh.lo ? ITO__TF_OWN_STACK : 0));
        }
    }
    t->fn = fn;
    t->arg = arg;
    return 0;
}

ITO_API int ito_set_entry(ito_thread_t th, void *(*fn)(void *), void *arg)
{
    if (!fn)
        return EINVAL;
    /* A thread that ito_suspend has stopped can still be on its way out for a
     * few instructions (diverted by another vproc's claim, or saving its
     * context): give such moments a chance to pass, outside the lock. */
    bool fenced = false;
    for (int tries = 0;; tries++) {
        struct ito__thread *t = ito__thread_lock_handle(th);
        if (!t)
            return ESRCH;
        int e = set_entry_locked(t, fn, arg, fenced);
        ito__spin_unlock(&t->lk);
        if (e == EAGAIN) {
            ito__fence_heavy();
            fenced = true;
            continue;
        }
        if (e != EBUSY || tries == 64)
            return e == ENOMEM ? EAGAIN : e;   /* ENOMEM: no stack (EAGAIN means "fence" here) */
        if (tries < 16)
            ito__cpu_relax();
        else
            ito__libc_sched_yield();
    }
}
