/* SPDX-License-Identifier: MIT */
/*
 * Inline joins: running a thread that has not started yet on the stack of
 * the thread that joins it.
 *
 * A thread that joins a thread it has just spawned would wait for it anyway;
 * if the child has not started (the policy can hand it back, see `take` in
 * policy.h) and the joiner's stack has room for the child's whole stack size,
 * the joiner runs the child right there, as a function call: no stack to
 * allocate, no context to build, no switch (Lazy Threads, Goldstein,
 * Schauser and Culler, 1996; the `join` of Cilk and Rayon). For the duration
 * the child is the running thread — ito_self(), its errno, keys, priority are
 * its own — and the joiner is BLOCKED, as it would be in any join.
 *
 * The child stays a full thread:
 *   - if it blocks, the joiner's stack, with the child's frames on top, is
 *     parked as the child's context and may resume on another vproc; the
 *     joiner cannot run meanwhile (it is waiting for exactly this child);
 *   - if it calls ito_exit, __builtin_longjmp brings control back to the join
 *     frame (ito__inline_exit);
 *   - if it is suspended and restarted with ito_set_entry, its frames are
 *     dropped and it becomes an ordinary thread that has not started
 *     (ito__inline_detach); the joiner then gets a context of its own on the
 *     freed part of its stack, which jumps back into the join frame once the
 *     child exits and wakes it through the ordinary join protocol.
 * A stack overflow in the child hits the joiner's guard page and is reported
 * as the child's. Only a child with the promise of a stack (stack.c), not a
 * stack of its own, runs inline; the promise goes back to the vproc when the
 * child finishes here, and stays the child's if it is moved off.
 */
#include <errno.h>

#include "base/panic.h"
#include "runtime/group.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"
#include "runtime/sched.h"
#include "runtime/stats.h"
#include "runtime/thread.h"
#include "runtime/sigmask.h"
#include "runtime/trace.h"

struct ito__inline_frame {
    void *jb[5];                    /* __builtin_setjmp buffer */
    struct ito__thread *joiner;
    void *sp;                       /* the join frame's stack pointer: free below it */
    uint32_t depth;                 /* the joiner's critical-section depth */
    bool detached;                  /* the child was moved off this stack */
};

/* The child finished on our stack: what ito__thread_exit does for others. */
static void finish(struct ito__thread *t)
{
    ito__group_exit(t);
    struct ito__vproc *vp = ito__vproc_self();
    ito__stack_unpromise(vp, vp->stacks);
    ITO_STAT_INC(vp, exits);
    t->inl = NULL;
    t->stack.lo = NULL;
    t->stack.flags = 0;
    t->tsan_fiber = NULL;
    t->started = false;
    ito__thread_set_state(t, ITO__TS_RUNNING, ITO__TS_EXITED);
    /* We are its joiner: nobody else touches ctl once JOINED is set.
     * Release: the result is visible to whoever sees EXITED. */
    uint64_t ctl = atomic_load_explicit(&t->ctl, memory_order_relaxed);
    atomic_store_explicit(&t->ctl, ctl | ITO__CTL_EXITED, memory_order_release);
}

ITO_NOINLINE void ito__join_inline(struct ito__thread *self, struct ito__thread *t)
{
    ITO_ASSERT(!t->started);   /* a thread that ran has a context of its own (thread.c) */
    struct ito__activation *act = ito__activation_self();
    struct ito__vproc *vp = act->vp;
    struct ito__inline_frame f;
    f.joiner = self;
    f.sp = ito__arch_sp();
    f.detached = false;
    f.depth = ito__critical_depth();
    self->saved_errno = *act->errno_ptr;
    t->inl = &f;
    t->stack.lo = self->stack.lo;
    t->stack.size = self->stack.size;
    t->stack.flags = self->stack.flags & ~(uint32_t)ITO__STACK_POOLED;   /* not its to free */
    t->tsan_fiber = self->tsan_fiber;
    t->started = true;
    t->vp = vp;
    ito__vproc_set_current(vp, t);
    ITO_TRACE_EVENT(run, vp->index, (int64_t)t->index);
    ito__sigmask_after(act, t);
    ITO_STAT_INC(vp, switches);
    *act->errno_ptr = 0;
    /* The child's code runs outside any critical section, as on its own stack. */
    ito__critical_restore(0);
    if (__builtin_setjmp(f.jb) == 0) {
        t->result = t->fn(t->arg);
        /* It forked, and this is the child (runtime/fork.c), where the
         * joiner is a thread of the parent's: end like any other thread
         * rather than return into the join. */
        if (ITO_UNLIKELY(t->inl != &f))
            ito__thread_exit(t, t->result);
    }
    /* Here the child has finished: it returned, or ito_exit jumped back, or
     * (detached) it ran elsewhere, exited, and woke us through our context.
     * No section is open here on any of these paths. */
    if (!f.detached && ito__keys_any(t))
        ito__keys_run_destructors(t);   /* as the child; may switch */
    /* Back into ito: an entry like any other first (its kernel thread may
     * have lost the vproc while the child slept, runtime/carrier.c), then the
     * joiner's depth. */
    ito__critical_enter();
    ito__critical_restore(f.depth);
    if (!f.detached)
        finish(t);
    act = ito__activation_self();
    vp = act->vp;
    ito__vproc_set_current(vp, self);
    ITO_TRACE_EVENT(run, vp->index, (int64_t)self->index);
    ito__sigmask_after(act, self);
    self->vp = vp;
    if (!f.detached)
        ito__thread_set_state(self, ITO__TS_BLOCKED, ITO__TS_RUNNING);
    else
        self->inl_wait = NULL;
    *act->errno_ptr = self->saved_errno;
    /* A suspension asked for while we waited takes effect now (the same
     * Dekker pair as ito__claim: RUNNING stored, then the request loaded). */
    ito__fence_light();
    if (ITO_UNLIKELY(atomic_load_explicit(&self->susp_req, memory_order_relaxed))) {
        uint64_t ctl = atomic_load_explicit(&self->ctl, memory_order_relaxed);
        ito_suspend((ito_thread_t){ ito__thread_id(self, ctl) });
    }
}

void ito__inline_exit(struct ito__thread *t, void *result)
{
    t->result = result;
    ito__san_no_return();
    __builtin_longjmp(t->inl->jb, 1);
}

/* Entry of the context a joiner gets when its inlined child is moved off. */
static void rejoin_entry(ito__transfer_t tr)
{
    (void)tr;
    ito__after_switch_fresh();
    ito__critical_restore(0);   /* as on the other paths back to the join frame */
    struct ito__thread *self = ito__thread_self();
    ito__san_no_return();
    __builtin_longjmp(self->inl_wait->jb, 1);
}

void ito__inline_detach(struct ito__thread *t)
{
    struct ito__inline_frame *f = t->inl;
    struct ito__thread *j = f->joiner;
    f->detached = true;
    /* Below the join frame, the stack only holds the child's dropped frames. */
    uintptr_t top = ((uintptr_t)f->sp - ITO__ARCH_RED_ZONE) & ~(uintptr_t)15;
    ito__san_unpoison(j->stack.lo, top - (uintptr_t)j->stack.lo);
    j->inl_wait = f;
    j->ctx.sp = ito__ctx_make((void *)top, rejoin_entry, ito__arch_fpctl());
    t->inl = NULL;
    t->stack.lo = NULL;
    t->stack.flags = 0;
    t->tsan_fiber = NULL;
    t->asan_fake_stack = NULL;
}
