/* SPDX-License-Identifier: MIT */
/*
 * Each thread's signal mask: pthread_sigmask, sigprocmask, sigpending,
 * sigsuspend, raise.
 *
 * The mask is the ito thread's, and the kernel thread that runs it carries
 * it (runtime/sigmask.c): the kernel itself then keeps a blocked signal
 * from the thread and delivers the process's signals to a kernel thread
 * whose thread accepts them. What is left to the POSIX face:
 *   - the signals sent to one thread (posix/signal.c) are ito's, kept on
 *     the thread, not on a kernel thread: one the thread blocks stays
 *     pending there (sigpending shows it, sigwait takes it) and is raised
 *     when the thread unblocks it, before pthread_sigmask returns;
 *   - raise() is such a signal, sent to the calling thread (the C library's
 *     would leave a blocked one pending on the kernel thread, which another
 *     thread may run next);
 *   - a signal for the process that no running thread accepts waits in the
 *     kernel until a thread that accepts it runs; posix/sigroute.c wakes one
 *     that waits;
 *   - a call that takes a mask (ppoll, pselect, epoll_pwait) has it as the
 *     thread's while it waits (ito__posix_mask_begin, _end);
 *   - sigsuspend waits in the kernel with the thread's mask set to the one
 *     asked for, so that a signal sent to the thread meanwhile (a poke to
 *     its kernel thread, posix/cancel.c) ends it, as a signal of the
 *     process does.
 * A kernel thread of the C library's own keeps the C library's calls.
 *
 * When ito adopts the initial thread, the signals pending on its kernel
 * thread (sent to it by the C library before ito started) become the ito
 * thread's. They are taken off that kernel thread before ito starts: once
 * adopted, the thread may be moved to another kernel thread at a switch (a
 * slice's end, or its vproc handed on while it waited in a system call),
 * and a signal left behind would wait there for whichever thread ran next.
 *
 * Limits: a signal that the kernel sends to the kernel thread itself
 * (SIGPIPE from a write, SIGXFSZ, a timer aimed at a thread ID) while the
 * running thread blocks it stays pending on that kernel thread, and is
 * handled by the next thread run there that accepts it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/libc.h"
#include "posix/posix.h"
#include "runtime/sigmask.h"
#include "runtime/vproc.h"

bool ito__posix_masks_used;

void ito__posix_sigmask_change(int how, uint64_t set, uint64_t *old)
{
    if (!__atomic_load_n(&ito__posix_masks_used, __ATOMIC_RELAXED)) {
        __atomic_store_n(&ito__posix_masks_used, true, __ATOMIC_SEQ_CST);
        ito__posix_sigroute_start();
    }
    uint64_t was;
    ito__sigmask_change(how, set, &was);
    if (old)
        *old = was;
    uint64_t now = ito__sigmask_self();
    if (was & ~now) {
        ito__posix_sigroute_accept(was & ~now);
        /* POSIX: a pending signal it unblocks is delivered before the call
         * returns. The kernel's were, as the mask was written; these are
         * the ones sent to the thread. */
        struct ito__pthread *pt = ito__pthread_self();
        if (pt)
            ito__posix_signals_raise(pt, NULL);
    }
}

void ito__posix_sigpending_take(struct ito__posix_kernel_pending *p)
{
    /* The kernel thread's own pending signals (SigPnd; ShdPnd is the
     * process's, which stay with the kernel). */
    p->n = 0;
    FILE *f = fopen("/proc/thread-self/status", "re");
    if (!f)
        return;
    char line[256];
    uint64_t mine = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "SigPnd: %" SCNx64, &mine) == 1)
            break;
    fclose(f);
    for (mine &= ~ito__sigmask_reserved(); mine; mine &= mine - 1) {
        int sig = __builtin_ctzll(mine) + 1;
        sigset_t one = ito__posix_sigset(ITO__SIGBIT(sig));
        siginfo_t si;
        struct timespec zero = { 0, 0 };
        /* The kernel takes a thread's own before the process's; each
         * queued instance of a real-time signal in turn (as many as the
         * thread's queue can hold: the rest stay with the kernel). */
        while (p->n < ITO_ARRAY_SIZE(p->e) &&
               syscall(SYS_rt_sigtimedwait, &one, &si, &zero, sizeof(uint64_t)) == sig) {
            p->e[p->n++] = (struct ito__posix_rt){ (uint8_t)sig, si.si_code == SI_QUEUE, si.si_value };
            if (sig < ITO__POSIX_SIGRT_FIRST)
                break;
        }
    }
}

void ito__posix_sigpending_adopt(struct ito__pthread *pt, const struct ito__posix_kernel_pending *p)
{
    for (unsigned i = 0; i < p->n; i++)
        ito__posix_signal_keep(pt, p->e[i].sig, p->e[i].valued ? &p->e[i].value : NULL);
}

