/* SPDX-License-Identifier: MIT */
/*
 * Futures ([STH], appendix A): a thread whose result any number of
 * threads may touch. A future is a thread descriptor with the FUTURE flag:
 * touching waits on the thread's exit like a join, but does not free it.
 * ito_future_destroy sets RELEASED; the descriptor is freed when the thread
 * has exited, the future is released and no toucher holds it. Touchers hold
 * it with a pin count in the ctl word (thread.h) while they wait and read the
 * result, so a destroy that races with a touch cannot free it under them.
 */
#include <errno.h>

#include <ito.h>

#include "api/init.h"
#include "runtime/runtime.h"
#include "runtime/thread.h"


ITO_API int ito_future_spawn(ito_future_t *f, const ito_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (!f)
        return EINVAL;
    int e = ito__ensure_init();
    return e ? e : ito__spawn(&f->id, attr, fn, arg, ITO__CTL_FUTURE, NULL);
}

/* Drop a pin; free the descriptor if that was the last thing keeping it. */
static void unpin(struct ito__thread *t)
{
    uint64_t ctl = atomic_fetch_sub_explicit(&t->ctl, ITO__CTL_PIN, memory_order_acq_rel) - ITO__CTL_PIN;
    if (ito__ctl_pins(ctl) == 0 && (ctl & ITO__CTL_RELEASED) && (ctl & ITO__CTL_EXITED))
        ito__thread_free_here(t);
}

/* Look f up and change its control word (ito__ctl_change: set, add), as
 * long as it is a future not yet released; *t and *ctl (the word before)
 * are then valid. */
static int change(ito_future_t f, uint64_t set, uint64_t add, struct ito__thread **t, uint64_t *ctl)
{
    int e = ito__ensure_init();
    if (e)
        return e;
    *t = ito__handle_lookup(f.id, ctl);
    if (!*t)
        return ESRCH;
    return ito__ctl_change(*t, f.id, ctl, ITO__CTL_FUTURE, ITO__CTL_RELEASED, ESRCH, set, add);
}

ITO_API int ito_future_touch(ito_future_t f, void **value)
{
    struct ito__thread *t;
    uint64_t ctl;
    int e = change(f, 0, ITO__CTL_PIN, &t, &ctl);
    if (e)
        return e;
    if (!(ctl & ITO__CTL_EXITED)) {
        if (t == ito__thread_self()) {
            unpin(t);
            return EDEADLK;
        }
        ito__thread_wait_exit(t);
    }
    if (value)
        *value = t->result;
    unpin(t);
    return 0;
}

ITO_API bool ito_future_ready(ito_future_t f)
{
    uint64_t ctl;
    struct ito__thread *t = ito__handle_lookup(f.id, &ctl);
    return t && (ctl & ITO__CTL_FUTURE) && !(ctl & ITO__CTL_RELEASED) && (ctl & ITO__CTL_EXITED);
}

ITO_API int ito_future_destroy(ito_future_t f)
{
    struct ito__thread *t;
    uint64_t ctl;
    int e = change(f, ITO__CTL_RELEASED, 0, &t, &ctl);
    if (e)
        return e;
    if ((ctl & ITO__CTL_EXITED) && ito__ctl_pins(ctl) == 0)
        ito__thread_free_here(t);
    return 0;
}
