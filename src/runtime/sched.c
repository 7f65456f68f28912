/* SPDX-License-Identifier: MIT */
/*
 * The scheduler: how a vproc goes from one thread to the next.
 *
 * Problem. Switching threads must cost about a function call, yet a thread
 * may be made ready by any vproc (or a foreign kernel thread) at any moment,
 * including while it is still on its way out of its own vproc.
 *
 * Approach. Threads switch directly to each other on the running thread's
 * stack: a thread that blocks asks the policy for the next thread of its own
 * vproc and jumps straight to it. Only when the vproc has nothing local to
 * run does it jump to the activation's scheduler context (the idle loop in
 * idle.c), which looks at the global queue, the timers and other vprocs
 * (stealing), then spins and finally sleeps. Heavy work therefore never runs
 * on a thread's stack while that thread may already be wanted elsewhere.
 *
 * The race of a thread being made ready before it has left its vproc is
 * resolved by the saved stack pointer: a thread's ctx.sp is NULL while it
 * runs and is stored — by the context switch, as its very last access to the
 * old stack (context.S) — when it is suspended. Whoever takes a ready thread
 * waits (acquire load) until ctx.sp is set before jumping to it; the wait is
 * a few instructions long except when the kernel preempts the other
 * activation at that instant. Only a context with nothing of its own to save
 * may wait — the scheduler context, or an exiting thread: two threads that
 * each picked the other while both were still switching out would otherwise
 * wait for each other forever. A thread that picks a thread still being saved
 * elsewhere therefore switches to its scheduler context first (pending).
 *
 * Ready threads are routed (ito__ready): to the calling vproc's policy, to
 * the thread's preferred vproc through that vproc's inbox (a lock-free stack
 * it drains at its next pick), or, from a foreign kernel thread, to the global
 * queue. Policies thus only ever see enqueue and pick on the vproc that owns
 * the structure, and steal from idle ones.
 *
 * Work that must follow a switch (returning an exited thread's stack to the
 * pool, freeing its descriptor) is left in vp->handover by the departing
 * context and done by the arriving one (after_resume).
 *
 * Cost. A switch is one frame: the call that gives up the processor
 * (ito__yield, ito__switch_out, ito__preempt_switch) enters this file once,
 * and the pick (pick_local), the switch's bookkeeping (switch_to) and the
 * register switch run inline in that frame, with one indirect call into the
 * policy; the rare cases (a misuse, a stack near its end, the periodic
 * work) are a test and a call out of line. Every function boundary on this
 * path saves and restores callee-saved registers on both sides of the
 * switch: a yield crossed five, now two (its own frame and ito__ctx_jump),
 * and the activation and vproc are read from thread-local storage once
 * (bench/yield under callgrind: 356 instructions per yield before, 285).
 *
 * Rejected: switching through the scheduler context every time (one more
 * switch per operation: bench/yield measures what one costs) and holding the wait-queue lock across the
 * switch (a lock held while the policy picks; forbidden by our lock rules).
 */
#include "runtime/sched.h"
#include "runtime/cputime.h"

#include <errno.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/libc.h"
#include "base/backoff.h"
#include "base/panic.h"
#include "runtime/runtime.h"
#include "runtime/event.h"
#include "runtime/sanitizer.h"
#include "runtime/stats.h"
#include "runtime/carrier.h"
#include "runtime/defer.h"
#include "runtime/hooks.h"
#include "runtime/ring.h"
#include "runtime/sigmask.h"
#include "runtime/trace.h"

/* How many picks between two looks at the clock (timers, policy tick) and at
 * the global queue (a power of 2): a few microseconds of switching
 * (bench/yield gives the cost of one switch on the machine at hand). */
#define ITO__PERIODIC_PICKS 32
/* Policy tick period. */
#define ITO__TICK_NS 1000000u

/* ---------------------------------------------------------------- routing */

static void inbox_push(struct ito__vproc *vp, struct ito__thread *t)
{
    struct ito__thread *head = atomic_load_explicit(&vp->inbox, memory_order_relaxed);
    do
        t->qnext = head;
    /* Release: the thread's fields (and qnext) are visible to the vproc that
     * pops the list with the acquire exchange in ito__pick_local. */
    while (!atomic_compare_exchange_weak_explicit(&vp->inbox, &head, t, memory_order_release,
                                                  memory_order_relaxed));
}

