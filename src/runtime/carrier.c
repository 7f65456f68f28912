/* SPDX-License-Identifier: MIT */
/*
 * The carrier: which kernel thread runs a vproc, and how that changes.
 *
 * The invariant ([SA §3.1]): the activations running user code are exactly
 * the vprocs this process holds. A vproc's carrier is the one activation
 * allowed to run its threads and touch its owner-only fields. Linux does not
 * tell a process that a kernel thread blocked, so when a carrier sleeps in
 * the kernel while threads wait, the monitor (upcall/monitor.c) hands the
 * vproc to a spare activation; the old carrier, when it runs again, finds it
 * has lost the vproc, gives its thread back to a ready queue and becomes a
 * spare itself. This file is that protocol, whole: every write of a vproc's
 * kstate word, and both sides of every transition.
 *
 * The word. vp->kstate holds the carrier's activation address with two state
 * bits (activations are aligned):
 *     RUN     the carrier runs, or sleeps in a call nobody bracketed
 *     KERNEL  the carrier is inside ito_blocking_begin/end
 *     STEAL   the monitor is deciding whether to take the vproc of a
 *             carrier asleep outside any bracket
 * Because the address is part of the word, a carrier's CAS can never succeed
 * on a later mark of another carrier of the same vproc.
 *
 * Transitions (who writes, from -> to):
 *
 *   | writer  | from        | to          | where                           |
 *   |---------|-------------|-------------|---------------------------------|
 *   | carrier | (none)      | a|RUN       | ito__carrier_adopt: takes vp    |
 *   | carrier | (none)      | a|KERNEL    | the same, in the child of a fork|
 *   |         |             |             | made inside a bracket           |
 *   | carrier | a|RUN       | a|KERNEL    | ito_blocking_begin (a store)    |
 *   | carrier | a|KERNEL    | a|RUN       | ito_blocking_end (CAS): kept it |
 *   | monitor | a|KERNEL    | s|RUN       | ito__carrier_hand_off (CAS)     |
 *   | monitor | a|RUN       | a|STEAL     | ito__carrier_steal, step 2      |
 *   | monitor | a|STEAL     | s|RUN       | ito__carrier_steal, step 5      |
 *   | monitor | a|STEAL     | a|RUN       | ito__carrier_steal: called off  |
 *   | carrier | a|STEAL     | a|KERNEL    | ito_blocking_begin (store); the |
 *   |         |             |             | monitor's next CAS then fails   |
 *
 * A carrier learns it lost the vproc in one of two places: its CAS in
 * ito_blocking_end fails, or — after an unbracketed sleep — the next
 * critical section it enters finds the ATTENTION bit that the monitor set in
 * its critical-section word (runtime/critical.c calls ito__carrier_lost).
 * Either way it stops touching the vproc, readies its thread from its own
 * scheduler context (sched.c: ito__switch_detach) and parks as a spare
 * (activation.c). The tick's handler (upcall/preempt.c) does the same at a
 * safe point of a thread computing in its own code.
 *
 * Bracketed calls ("blocked" with the hint). ito_blocking_begin marks the
 * vproc with plain stores (no atomic read-modify-write; a futex wake only
 * when the monitor sleeps); ito_blocking_end takes the mark back with one
 * CAS. The release store of KERNEL publishes the vproc's owner-only fields
 * to the monitor, whose acquire CAS passes them on to the spare; the
 * carrier's acq_rel CAS back to RUN orders it against the monitor's CAS.
 *
 * Unbracketed calls ("blocked" without the hint): a plain read() or sleep()
 * inside a library, a page fault on a slow file mapping. The monitor
 * notices a vproc that has picked nothing while work waits and whose
 * carrier has used no CPU time, and calls ito__carrier_steal, which checks
 * from outside that the carrier sleeps outside any critical section:
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
 *      TSan build names it (a release at every section's end,
 *      runtime/critical.h, and the acquire below).
 *   5. CAS kstate carrier|STEAL -> spare|RUN, and the spare carries on.
 * If 3 or 4 fails, CAS STEAL back to RUN. The bit may then stay set on a
 * carrier that was not robbed; it finds its kstate its own and clears it.
 * This is the one place where an atomic read-modify-write meets the
 * carrier's plain ones on the same word: only the bit can be lost (or kept),
 * never the depth, and the steal is then called off. The carrier, when its
 * call returns, keeps running its thread's own code without a vproc until
 * the thread next enters a critical section — the only place a vproc is ever
 * used — or its next time slice ends at a safe point: running activations
 * exceed vprocs for about one time slice of CPU time. A tick that lands in
 * the C library is deferred, and a thread that does little but call it
 * (plain reads and writes) would hardly ever reach either; so the POSIX
 * face's blocking calls, which are the C library's while the rings are off,
 * end with a safe point (ito__critical_point, runtime/critical.h).
 *
 * Doorbells. The monitor sleeps on ito__rt.monitor_asleep; a bracket that
 * begins, and the first vproc to get busy while the monitor sleeps for good,
 * ring it (ito__carrier_wake_monitor, ito__carrier_wake_monitor_busy). A carrier is poked —
 * the time-slice signal with a tag — to look at its vproc's requests at once
 * (ito__carrier_poke: a revoked processor, a policy's request to give way).
 *
 * Rejected: a signal to the sleeping carrier (it would end a sleep() or a
 * read() with EINTR that the caller never asked for); letting the carrier
 * run on with the vproc and sorting out afterwards (two kernel threads
 * would run the vproc's queues at once); checking the vproc's owner on
 * every use (a load of a shared line in every section, not just a flag); a
 * timestamp in ito_blocking_begin (a clock read on every call).
 */
