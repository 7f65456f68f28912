/*
 * Blocking calls: the "blocked" and "unblocked" events for any system call.
 *
 * ito_blocking_begin() marks the calling thread's vproc as "carrier in the
 * kernel" with plain stores (no atomic read-modify-write; a futex wake only
 * when the monitor sleeps); ito_blocking_end() takes the mark back with one
 * CAS. If the call blocked long enough, the monitor (monitor.c) has meanwhile
 * CASed the mark to its spare's and given the vproc to that spare activation,
 * which runs the other threads.
 * Then the CAS fails: this activation no longer carries a vproc. Its thread
 * is saved, goes back to a ready queue — its vproc's inbox — from this
 * activation's scheduler context, and the activation parks as a spare
 * (sched.c: ito__switch_detach). The thread resumes later on some carrier.
 *
 * The mark holds the carrier's activation address, so a carrier's CAS can
 * never succeed on a later mark of another carrier of the same vproc.
 *
 * Memory order: the release store of KERNEL publishes the vproc's owner-only
 * fields to the monitor, whose acquire CAS passes them on to the spare; the
 * carrier's acq_rel CAS back to RUN orders it against the monitor's CAS.
 */
#include <ito.h>

#include "base/panic.h"
#include "core/runtime.h"
#include "core/sched.h"
#include "core/thread.h"
#include "core/vproc.h"
#include "kernel/monitor.h"

ITO_API void ito_blocking_begin(void)
{
    struct ito__activation *a = ito__activation_self();
    if (!a || !ito__rt.activations)
        return;   /* a foreign kernel thread, or hand-offs are off */
    if (a->blocking) {
        /* Nested: the outermost bracket counts. The vproc may belong to
         * another activation already: do not look at it. */
        a->blocking++;
        return;
    }
    struct ito__vproc *vp = a->vp;
    if (!vp->current)
        return;   /* the scheduler context */
    a->blocking = 1;
    a->blocked = vp->current;
    atomic_store_explicit(&vp->kcalls, atomic_load_explicit(&vp->kcalls, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&vp->kstate, (uintptr_t)a | ITO_KS_KERNEL, memory_order_release);
    /* Dekker pair with the monitor going to sleep (monitor.c): the mark is
     * stored, then the monitor's flag loaded. */
    ito__fence_light();
    if (ITO_UNLIKELY(atomic_load_explicit(&ito__rt.monitor_asleep, memory_order_relaxed)))
        ito__monitor_wake();
}

ITO_API void ito_blocking_end(void)
{
    struct ito__activation *a = ito__activation_self();
    if (!a || !ito__rt.activations)
        return;
    if (ITO_UNLIKELY(a->blocking == 0)) {
        if (!a->vp || !a->vp->current)
            return;
        ito__panic("ito_blocking_end without a matching ito_blocking_begin (thread %u \"%s\")",
                   a->vp->current->index, a->vp->current->name);
    }
    if (--a->blocking)
        return;
    struct ito__vproc *vp = a->vp;
    struct ito__thread *self = a->blocked;
    a->blocked = NULL;
    uintptr_t mark = (uintptr_t)a | ITO_KS_KERNEL;
    if (ITO_LIKELY(atomic_compare_exchange_strong_explicit(&vp->kstate, &mark, (uintptr_t)a | ITO_KS_RUN,
                                                           memory_order_acq_rel, memory_order_relaxed)))
        return;   /* still ours */
    /* The monitor gave vp to a spare: leave it alone from here on. */
    a->vp = NULL;
    ito__switch_detach(self);
}