void ito__global_push(struct ito__thread *t)
{
    ito__spin_lock(&ito__rt.gq_lock);
    t->qnext = NULL;
    if (ito__rt.gq_tail)
        ito__rt.gq_tail->qnext = t;
    else
        ito__rt.gq_head = t;
    ito__rt.gq_tail = t;
    atomic_fetch_add_explicit(&ito__rt.gq_len, 1, memory_order_relaxed);
    ito__spin_unlock(&ito__rt.gq_lock);
}

unsigned ito__global_drain(struct ito__vproc *vp, unsigned max)
{
    if (!atomic_load_explicit(&ito__rt.gq_len, memory_order_relaxed))
        return 0;
    ito__spin_lock(&ito__rt.gq_lock);
    struct ito__thread *list = ito__rt.gq_head, *last = NULL;
    unsigned n = 0;
    for (struct ito__thread *t = list; t && n < max; t = t->qnext) {
        last = t;
        n++;
    }
    if (n) {
        ito__rt.gq_head = last->qnext;
        if (!ito__rt.gq_head)
            ito__rt.gq_tail = NULL;
        last->qnext = NULL;
        atomic_fetch_sub_explicit(&ito__rt.gq_len, n, memory_order_relaxed);
    }
    ito__spin_unlock(&ito__rt.gq_lock);
    for (unsigned i = 0; i < n; i++) {
        struct ito__thread *next = list->qnext;
        ito__enqueue(vp, list, (ito_ready_reason_t)list->ready_reason);
        list = next;
    }
    return n;
}

void ito__send_home(struct ito__vproc *home, struct ito__thread *t)
{
    inbox_push(home, t);
    ito__vproc_kick(home);
    /* A busy home may keep it waiting: let an idle vproc watch its inbox
     * (and rescue it, idle.c). */
    if (atomic_load_explicit(&home->run_state, memory_order_relaxed) == ITO__VP_BUSY)
        ito__idle_notify();
}

/* t, made ready from outside (the global queue, or an inbox), waits while
 * every vproc runs a thread: if the least urgent of those — home's, for a
 * thread with a home — is less urgent than t, its vproc looks at once
 * instead of at its next pick or slice ([SA §1.2]; with equal priorities
 * the monitor asks after ITO__LOOK_LATE_NS). */
static void look_if_urgent(struct ito__thread *t, struct ito__vproc *home)
{
    if (atomic_load_explicit(&ito__rt.nspinning, memory_order_relaxed) > 0 ||
        atomic_load_explicit(&ito__rt.nsleeping, memory_order_relaxed) > 0)
        return;   /* an idle vproc takes it */
    int least = ito__vproc_least_urgent(home ? home->index : 0, home ? home->index + 1 : ito__rt.nvprocs,
                                        __atomic_load_n(&t->prio, __ATOMIC_RELAXED), NULL);
    if (least >= 0)
        ito__vproc_look(ito__rt.vprocs[least]);
}

/* t goes to its preferred vproc (not the caller's), or the caller is a
 * foreign kernel thread. */
void ito__ready_slow(struct ito__thread *t, ito_ready_reason_t why)
{
    t->ready_reason = (uint8_t)why;
    if (t->pref_vproc >= 0) {
        struct ito__vproc *home = ito__rt.vprocs[t->pref_vproc];
        ito__send_home(home, t);
        look_if_urgent(t, home);
        return;
    }
    ito__global_push(t);
    ito__idle_notify();
    look_if_urgent(t, NULL);
}

ITO_NOINLINE void ito__inbox_drain(struct ito__vproc *vp, struct ito__thread *list)
{
    /* The stack holds the most recent first; hand them over oldest first. */
    struct ito__thread *rev = NULL;
    while (list) {
        struct ito__thread *next = list->qnext;
        list->qnext = rev;
        rev = list;
        list = next;
    }
    while (rev) {
        struct ito__thread *next = rev->qnext;
        if (ITO_UNLIKELY(rev->flags & ITO__TF_UNBLOCKED)) {
            rev->flags &= (uint8_t)~ITO__TF_UNBLOCKED;
            ito__event(ITO_EVENT_UNBLOCKED, vp, ito__thread_id(rev, atomic_load_explicit(&rev->ctl, memory_order_relaxed)));
        }
        ito__enqueue(vp, rev, (ito_ready_reason_t)rev->ready_reason);
        rev = next;
    }
}