#include "base/kthread.h"
#include "base/libc.h"
#include "runtime/carrier.h"

#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <ito.h>

#include "base/backoff.h"
#include "base/futex.h"
#include "base/panic.h"
#include "base/procstat.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"
#include "runtime/sched.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

/* ------------------------------------------------------------- carrier */

void ito__carrier_adopt(struct ito__vproc *vp, struct ito__activation *a)
{
    /* Release: the monitor's acquire load of kstate sees a's fields that it
     * reads from outside (critical_word, cpu_clock, tid). */
    atomic_store_explicit(&vp->kstate, (uintptr_t)a | (a->blocking ? ITO__KS_KERNEL : ITO__KS_RUN),
                          memory_order_release);
}

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
    atomic_store_explicit(&vp->kstate, (uintptr_t)a | ITO__KS_KERNEL, memory_order_release);
    /* Dekker pair with the monitor going to sleep (upcall/monitor.c): the mark is
     * stored, then the monitor's flag loaded. */
    ito__fence_light();
    if (ITO_UNLIKELY(atomic_load_explicit(&ito__rt.monitor_asleep, memory_order_relaxed)))
        ito__carrier_wake_monitor();
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
    uintptr_t mark = (uintptr_t)a | ITO__KS_KERNEL;
    bool kept = atomic_compare_exchange_strong_explicit(&vp->kstate, &mark, (uintptr_t)a | ITO__KS_RUN,
                                                        memory_order_acq_rel, memory_order_relaxed);
    atomic_store_explicit(&a->blocked, NULL, memory_order_relaxed);
    if (ITO_UNLIKELY(!kept)) {
        /* The monitor gave vp to a spare: leave it alone from here on. */
        a->vp = NULL;
        ito__switch_detach(self);
    }
    ito__critical_exit();
}

bool ito__carrier_lost(struct ito__activation *a)
{
    struct ito__vproc *vp = a->vp;
    if (!vp)
        return false;
    for (unsigned spins = 0;;) {
        /* Acquire pairs with the monitor's final CAS (ito__carrier_steal). */
        uintptr_t ks = atomic_load_explicit(&vp->kstate, memory_order_acquire);
        if (ks != ((uintptr_t)a | ITO__KS_STEAL))
            return ito__ks_carrier(ks) != a;
        /* The monitor is deciding (a few system calls): it will see that we
         * run and call it off. */
        ito__backoff(&spins);
    }
}

