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
    if (!ito__on_activation() || !ito__rt.activations)
        return;   /* a foreign kernel thread, or hand-offs are off */
    /* The bracket is a critical section: the thread stays on this kernel
     * thread until ito_blocking_end (a time slice cannot move it). */
    ito__critical_enter();
    struct ito__activation *a = ito__activation_self();
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
    atomic_store_explicit(&a->blocked, vp->current, memory_order_relaxed);
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
    if (!ito__on_activation() || !ito__rt.activations)
        return;
    if (ITO_UNLIKELY(ito__critical_depth() == 0)) {
        struct ito__thread *t = ito__thread_self();
        if (!t)
            return;
        ito__panic("ito_blocking_end without a matching ito_blocking_begin (thread %u \"%s\")",
                   t->index, t->name);
    }
    struct ito__activation *a = ito__activation_self();
    if (a->blocking == 0) {
        /* A bracket in a scheduler context (begin found no thread), or an
         * unmatched end inside one of ito's own sections. */
        if (!ito__thread_self()) {
            ito__critical_exit();
            return;
        }
        ito__panic("ito_blocking_end without a matching ito_blocking_begin (thread %u \"%s\")",
                   ito__thread_self()->index, ito__thread_self()->name);
    }
    if (--a->blocking) {
        ito__critical_exit();
        return;
    }
    struct ito__vproc *vp = a->vp;
    struct ito__thread *self = atomic_load_explicit(&a->blocked, memory_order_relaxed);
    uintptr_t mark = (uintptr_t)a | ITO_KS_KERNEL;
    bool kept = atomic_compare_exchange_strong_explicit(&vp->kstate, &mark, (uintptr_t)a | ITO_KS_RUN,
                                                        memory_order_acq_rel, memory_order_relaxed);
    atomic_store_explicit(&a->blocked, NULL, memory_order_relaxed);
    if (ITO_UNLIKELY(!kept)) {
        /* The monitor gave vp to a spare: leave it alone from here on. */
        a->vp = NULL;
        ito__switch_detach(self);
    }
    ito__critical_exit();
}