/* ---------------------------------------------------------------- picking */

bool ito__claim_slow(struct ito__thread *t)
{
    /* Under t->lk, against ito_resume clearing the request. The state is
     * NEW or READY (request seen before the claim) or RUNNING (after). */
    ito__spin_lock(&t->lk);
    int s = ito__thread_state(t);
    bool stop = atomic_load_explicit(&t->susp_req, memory_order_relaxed);
    /* RUNNING already, and the request withdrawn meanwhile (ito_resume
     * between the claim's two looks): nothing to change. */
    int to = stop ? ITO__TS_SUSPENDED : ITO__TS_RUNNING;
    if (s != to)
        ito__thread_set_state(t, s, to);
    ito__spin_unlock(&t->lk);
    return !stop;
}

/* Every ITO__PERIODIC_PICKS picks, at the end of each slice, and when asked
 * to look (vp->look): I/O completions, expired timers, the global queue (so
 * that threads readied from outside cannot starve behind local work), and
 * the policy's tick. Returns how many threads it may have made ready. */
static ITO_NOINLINE unsigned periodic(struct ito__vproc *vp)
{
    if (atomic_load_explicit(&vp->look, memory_order_relaxed))
        atomic_store_explicit(&vp->look, false, memory_order_relaxed);
    unsigned readied = 0;
    if (atomic_load_explicit(&vp->inbox, memory_order_relaxed) != NULL) {
        /* Threads sent here (pick_local drains them too; a look comes
         * between picks). Acquire pairs with the release CAS in inbox_push. */
        ito__inbox_drain(vp, atomic_exchange_explicit(&vp->inbox, NULL, memory_order_acquire));
        readied++;
    }
    if (vp->ring && ito__ring_ready(vp->ring))
        readied += ito__ring_reap(vp->ring, false);
    uint64_t next = atomic_load_explicit(&vp->timers.next, memory_order_relaxed);
    uint64_t now = 0;
    if (next != UINT64_MAX || ito__rt.policy->tick) {
        now = ito__now_ns();
        if (next <= now)
            readied += ito__timers_run(&vp->timers, now);
        if (ito__rt.policy->tick && now - vp->last_tick_ns >= ITO__TICK_NS) {
            vp->last_tick_ns = now;
            ito__rt.policy->tick(&vp->pv);
        }
    }
    readied += ito__global_drain(vp, 8);
    ito__hooks.repin(vp);
    return readied;
}

ITO_INLINE struct ito__thread *pick_local(struct ito__vproc *vp)
{
    /* ticks tells others this vproc is making progress (idle.c). Owner-only
     * writes; relaxed is enough for a heuristic. */
    uint64_t ticks = atomic_load_explicit(&vp->ticks, memory_order_relaxed) + 1;
    atomic_store_explicit(&vp->ticks, ticks, memory_order_relaxed);
    if (ITO_UNLIKELY(vp->backlog_since))
        ito__hooks.backlog_end(vp);   /* the threads that waited get their turn */
    if (ITO_UNLIKELY(atomic_load_explicit(&vp->inbox, memory_order_relaxed) != NULL))
        /* Acquire pairs with the release CAS in inbox_push. */
        ito__inbox_drain(vp, atomic_exchange_explicit(&vp->inbox, NULL, memory_order_acquire));
    ito__deferred_poll();   /* calls signal handlers left (runtime/defer.c) */
    if (ITO_UNLIKELY(!(ticks & (ITO__PERIODIC_PICKS - 1)) || atomic_load_explicit(&vp->look, memory_order_relaxed)))
        periodic(vp);
    /* A request to give way is answered by this pick (ito_policy_preempt). */
    if (ITO_UNLIKELY(atomic_load_explicit(&vp->displace, memory_order_relaxed)))
        atomic_store_explicit(&vp->displace, false, memory_order_relaxed);
    for (;;) {
        struct ito__thread *t;
        /* Threads held here by their CPU set take every other turn while
         * the policy has threads too (affinity.c). */
        if (ITO_UNLIKELY(atomic_load_explicit(&vp->held_len, memory_order_relaxed) != 0) &&
            (vp->held_turn = !vp->held_turn)) {
            t = ito__affinity_pop(vp);
        } else {
            ito_policy_node_t *n;
            if (ITO_UNLIKELY(ito__rt.stats_cycles)) {
                uint64_t c0 = ito__cycles();
                n = ito__rt.policy->pick(&vp->pv);
                uint64_t c = ito__cycles() - c0;
                if (n)
                    __atomic_store_n(&vp->stats.decision_cycles, vp->stats.decision_cycles + c, __ATOMIC_RELAXED);
            } else {
                n = ito__rt.policy->pick(&vp->pv);
            }
            if (n)
                t = ito__thread_of_node(n);
            else if (!(t = ito__affinity_pop(vp)))
                return NULL;
        }
        if (ITO_UNLIKELY(!t))
            continue;   /* (taken meanwhile by an idle vproc: ito__affinity_steal) */
        if (ITO_UNLIKELY(ito__thread_cpus(t) != NULL) && ito__affinity_sent_on(vp, t))
            continue;
        if (ITO_LIKELY(ito__claim(t))) {
            ITO_STAT_INC(vp, decisions);
            if (ITO_UNLIKELY(!(vp->stats.decisions & (ITO__PERIODIC_PICKS - 1))))
                ito__vproc_check_busy(vp);
            return t;
        }
    }
}

