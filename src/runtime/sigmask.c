/* SPDX-License-Identifier: MIT */
/*
 * Each thread's signal mask, carried by the kernel thread that runs it.
 *
 * Problem. POSIX gives every thread a signal mask of its own: a signal the
 * thread blocks is never handled on it, and a signal sent to the process
 * goes to a thread that does not block it. The kernel keeps masks per kernel
 * thread, and an ito thread runs on whichever kernel thread carries its
 * vproc at the moment, one after another on each.
 *
 * Approach. The mask is the thread's (t->sigmask), and the kernel thread
 * that runs a thread has that thread's mask: a switch to a thread whose mask
 * differs from the one the kernel thread has now (act->kmask) writes it
 * (rt_sigprocmask; in two halves around the jump: sigmask.h). So the kernel itself keeps a blocked signal from
 * the thread, delivers a signal for the process to a kernel thread whose
 * thread accepts it, and restores the mask a handler interrupted — all as
 * for a kernel thread of the C library. Threads start with their creator's
 * mask (a thread spawned from outside ito: the process's mask when ito
 * started), as pthread_create's do.
 *
 * What it costs. Nothing until a thread first changes its mask: the flag
 * ito__sigmasks_used is off and a switch does not look. After that, a load
 * and a compare per switch, and a system call per switch between threads
 * whose masks differ (programs' threads mostly share one mask: those of a
 * few signal-handling threads differ, and those mostly sleep).
 *
 * A vproc about to sleep blocks every signal on its kernel thread first
 * (ito__sigmask_idle), so that no handler runs where no thread runs. A
 * signal for the process that every running thread blocks is then kept by
 * the kernel until a thread that accepts it runs; the POSIX face routes it
 * to one that waits (posix/sigroute.c).
 *
 * Reserved: the time-slice signal, and the C library's cancellation and
 * set*id signals, are never blocked by a thread's mask: a thread that asks
 * to block them keeps them unblocked, as with the C library's threads.
 */
#include "runtime/sigmask.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/critical.h"
#include "runtime/sched.h"

_Atomic bool ito__sigmasks_used;

/* What threads spawned from outside any ito thread start with. */
uint64_t ito__sigmask_process;

/* SIGKILL and SIGSTOP cannot be blocked; 32 and 33 are the C library's. */
#define UNBLOCKABLE (ITO__SIGBIT(SIGKILL) | ITO__SIGBIT(SIGSTOP) | ITO__SIGBIT(32) | ITO__SIGBIT(33))

void ito__sigmasks_begin(void)
{
    if (atomic_load_explicit(&ito__sigmasks_used, memory_order_relaxed) ||
        atomic_exchange_explicit(&ito__sigmasks_used, true, memory_order_relaxed))
        return;
    /* The waker's side of the sleeper's Dekker pair (idle.c: it stores
     * SLEEPING, runs the heavy fence, then reads the flag to choose its
     * mask): either it sees the flag, or we see it asleep here. */
    ito__fence_light();
    for (int i = 0; i < ito__rt.nvprocs; i++)
        ito__vproc_wake(ito__rt.vprocs[i]);
}

uint64_t ito__sigmask_reserved(void)
{
    uint64_t r = UNBLOCKABLE;
    if (ito__rt.preempt_signal > 0)
        r |= ITO__SIGBIT(ito__rt.preempt_signal);
    return r;
}

static uint64_t kernel_mask(void)
{
    uint64_t m = 0;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &m, sizeof m);
    return m;
}

uint64_t ito__sigmask_of_kthread(void) { return kernel_mask() & ~ito__sigmask_reserved(); }

void ito__sigmask_init(void) { ito__sigmask_process = ito__sigmask_of_kthread(); }

void ito__sigmask_carrier_start(void)
{
    /* Once threads have masks of their own, a new kernel thread blocks all
     * until it runs one (a signal kept for the process would otherwise be
     * handled at once in its scheduler context). */
    uint64_t m = atomic_load_explicit(&ito__sigmasks_used, memory_order_relaxed) ? ~ito__sigmask_reserved()
                                                                                 : ito__sigmask_process;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &m, NULL, sizeof m);
}

void ito__sigmask_write(struct ito__activation *act, uint64_t mask)
{
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, NULL, sizeof mask);
    act->kmask = mask;
}

uint64_t ito__sigmask_self(void)
{
    struct ito__thread *t = ito__thread_self();
    return t ? ito__sigmask_of(t) : kernel_mask();
}

void ito__sigmask_change(int how, uint64_t set, uint64_t *old)
{
    set &= ~ito__sigmask_reserved();
    struct ito__thread *t = ito__thread_self();
    /* Before the thread's mask differs from another's: the next switch to
     * it anywhere writes it (ito__sigmask_before, _after). */
    ito__sigmasks_begin();
    /* The thread must not move between its mask and its kernel thread's. */
    ito__critical_enter();
    uint64_t was = ito__sigmask_of(t);
    uint64_t now = how == SIG_BLOCK ? was | set : how == SIG_UNBLOCK ? was & ~set : set;
    atomic_store_explicit(&t->sigmask, now, memory_order_relaxed);
    struct ito__activation *act = ito__activation_self();
    if (act->kmask != now)
        ito__sigmask_write(act, now);   /* a signal it now accepts is handled on return */
    ito__critical_exit();
    if (old)
        *old = was;
}

void ito__sigmask_block_all(struct ito__activation *act)
{
    uint64_t all = ~ito__sigmask_reserved();
    if (act->kmask != all)
        ito__sigmask_write(act, all);
}
