/* SPDX-License-Identifier: MIT */
/* Reporting events to the application's hook (event.c). */
#ifndef ITO_RUNTIME_EVENT_H
#define ITO_RUNTIME_EVENT_H

#include <stdatomic.h>

#include <ito.h>

#include "base/compiler.h"
#include "runtime/trace.h"
#include "runtime/vproc.h"

struct ito__vproc;
struct ito__thread;

struct ito__hook {
    ito_event_hook_t fn;
    void *arg;
    struct ito__hook *retired_next;   /* replaced records (event.c) */
};

/* The installed hook, NULL if none (event.c). */
extern _Atomic(const struct ito__hook *) ito__event_hook;

void ito__event_report(const struct ito__hook *h, ito_event_kind_t kind, struct ito__vproc *vp,
                       uint64_t thread_id);

/* Report an event on vp (the caller's vproc, inside a critical section).
 * One load when no hook is installed. Acquire pairs with the release store
 * in ito_event_hook_set: the hook's fields are visible. */
void ito__event_forked(void);   /* the child of fork (runtime/fork.c) */

static inline void ito__event(ito_event_kind_t kind, struct ito__vproc *vp, uint64_t thread_id)
{
    ITO_TRACE_UPCALL(kind, vp, thread_id);   /* preempted, vproc added or removed (runtime/trace.h) */
    const struct ito__hook *h = atomic_load_explicit(&ito__event_hook, memory_order_acquire);
    if (ITO_UNLIKELY(h != NULL))
        ito__event_report(h, kind, vp, thread_id);
}

static inline bool ito__event_hooked(void)
{
    return atomic_load_explicit(&ito__event_hook, memory_order_relaxed) != NULL;
}

#endif