struct ito__thread *ito__pick_local(struct ito__vproc *vp) { return pick_local(vp); }

/* -------------------------------------------------------------- switching */

/* Give `next` a context if it has none yet: the stack promised at its spawn
 * (stack.c: taking it cannot fail) and a frame that enters ito__thread_entry. */
static void *start_frame(struct ito__vproc *vp, struct ito__thread *next)
{
    if (!next->stack.lo)
        ito__stack_take(vp, vp->stacks, &next->stack);
    /* A reused stack may hold frames that were dropped without returning. */
    ito__san_unpoison(next->stack.lo, next->stack.size);
    if (!next->tsan_fiber)
        next->tsan_fiber = ito__tsan_create();
    next->started = true;
    return ito__ctx_make(ito__stack_top(&next->stack), ito__thread_entry, next->fpctl);
}

/* The saved stack pointer of a thread that was made ready while switching
 * out, once its switch has completed. */
static void *wait_saved(struct ito__thread *t)
{
    /* Acquire pairs with the store of ctx.sp in ito__ctx_jump (context.S). */
    void *sp = __atomic_load_n(&t->ctx.sp, __ATOMIC_ACQUIRE);
    unsigned spins = 0;
    while (ITO_UNLIKELY(!sp)) {
        ito__backoff(&spins);   /* long only if the other activation was preempted mid-switch */
        sp = __atomic_load_n(&t->ctx.sp, __ATOMIC_ACQUIRE);
    }
    ito__tsan_acquire(&t->ctx);
    t->ctx.sp = NULL;
    return sp;
}

/* Finish the switch that resumed the context running this code. */
static inline void after_resume(struct ito__thread *self, void *fake_stack)
{
    struct ito__activation *act = ito__activation_self();
    struct ito__vproc *vp = act->vp;
    ito__san_finish(fake_stack);
    struct ito__handover *h = vp ? &vp->handover : NULL;   /* none: lost its vproc (detach) */
    if (ITO_OWN_TLS && h && h->dead_tp) {
        ito__hooks.tp_done(h->dead_tp);
        h->dead_tp = 0;
    }
    if (ITO_UNLIKELY(h && (h->dead_stack.lo || h->dead))) {
        if (h->dead_stack.lo) {
            ito__stack_put(vp, vp->stacks, &h->dead_stack);
            h->dead_stack.lo = NULL;
        }
        ito__tsan_destroy(h->dead_tsan_fiber);
        h->dead_tsan_fiber = NULL;
        if (h->dead) {
            ito__thread_free(vp, h->dead);
            h->dead = NULL;
        }
    }
    if (self && !ITO_OWN_TLS)
        *act->errno_ptr = self->saved_errno;
    ito__sigmask_after(act, ito__thread_self());   /* last: a handler may run here */
}

/* ITO_OWN_TLS: run the next context — `next`, or the scheduler context if
 * NULL — on its own thread pointer. ito's thread-local variables describe the
 * kernel thread, not the context, so they are filled in the next context's
 * TLS block before the thread pointer moves there: the activation, the
 * running thread, and the critical-section depth (which travels with the
 * switch, while an ATTENTION bit does not: runtime/critical.h). The monitor
 * finds the word it may mark through act->critical_word (runtime/carrier.c),
 * which follows. A signal that arrives before the thread pointer moves sees
 * the old block, at the same depth, inside the same section. */
