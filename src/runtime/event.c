/* SPDX-License-Identifier: MIT */
/*
 * Events for the application ([SA §1.2]: the application customizes its
 * scheduling): processor added, thread blocked and unblocked in the kernel,
 * thread preempted.
 *
 * Each event is reported where ito learns it, on the vproc it concerns, from
 * ito's scheduler: VPROC_ADDED by the vproc's first activation before it runs
 * a thread; BLOCKED by the spare that carries the vproc on (upcall/monitor.c
 * gives it the blocked thread's id); UNBLOCKED when the vproc takes the
 * thread, whose carrier has returned from its call, from its inbox (sched.c);
 * PREEMPTED when a time slice ends (sched.c, ito__preempt_switch).
 *
 * One hook at a time: an immutable {fn, arg} record behind an atomic
 * pointer, so a reader never sees a new function with an old argument.
 * Replaced records are kept (a few bytes each): a vproc may still be calling
 * one, and nothing tells when it is done. While a hook runs, its activation
 * is marked; a switch attempted from inside aborts with a message (sched.c).
 */
#include "base/libc.h"
#include "runtime/event.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "base/clock.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

_Atomic(const struct ito__hook *) ito__event_hook;
static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ito__hook *current, *retired;   /* set_lock */

void ito__event_forked(void)
{
    /* A holder the fork left behind never unlocks it. */
    set_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
}

ITO_API int ito_event_hook_set(ito_event_hook_t fn, void *arg)
{
    struct ito__hook *h = NULL;
    if (fn) {
        h = malloc(sizeof *h);
        if (!h)
            return ENOMEM;
        h->fn = fn;
        h->arg = arg;
        h->retired_next = NULL;
    }
    ito__libc_pthread_mutex_lock(&set_lock);
    /* Release pairs with the acquire load in ito__event. */
    atomic_store_explicit(&ito__event_hook, h, memory_order_release);
    if (current) {
        current->retired_next = retired;
        retired = current;
    }
    current = h;
    ito__libc_pthread_mutex_unlock(&set_lock);
    return 0;
}

void ito__event_report(const struct ito__hook *h, ito_event_kind_t kind, struct ito__vproc *vp,
                       uint64_t thread_id)
{
    ito_event_t ev = { kind, vp->index, { thread_id }, ito__now_ns() };
    struct ito__activation *a = ito__activation_self();
    bool outer = a && !a->in_hook;
    if (outer)
        a->in_hook = true;
    h->fn(&ev, h->arg);
    if (outer)
        a->in_hook = false;
}
