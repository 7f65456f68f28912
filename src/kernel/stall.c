/*
 * Stalls: blocking that nobody bracketed ("blocked", without the hint).
 *
 * Problem. A thread may block in the kernel without ito_blocking_begin: a
 * plain read() or sleep() inside a library, a page fault on a slow file
 * mapping. Its kernel thread — the vproc's carrier — sleeps, and the vproc
 * runs nothing however many threads are ready. Seed 000 has the kernel
 * upcall on a page fault; Linux tells nobody.
 *
 * Approach. The monitor (monitor.c) notices a vproc that has picked no
 * thread for ITO_STALL_NS while work waits and whose carrier has used no
 * CPU time meanwhile, and calls ito__stall_take. That checks, from outside,
 * that the carrier sleeps in the kernel outside any of ito's critical
 * sections, and hands the vproc to a spare activation as for a bracketed
 * call. The carrier, when its call returns, keeps running its thread's own
 * code without a vproc until the thread next enters a critical section —
 * the only place a vproc is ever used (base/critical.h) — or until its next
 * time slice ends; there it gives the thread back to a ready queue of the
 * vproc and parks as a spare. So running activations exceed vprocs for at
 * most one time slice of CPU time.
 *
 * Taking the vproc, step by step (monitor side):
 *   1. /proc/self/task/TID/stat says the carrier sleeps (S or D), and its
 *      CPU-time clock reads c1.
 *   2. CAS kstate carrier|RUN -> carrier|STEAL: from now on a carrier that
 *      looks at kstate waits for the decision, and a bracketed call that
 *      begins overwrites STEAL, which makes the final CAS fail.
 *   3. Atomically OR the ATTENTION bit into the carrier's critical-section
 *      word; the old value must be 0 (depth 0, nothing pending).
 *   4. The carrier's CPU clock still reads c1: it executed no instruction
 *      between 1 and 4, so the OR did not race with its own plain updates
 *      of the word and the depth it returned is the carrier's true depth.
 *      Its writes to the vproc happen before our reads: the kernel switched
 *      it out under its runqueue's lock, and reading its CPU clock takes
 *      that lock (task_rq_lock). ThreadSanitizer does not see that; the
 *      TSan build names it (a release at every section's end, base/
 *      critical.h, and the acquire below).
 *   5. CAS kstate carrier|STEAL -> spare|RUN, and the spare carries on.
 * If 3 or 4 fails, CAS STEAL back to RUN. The bit may then stay set on a
 * carrier that was not robbed; it finds its kstate its own and clears it.
 * This is the one place where an atomic read-modify-write meets the
 * carrier's plain ones on the same word: only the bit can be lost (or kept),
 * never the depth, and the steal is then called off.
 *
 * Carrier side. The entry of a section sees the bit (base/critical.h) and
 * calls ito__stall_lost, which compares kstate with its own activation
 * (waiting while a decision is in progress). Lost: the thread — RUNNING, at
 * the outermost entry, in ito's own code — goes to its vproc's inbox from
 * the activation's scheduler context, like a thread whose bracketed call
 * outlived its vproc (sched.c: ito__switch_detach), and the activation
 * parks. The tick's handler does the same at a safe point of the thread's
 * own code (preempt.c).
 *
 * Rejected: a signal to the sleeping carrier (it would end a sleep() or a
 * read() with EINTR that the caller never asked for); letting the carrier
 * run on with the vproc and sorting out afterwards (two kernel threads
 * would run the vproc's queues at once); checking the vproc's owner on
 * every use (a load of a shared line in every section, not just a flag).
 */
#include "kernel/stall.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "base/panic.h"
#include "base/procstat.h"
#include "core/runtime.h"
#include "core/sanitizer.h"
#include "core/sched.h"
#include "core/thread.h"
#include "core/vproc.h"

/* ------------------------------------------------------------- monitor */

bool ito__stall_cpu_time(const struct ito__activation *a, uint64_t *ns)
{
    struct timespec ts;
    if (a->cpu_clock == (clockid_t)-1 || clock_gettime(a->cpu_clock, &ts) != 0)
        return false;
    *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return true;
}


bool ito__stall_take(struct ito__vproc *vp, struct ito__activation *carrier, struct ito__activation *spare)
{
    uint64_t c1, c2;
    /* A cheap look first: a carrier inside a section is not to be robbed. */
    if (__atomic_load_n(carrier->critical_word, __ATOMIC_RELAXED) != 0 || !ito__stall_cpu_time(carrier, &c1) ||
        !ito__activation_tid(carrier) || !ito__procstat_asleep(ito__activation_tid(carrier)))
        return false;
    uintptr_t run = (uintptr_t)carrier | ITO_KS_RUN, steal = (uintptr_t)carrier | ITO_KS_STEAL;
    if (!atomic_compare_exchange_strong_explicit(&vp->kstate, &run, steal, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return false;   /* it began a bracketed call, or someone else took vp */
    uint32_t old = __atomic_fetch_or(carrier->critical_word, ITO_CRITICAL_ATTENTION, __ATOMIC_SEQ_CST);
    if (old != 0 || !ito__stall_cpu_time(carrier, &c2) || c2 != c1) {
        /* In a section, or it ran meanwhile: call it off. A failing CAS
         * means it began a bracketed call meanwhile, which now owns kstate. */
        atomic_compare_exchange_strong_explicit(&vp->kstate, &steal, run, memory_order_release,
                                                memory_order_relaxed);
        return false;
    }
    /* Release: the spare (through the monitor's release store of park)
     * and the carrier (ito__stall_lost's acquire) see the decision. */
    if (!atomic_compare_exchange_strong_explicit(&vp->kstate, &steal, (uintptr_t)spare | ITO_KS_RUN,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return false;   /* a bracketed call began: the carrier is awake after all */
    ito__tsan_acquire(carrier->critical_word);   /* see step 4 */
    spare->stall_handoff = true;
    return true;
}

/* ------------------------------------------------------------- carrier */

bool ito__stall_lost(struct ito__activation *a)
{
    struct ito__vproc *vp = a->vp;
    if (!vp)
        return false;
    for (unsigned spins = 0;; spins++) {
        /* Acquire pairs with the monitor's final CAS (ito__stall_take). */
        uintptr_t ks = atomic_load_explicit(&vp->kstate, memory_order_acquire);
        if (ks != ((uintptr_t)a | ITO_KS_STEAL))
            return ito__ks_carrier(ks) != a;
        /* The monitor is deciding (a few system calls): it will see that we
         * run and call it off. */
        if (spins < 1024)
            ito__cpu_relax();
        else
            sched_yield();
    }
}

void ito__stall_leave(struct ito__activation *a, struct ito__thread *t)
{
    if (ITO_UNLIKELY(ito__thread_state(t) != ITO_TS_RUNNING))
        ito__panic("thread %u \"%s\" entered a critical section in state %d after its kernel thread "
                   "lost its vproc; a thread must leave RUNNING only inside the section that "
                   "switches it out (base/critical.h)", t->index, t->name, ito__thread_state(t));
    a->vp = NULL;   /* from here on this activation has no vproc */
    ito__switch_detach(t);
}