static inline void own_tls_switch(struct ito__activation *act, struct ito__thread *next, uint32_t depth)
{
    uintptr_t tp = next && next->tp ? next->tp : act->tp;
    if (tp == ito__arch_thread_pointer())
        return;
    *(struct ito__activation **)(tp + ito__arch_tls_offset_act()) = act;
    *(struct ito__thread **)(tp + ito__arch_tls_offset_cur()) = next;
    uint32_t *word = (uint32_t *)(tp + ito__arch_tls_offset_critical());
    *word = depth;
    __atomic_store_n(&act->critical_word, word, __ATOMIC_RELAXED);
    ito__arch_set_thread_pointer(tp);
}

/* Switch from the running context — thread `cur`, or the scheduler context
 * if cur is NULL — to `next` (claimed, RUNNING), or to the scheduler context
 * if next is NULL. If `dying`, cur is gone: its descriptor may be reused at
 * any moment, so nothing is saved into it. Returns when cur runs again. */
ITO_INLINE void switch_to(struct ito__activation *act, struct ito__thread *cur, struct ito__thread *next,
                          bool dying)
{
    struct ito__vproc *vp = act->vp;
    void *sp;
    const void *lo;
    size_t size;
    void *fiber;
    if (ITO_UNLIKELY(cur && !dying && next && next->started &&
                     !__atomic_load_n(&next->ctx.sp, __ATOMIC_ACQUIRE))) {
        /* next is still switching out somewhere: wait for it from the
         * scheduler context, not while cur is unsaved. */
        act->pending = next;
        next = NULL;
    }
    if (next) {
        sp = next->started ? wait_saved(next) : start_frame(vp, next);
        next->vp = vp;
        ito__sigmask_before(act, next);
        lo = next->stack.lo;
        size = next->stack.size;
        fiber = next->tsan_fiber;
        ITO_STAT_INC(vp, switches);
    } else {
        ito__sigmask_idle(act);   /* no thread runs here: none of its signals are handled */
        sp = act->sched.sp;
        act->sched.sp = NULL;
        lo = act->sched_stack.lo;
        size = act->sched_stack.size;
        fiber = act->sched_tsan_fiber;
    }
    if (ITO_LIKELY(vp))   /* NULL: an activation leaving its lost vproc (ito__switch_detach) */
        /* Read by ito_policy_running_priority, from other vprocs and the
         * monitor: release pairs with its acquire load, so the thread's
         * fields (written before it was queued, which this vproc's claim
         * acquired) are seen there too. */
        __atomic_store_n(&vp->current, next, __ATOMIC_RELEASE);
    ito__arch_set_current(next);
    ITO_TRACE_EVENT(run, vp ? vp->index : -1, next ? (int64_t)next->index : -1);   /* -1: its scheduler */
    /* Every switch happens inside a critical section; the depth travels with
     * the context (runtime/critical.h). */
    uint32_t depth = ito__critical_depth();
    ITO_ASSERT(depth > 0);
    if (ITO_OWN_TLS)
        own_tls_switch(act, next, depth);
    struct ito__ctx scratch;
    struct ito__ctx *from;
    void **fake_save;
    if (dying) {
        from = &scratch;
        fake_save = NULL;
    } else if (cur) {
        from = &cur->ctx;
        fake_save = &cur->asan_fake_stack;
        if (!ITO_OWN_TLS)
            cur->saved_errno = *act->errno_ptr;
    } else {
        from = &act->sched;
        fake_save = &act->sched_fake_stack;
    }
    ito__cputime_at_switch(act, dying ? NULL : cur, next);
    ito__san_start(fake_save, lo, size);
    ito__tsan_release(from);
    ito__tsan_switch(fiber);
    ito__ctx_jump(from, sp, NULL);
    /* Resumed: possibly on another activation. */
    ito__critical_restore(depth);
    after_resume(cur, cur ? cur->asan_fake_stack : ito__activation_self()->sched_fake_stack);
}

/* gave_way: cur yielded or its slice ended (it is READY, queued here); if
 * another thread was waiting for this vproc while some of the process's
 * vprocs have no processor, the process could use more (cpushare/agent.c).
 * Inside a critical section; act and vp are the caller's (read once). */
