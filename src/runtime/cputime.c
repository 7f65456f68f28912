/* SPDX-License-Identifier: MIT */
/*
 * Each thread's CPU time.
 *
 * The kernel counts CPU time per kernel thread; an ito thread runs on
 * whichever kernel thread carries its vproc, a slice at a time, and a kernel
 * thread runs many ito threads. So a thread's CPU time is the sum, over its
 * slices, of its carrier's CPU time between the switch that started the
 * slice and the one that ended it: the switch that starts a slice keeps the
 * carrier's CPU clock as the activation's mark, the one that ends it adds
 * the difference to the thread. Time a thread spends blocked in a system
 * call on its carrier is the carrier's CPU time too, and is counted the same
 * way.
 *
 * Cost. Reading a kernel thread's CPU clock is a system call (the vDSO has
 * no CPU clocks): on the machines measured, ten times a switch's own cost. So
 * only the threads whose CPU time someone asked for are counted (watched:
 * ito__cputime_watch, from the POSIX face's pthread_getcpuclockid and
 * CLOCK_THREAD_CPUTIME_ID): a switch reads the clock only when the thread
 * leaving or the one arriving is watched, and until the first thread is
 * watched a switch loads one flag. A thread's time counts from when it is
 * first watched: from then on for the asker itself, from its next slice for
 * a thread that runs elsewhere at that moment.
 *
 * Who writes what: a thread's total, only the kernel thread running it (at
 * the switch that ends a slice); anyone reads it (relaxed: 64 bits, never
 * torn). An activation's mark and the thread it belongs to, only that
 * activation; another thread reads them (relaxed) to estimate a running
 * thread's current slice, and drops the estimate if the slice ended
 * meanwhile. Inline joins (libito.so only) run a thread without a switch:
 * its time there is the joiner's; the POSIX face, the one reader, has none.
 */
#include <stdatomic.h>
#include <time.h>

#include "base/libc.h"
#include "runtime/cputime.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

_Atomic bool ito__cputime_on;

/* CPU time of clock c (the calling kernel thread's: CLOCK_THREAD_CPUTIME_ID). */
static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    if (ito__libc_clock_gettime(c, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ito__cputime_switch(struct ito__activation *act, struct ito__thread *cur, struct ito__thread *next)
{
    bool out = cur && atomic_load_explicit(&act->cpu_mark_for, memory_order_relaxed) == cur;
    bool in = next && atomic_load_explicit(&next->cpu_watched, memory_order_relaxed);
    if (!out && !in) {
        if (atomic_load_explicit(&act->cpu_mark_for, memory_order_relaxed))
            atomic_store_explicit(&act->cpu_mark_for, NULL, memory_order_relaxed);
        return;
    }
    uint64_t now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    if (out) {
        uint64_t mark = atomic_load_explicit(&act->cpu_mark, memory_order_relaxed);
        if (now > mark)
            atomic_store_explicit(&cur->cpu_ns, atomic_load_explicit(&cur->cpu_ns, memory_order_relaxed) + (now - mark),
                                  memory_order_relaxed);
    }
    atomic_store_explicit(&act->cpu_mark, now, memory_order_relaxed);
    atomic_store_explicit(&act->cpu_mark_for, in ? next : NULL, memory_order_relaxed);
}

void ito__cputime_watch(struct ito__thread *t)
{
    if (atomic_load_explicit(&t->cpu_watched, memory_order_relaxed))
        return;
    ito__critical_enter();
    atomic_store_explicit(&t->cpu_watched, true, memory_order_relaxed);
    atomic_store_explicit(&ito__cputime_on, true, memory_order_relaxed);
    struct ito__activation *a = ito__activation_self();
    if (a && ito__thread_self() == t) {   /* the asker's own slice counts from now */
        atomic_store_explicit(&a->cpu_mark, clock_ns(CLOCK_THREAD_CPUTIME_ID), memory_order_relaxed);
        atomic_store_explicit(&a->cpu_mark_for, t, memory_order_relaxed);
    }
    ito__critical_exit();
}

uint64_t ito__cputime_of(struct ito__thread *t)
{
    ito__critical_enter();
    uint64_t ns = atomic_load_explicit(&t->cpu_ns, memory_order_relaxed);
    struct ito__activation *self = ito__activation_self();
    if (self && ito__thread_self() == t) {
        /* The caller: its slice so far, on this kernel thread. */
        if (atomic_load_explicit(&self->cpu_mark_for, memory_order_relaxed) == t) {
            uint64_t mark = atomic_load_explicit(&self->cpu_mark, memory_order_relaxed);
            uint64_t now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
            if (now > mark)
                ns += now - mark;
        }
    } else if (ito__thread_state(t) == ITO__TS_RUNNING) {
        /* Another thread, running: its slice so far on its carrier, as far
         * as a look from outside can tell. */
        struct ito__vproc *vp = __atomic_load_n(&t->vp, __ATOMIC_RELAXED);
        struct ito__activation *a = vp ? __atomic_load_n(&vp->act, __ATOMIC_RELAXED) : NULL;
        if (a && a->cpu_clock != (clockid_t)-1 && atomic_load_explicit(&a->cpu_mark_for, memory_order_relaxed) == t) {
            uint64_t mark = atomic_load_explicit(&a->cpu_mark, memory_order_relaxed);
            uint64_t now = clock_ns(a->cpu_clock);
            /* Still the same slice (its end would have moved the total). */
            if (now > mark && ns == atomic_load_explicit(&t->cpu_ns, memory_order_relaxed))
                ns += now - mark;
        }
    }
    ito__critical_exit();
    return ns;
}