void ito__carrier_leave(struct ito__activation *a, struct ito__thread *t)
{
    if (ITO_UNLIKELY(ito__thread_state(t) != ITO__TS_RUNNING))
        ito__panic("thread %u \"%s\" entered a critical section in state %d after its kernel thread "
                   "lost its vproc; a thread must leave RUNNING only inside the section that "
                   "switches it out (runtime/critical.h)", t->index, t->name, ito__thread_state(t));
    a->vp = NULL;   /* from here on this activation has no vproc */
    ito__switch_detach(t);
}

/* ------------------------------------------------------------- monitor */

bool ito__carrier_cpu_time(const struct ito__activation *a, uint64_t *ns)
{
    struct timespec ts;
    if (a->cpu_clock == (clockid_t)-1 || ito__libc_clock_gettime(a->cpu_clock, &ts) != 0)
        return false;
    *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return true;
}

static bool take_steps(struct ito__vproc *vp, struct ito__activation *carrier, struct ito__activation *spare)
{
    uint64_t c1, c2;
    /* A cheap look first: a carrier inside a section is not to be robbed. */
    if (__atomic_load_n(__atomic_load_n(&carrier->critical_word, __ATOMIC_RELAXED), __ATOMIC_RELAXED) != 0 || !ito__carrier_cpu_time(carrier, &c1) ||
        !ito__activation_tid(carrier) || !ito__procstat_asleep(ito__activation_tid(carrier)))
        return false;
    uintptr_t run = (uintptr_t)carrier | ITO__KS_RUN, steal = (uintptr_t)carrier | ITO__KS_STEAL;
    if (!atomic_compare_exchange_strong_explicit(&vp->kstate, &run, steal, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return false;   /* it began a bracketed call, or someone else took vp */
    /* With ITO_OWN_TLS the word moves at every switch (sched.c); read between
     * c1 and c2, it is the one the sleeping carrier uses. */
    uint32_t *word = __atomic_load_n(&carrier->critical_word, __ATOMIC_RELAXED);
    uint32_t old = __atomic_fetch_or(word, ITO__CRITICAL_ATTENTION, __ATOMIC_SEQ_CST);
    if (old != 0 || !ito__carrier_cpu_time(carrier, &c2) || c2 != c1) {
        /* In a section, or it ran meanwhile: call it off. A failing CAS
         * means it began a bracketed call meanwhile, which now owns kstate. */
        atomic_compare_exchange_strong_explicit(&vp->kstate, &steal, run, memory_order_release,
                                                memory_order_relaxed);
        return false;
    }
    /* Release: the spare (through the monitor's release store of park)
     * and the carrier (ito__carrier_lost's acquire) see the decision. */
    if (!atomic_compare_exchange_strong_explicit(&vp->kstate, &steal, (uintptr_t)spare | ITO__KS_RUN,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return false;   /* a bracketed call began: the carrier is awake after all */
    ito__tsan_acquire(word);   /* see step 4 */
    return true;
}

/* s carries vp from now on (kstate says so already): wake it. */
static void carry_on(struct ito__vproc *vp, struct ito__activation *s, uint64_t blocked_id, bool stall)
{
    vp->act = s;
    __atomic_store_n(&vp->current, NULL, __ATOMIC_RELAXED);   /* the spare starts in its scheduler context */
    s->vp = vp;
    s->stall_handoff = stall;
    s->handoff_thread = blocked_id;   /* the spare reports the event (activation.c) */
    /* Release pairs with the spare's acquire load in ito__activation_park. */
    atomic_store_explicit(&s->park, 1, memory_order_release);
    ito__futex_wake(&s->park, 1);
}

bool ito__carrier_hand_off(struct ito__vproc *vp, uintptr_t mark, struct ito__activation *s)
{
    /* The thread in the call, for the BLOCKED event: read before the CAS
     * (after it, the carrier may already be clearing it). If the call ends
     * meanwhile the CAS fails and this is discarded; descriptors are
     * type-stable, so reading a stale one is harmless. */
    uint64_t blocked_id = 0;
    struct ito__thread *t = atomic_load_explicit(&ito__ks_carrier(mark)->blocked, memory_order_relaxed);
    if (t)
        blocked_id = ito__thread_id(t, atomic_load_explicit(&t->ctl, memory_order_relaxed));
    /* Acquire: what the carrier wrote to vp before its release store of the
     * mark (ito_blocking_begin) is visible here, and to the spare through
     * park. The spare is the carrier from now on: the old one's CAS fails. */
    if (!atomic_compare_exchange_strong_explicit(&vp->kstate, &mark, (uintptr_t)s | ITO__KS_RUN,
                                                 memory_order_acquire, memory_order_relaxed))
        return false;   /* the call returned meanwhile */
    carry_on(vp, s, blocked_id, false);
    return true;
}

bool ito__carrier_steal(struct ito__vproc *vp, struct ito__activation *carrier, struct ito__activation *s)
{
    if (!take_steps(vp, carrier, s))
        return false;
    /* The carrier has not run since it fell asleep: its thread is vp's. */
    struct ito__thread *t = vp->current;
    carry_on(vp, s, t ? ito__thread_id(t, atomic_load_explicit(&t->ctl, memory_order_relaxed)) : 0, true);
    return true;
}

/* ----------------------------------------------------------- doorbells */

void ito__carrier_wake_monitor(void)
{
    uint32_t v = atomic_load_explicit(&ito__rt.monitor_asleep, memory_order_relaxed);
    if (v && atomic_compare_exchange_strong_explicit(&ito__rt.monitor_asleep, &v, 0, memory_order_relaxed,
                                                     memory_order_relaxed))
        ito__futex_wake(&ito__rt.monitor_asleep, 1);
}

void ito__carrier_wake_monitor_busy(void)
{
    uint32_t v = ITO__MONITOR_ASLEEP_LONG;
    if (atomic_compare_exchange_strong_explicit(&ito__rt.monitor_asleep, &v, ITO__MONITOR_WOKEN_BUSY,
                                                memory_order_relaxed, memory_order_relaxed))
        ito__futex_wake(&ito__rt.monitor_asleep, 1);
}

void ito__carrier_timer_armed(uint64_t deadline)
{
    /* The caller's fence (ito__idle_timer_armed's light one) orders the
     * heap's new `next` before this load; the monitor stores monitor_until
     * before its heavy fence and reads the heaps after: it sees the timer,
     * or this sees it asleep (idle's Dekker pair). */
    if (ITO_LIKELY(deadline + ITO__LOOK_LATE_NS >= atomic_load_explicit(&ito__rt.monitor_until, memory_order_relaxed)))
        return;
    uint32_t v = atomic_load_explicit(&ito__rt.monitor_asleep, memory_order_relaxed);
    while ((v == ITO__MONITOR_ASLEEP || v == ITO__MONITOR_ASLEEP_LONG) &&
           !atomic_compare_exchange_weak_explicit(&ito__rt.monitor_asleep, &v, ITO__MONITOR_WOKEN_TIMER,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    if (v == ITO__MONITOR_ASLEEP || v == ITO__MONITOR_ASLEEP_LONG)
        ito__futex_wake(&ito__rt.monitor_asleep, 1);
}

void ito__carrier_poke(pid_t tid)
{
    if (!ito__rt.preempt_signal)
        return;   /* no handler (ITO_ACTIVATIONS=0): it stops at its next switch */
    ito__kthread_signal(tid, ito__rt.preempt_signal, (union sigval){ .sival_int = ITO__CARRIER_POKE_TAG });
}