void ito__posix_sigpending_return(const struct ito__posix_kernel_pending *p)
{
    for (unsigned i = 0; i < p->n; i++) {
        siginfo_t si = { .si_signo = p->e[i].sig, .si_code = SI_QUEUE, .si_pid = getpid(),
                         .si_uid = getuid(), .si_value = p->e[i].value };
        if (p->e[i].valued)
            syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), p->e[i].sig, &si);
        else
            syscall(SYS_tgkill, getpid(), gettid(), p->e[i].sig);
    }
}

ITO_POSIX_API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    if (!ito__thread_self())
        return ito__libc_pthread_sigmask(how, set, old);   /* a kernel thread's own mask */
    uint64_t was;
    if (!set) {
        was = ito__sigmask_self();   /* only reads: `how` does not matter */
    } else {
        if (how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
            return EINVAL;
        ito__posix_sigmask_change(how, ito__posix_sigbits(set), &was);
    }
    if (old)
        *old = ito__posix_sigset(was);
    return 0;
}

ITO_POSIX_API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    int e = pthread_sigmask(how, set, old);
    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}

ITO_POSIX_API int sigpending(sigset_t *set)
{
    struct ito__pthread *pt = ito__pthread_self();
    int r = ITO__POSIX_LIBC(sigpending, "GLIBC_2.2.5")(set);   /* the kernel's: its thread's and the process's */
    if (r == 0 && pt && ito__thread_self()) {
        uint64_t mine = atomic_load_explicit(&pt->sig_pending, memory_order_acquire) & ito__sigmask_self();
        *set = ito__posix_sigset(ito__posix_sigbits(set) | mine);
    }
    return r;
}

ITO_POSIX_API int raise(int sig)
{
    if (!ito__thread_self() || !ito__pthread_self())
        return ITO__POSIX_LIBC(raise, "GLIBC_2.2.5")(sig);
    int e = pthread_kill(pthread_self(), sig);
    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}

ITO_POSIX_API int sigsuspend(const sigset_t *mask)
{
    struct ito__pthread *pt = ito__pthread_self();
    struct ito__thread *t = ito__thread_self();
    if (!pt || !t)
        return ITO__POSIX_LIBC(sigsuspend, "GLIBC_2.2.5")(mask);
    uint64_t want = ~ito__posix_sigbits(mask) & ~ito__sigmask_reserved();
    for (;;) {
        /* What it accepts while it waits: a signal sent to it meanwhile
         * interrupts the wait (the poke leaves it pending: the loop raises
         * it). seq_cst, before it looks at its pending signals: the sender
         * sets one, then looks at this (ito__posix_signals_deliverable). */
        atomic_store(&pt->sig_waiting, want);
        uint64_t mine = atomic_load(&pt->sig_pending) & want;
        if (mine) {
            atomic_store_explicit(&pt->sig_waiting, 0, memory_order_relaxed);
            uint64_t old;
            ito__posix_sigmask_change(SIG_SETMASK, ito__posix_sigbits(mask), &old);   /* raises them */
            ito__posix_sigmask_change(SIG_SETMASK, old, NULL);
            errno = EINTR;
            return -1;
        }
        uint64_t ours = ito__sigmask_interrupts();
        int r = ITO__POSIX_LIBC(sigsuspend, "GLIBC_2.2.5")(mask);
        int e = errno;
        atomic_store_explicit(&pt->sig_waiting, 0, memory_order_relaxed);
        /* Ended by a poke, which ran no handler: look again. */
        if (r == -1 && e == EINTR && ito__sigmask_interrupts() != ours &&
            !(atomic_load(&pt->sig_pending) & want))
            continue;
        if (atomic_load(&pt->sig_pending) & want)
            continue;   /* sent while it woke: run its handler first */
        errno = e;
        return r;
    }
}

/* ------------------------------------------- the mask of a call that takes one */

bool ito__posix_mask_begin(const sigset_t *mask, uint64_t *old)
{
    uint64_t want = ito__posix_sigbits(mask);
    struct ito__pthread *pt = ito__pthread_self();
    /* Pending: sent to the thread (ito's), or to the process (the kernel's:
     * it delivers them as the mask is written). */
    uint64_t kernel = 0;
    syscall(SYS_rt_sigpending, &kernel, sizeof kernel);
    uint64_t pending = ((pt ? atomic_load(&pt->sig_pending) : 0) | kernel) & ~want & ~ito__sigmask_reserved();
    bool ends = false;
    for (; pending && !ends; pending &= pending - 1)
        ends = !ito__posix_signal_ignored(__builtin_ctzll(pending) + 1);
    ito__posix_sigmask_change(SIG_SETMASK, want, old);
    if (ends)
        errno = EINTR;
    return ends;
}

int ito__posix_mask_end(uint64_t old, int r)
{
    int e = errno;
    ito__posix_sigmask_change(SIG_SETMASK, old, NULL);   /* raises what it blocked meanwhile */
    errno = e;
    return r;
}
