/* SPDX-License-Identifier: MIT */
/*
 * The slow paths of ito's critical sections (runtime/critical.h): what a
 * section's entry and its end do when the word's attention bit is set.
 *
 * Two parties set the bit. The tick's handler (preempt.c) sets it, with
 * slice_pending, when a time slice ends inside a section: the end of the
 * outermost section yields. The monitor (carrier.c) sets it on a kernel thread
 * asleep outside any section whose vproc it takes: the next entry — at depth
 * one, in the thread's own call into ito, before any use of a vproc — gives
 * the thread up and parks the kernel thread. A mark from a steal that was
 * called off is simply cleared. Both paths look at the vproc's owner first:
 * a stale slice_pending never lets a robbed kernel thread touch the vproc.
 */
#include "runtime/critical.h"

#include <stdio.h>

#include "base/backtrace.h"
#include "base/panic.h"
#include "runtime/sched.h"
#include "runtime/stats.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"
#include "runtime/carrier.h"

void ito__critical_attention(void)
{
    uint32_t depth = ito__critical_depth();   /* this entry's, at least 1 */
    struct ito__activation *a = ito__arch_activation();
    if (!a) {
        ito__critical_restore(depth);   /* cannot happen: nobody marks foreign threads */
        return;
    }
    if (ito__carrier_lost(a)) {
        struct ito__thread *t = ito__thread_self();
        /* The monitor marks only a kernel thread at depth zero, so this is
         * the outermost entry of a thread's call into ito. */
        if (!t || depth != 1)
            ito__panic("internal error: a kernel thread lost its vproc inside a critical section "
                       "(depth %u)", depth);
        ito__critical_restore(1);
        ito__carrier_leave(a, t);   /* returns on another activation, at depth 1 */
        return;
    }
    if (!a->slice_pending)
        ito__critical_restore(depth);   /* a steal called off */
    /* Otherwise a slice ended inside: the end of the outermost section yields. */
}

void ito__critical_recover(void)
{
    ito__critical_restore(0);   /* handled: clear the bit */
    struct ito__activation *a = ito__arch_activation();
    struct ito__thread *t = ito__thread_self();
    if (!a || !t)
        return;
    if (ito__carrier_lost(a)) {
        ito__carrier_leave(a, t);   /* a mark set while a section ran: cannot happen, but safe */
        return;
    }
    bool pending = a->slice_pending;
    a->slice_pending = false;
    if (!pending || !a->vp || ito__thread_state(t) != ITO__TS_RUNNING)
        return;   /* a steal called off, or it is switching out anyway */
    ito__critical_enter();
    if (!atomic_load_explicit(&a->vp->displace, memory_order_relaxed))
        ITO_STAT_INC(a->vp, recoveries);   /* a slice, not a policy's request (ito_policy_preempt) */
    ito__critical_exit();
    ito__preempt_switch(t);
}

void ito__critical_reentered(void)
{
    struct ito__thread *t = ito__thread_self();
    struct ito__activation *act = ito__arch_activation();
    char who[64];
    if (t)
        snprintf(who, sizeof who, "thread %u \"%s\"", t->index, t->name);
    else
        snprintf(who, sizeof who, "a kernel thread that ito did not create");
    /* The interrupted code may hold the allocator's lock: the crash report
     * that follows names no frame (naming allocates; it hung 1 run in 40). */
    if (!(act && (act->in_hook || act->blocking)))
        ito__bt_names_off();
    if (act && act->in_hook)
        ito__panic("%s called an ito function that may switch from inside an event hook; a hook runs "
                   "in ito's scheduler and must not block or switch (see ito_event_hook_set)", who);
    if (act && act->blocking)
        ito__panic("%s called an ito function that may switch between ito_blocking_begin and "
                   "ito_blocking_end; only the blocking system call itself belongs there", who);
    ito__panic("%s called an ito function that may switch or make a thread ready (ito_yield, ito_spawn, "
               "ito_join, a contended lock, a wait...) from inside ito: from a signal handler that "
               "interrupted it in an ito call, or from a policy's callback. Such functions are not "
               "async-signal-safe. Let a handler only record the signal (set a flag, write to a pipe or "
               "an eventfd; sem_post in libito-pthread) and act on it in an ito thread",
               who);
}