ITO_INLINE void switch_out_held(struct ito__activation *act, struct ito__vproc *vp, struct ito__thread *cur,
                                bool gave_way)
{
    /* A stack without a guard page: an overflow still in progress shows here,
     * before the scheduler's own frames go further down. */
    if (ITO_UNLIKELY(!(cur->stack.flags & (ITO__STACK_GUARDED | ITO__STACK_CALLER))) &&
        (uintptr_t)ito__arch_sp() < (uintptr_t)cur->stack.lo + ITO__STACK_MARGIN)
        ito__stack_overflowed(cur->stack_size, cur->index, cur->name);
    if (ITO_UNLIKELY(act->in_hook | act->blocking))
        ito__critical_reentered();   /* names the misuse */
    /* A vproc losing its processor runs nothing more (revoke.c). */
    struct ito__thread *next = ito__vproc_revoked(vp) ? NULL : pick_local(vp);
    if (ITO_UNLIKELY(gave_way) && next && next != cur &&
        atomic_load_explicit(&ito__rt.nrevoked, memory_order_relaxed) > 0)
        ito__hooks.want_more();
    if (next != cur)   /* cur: it was made ready again before it left: keep running */
        switch_to(act, cur, next, false);
}

void ito__switch_out(struct ito__thread *cur)
{
    ito__critical_enter();
    struct ito__activation *act = ito__activation_self();
    switch_out_held(act, act->vp, cur, false);
    ito__critical_exit();
}

void ito__yield(void)
{
    struct ito__thread *self = ito__thread_self();
    if (!self) {
        ito__libc_sched_yield();   /* a foreign kernel thread */
        return;
    }
    ito__critical_enter_outermost();   /* (not from a handler inside ito: critical.h) */
    struct ito__activation *act = ito__activation_self();
    struct ito__vproc *vp = act->vp;
    ito__thread_set_state(self, ITO__TS_RUNNING, ITO__TS_READY);
    ito__enqueue(vp, self, ITO_READY_YIELD);
    switch_out_held(act, vp, self, true);
    ito__critical_exit();
}

void ito__preempt_switch(struct ito__thread *self)
{
    ito__critical_enter();
    struct ito__vproc *vp = ito__vproc_self();
    /* Asked to look: the periodic work first, which may make threads ready
     * — a timer that fell due, threads from outside — and the policy may
     * ask this vproc to give way to one of them (ito_policy_preempt, which
     * marks this section for recovery: handled here instead). */
    unsigned readied = 0;
    bool look = atomic_load_explicit(&vp->look, memory_order_relaxed);
    if (look) {
        readied = periodic(vp);
        struct ito__activation *a = ito__activation_self();
        a->slice_pending = false;
        ito__critical_restore(1);
    }
    /* Giving way to a more urgent thread, or the end of a slice? */
    bool displaced = atomic_exchange_explicit(&vp->displace, false, memory_order_relaxed);
    if (displaced) {
        ITO_STAT_INC(vp, displacements);
    } else if (look) {
        /* The thread has computed past an overdue timer (the monitor looks
         * only then) or past a wake-up from outside: it gives way to what
         * that made ready, if anything, as at the end of its slice. */
        if (!readied && !ito__vproc_revoked(vp)) {
            ito__critical_exit();
            return;
        }
        ITO_STAT_INC(vp, preemptions);   /* made to give way in its own code */
    } else {
        /* A slice's end is a tick: timers, completions and the global queue
         * are looked at now, not after ITO__PERIODIC_PICKS more slices. */
        periodic(vp);
        ito__vproc_check_busy(vp);   /* it ran a thread for a whole slice */
    }
    ito__event(ITO_EVENT_PREEMPTED, vp, ito__thread_id(self, atomic_load_explicit(&self->ctl, memory_order_relaxed)));
    ito__thread_set_state(self, ITO__TS_RUNNING, ITO__TS_READY);
    ito__enqueue(vp, self, displaced ? ITO_READY_DISPLACED : ITO_READY_PREEMPT);
    switch_out_held(ito__activation_self(), vp, self, true);
    ito__critical_exit();
}

void ito__look_unswitched(void)
{
    /* Depth 0: this kernel thread holds none of ito's locks, and owns vp.
     * The threads the work made ready wait for this one to switch (its
     * next pick, or its slice's end). No request is left in the section
     * word: the thread may go on to sleep in an unbracketed call, and the
     * monitor takes the vproc of such a carrier only from a word at 0
     * (runtime/carrier.c). A policy's request to give way, if the work made
     * one, stays in vp->displace for the next tick. */
    ito__critical_enter();
    struct ito__vproc *vp = ito__vproc_self();
    periodic(vp);
    struct ito__activation *a = ito__activation_self();
    a->slice_pending = false;
    ito__critical_restore(0);
}

void ito__switch_out_dead(struct ito__vproc *vp, struct ito__thread *next)
{
    ITO_ASSERT(ito__critical_depth() > 0);   /* the caller's, since it chose vp */
    struct ito__activation *act = vp->act;
    if (!next)
        next = ito__pick_local(vp);
    switch_to(act, NULL, next, true);
    ito__panic("an exited thread was resumed");
}

void ito__switch_detach(struct ito__thread *cur)
{
    ito__critical_enter();
    struct ito__activation *act = ito__activation_self();
    act->requeue = cur;
    switch_to(act, cur, NULL, false);
    ito__critical_exit();
}

void ito__switch_to(struct ito__thread *cur, struct ito__thread *next)
{
    ito__critical_enter();
    switch_to(ito__activation_self(), cur, next, false);
    ito__critical_exit();
}

/* ------------------------------------------------------------- run loop */

/* The thread whose carrier lost its vproc, now saved: back to a ready queue,
 * its last vproc's (the "unblocked" event). */
static void requeue(struct ito__activation *act)
{
    struct ito__thread *t = act->requeue;
    act->requeue = NULL;
    ito__thread_set_state(t, ITO__TS_RUNNING, ITO__TS_READY);
    t->ready_reason = ITO_READY_WAKE;
    if (ito__event_hooked())
        t->flags |= ITO__TF_UNBLOCKED;   /* reported by the vproc that takes it (inbox_drain) */
    ito__send_home(ito__rt.vprocs[t->pref_vproc >= 0 ? t->pref_vproc : t->vp->index], t);
}

void ito__sched_loop(struct ito__activation *act)
{
    for (;;) {
        if (ITO_UNLIKELY(act->requeue))
            requeue(act);
        if (ITO_UNLIKELY(!act->vp))
            ito__activation_park(act);   /* returns carrying a vproc */
        struct ito__vproc *vp = act->vp;
        struct ito__thread *t = act->pending;
        if (t) {
            act->pending = NULL;   /* claimed by the thread that handed it over */
        } else {
            if (ito__vproc_revoked(vp)) {
                ito__hooks.revoked(act);
                continue;
            }
            atomic_store_explicit(&vp->run_state, ITO__VP_IDLE, memory_order_relaxed);
            if (!(t = ito__idle_find(vp)))
                continue;   /* its processor is being taken away */
            ito__hooks.repin(vp);
        }
        atomic_store_explicit(&vp->run_state, ITO__VP_BUSY, memory_order_relaxed);
        /* The Dekker pair with the monitor's sleep while every vproc idles
         * (upcall/monitor.c): BUSY stored, then its flag loaded. */
        ito__fence_light();
        if (ITO_UNLIKELY(atomic_load_explicit(&ito__rt.monitor_asleep, memory_order_relaxed) ==
                         ITO__MONITOR_ASLEEP_LONG))
            ito__carrier_wake_monitor_busy();
        switch_to(act, NULL, t, false);
        act = ito__activation_self();
    }
}

void ito__after_switch_fresh(void)
{
    after_resume(NULL, NULL);
}

/* Entry of a scheduler context made on a separate stack (the adopted
 * activation's). */
void ito__sched_entry(ito__transfer_t tr)
{
    (void)tr;
    after_resume(NULL, NULL);
    ito__critical_restore(1);   /* a scheduler context is one critical section */
    ito__sched_loop(ito__activation_self());
}

/* Entry of every thread context (see ito__ctx_make in start_frame). */
void ito__thread_entry(ito__transfer_t tr)
{
    (void)tr;
    after_resume(NULL, NULL);
    errno = 0;
    /* The switch that started us ran in the switcher's critical section; the
     * thread's own code runs outside any. */
    ito__critical_restore(0);
    struct ito__thread *self = ito__thread_self();
    void *r = self->fn(self->arg);
    ito__thread_exit(ito__thread_self(), r);
}

void ito__ctx_returned(void)
{
    ito__panic("a context's entry function returned; it must end by switching away "
               "(ito_cont_switch) or, in a thread, by returning from the thread function");
}
