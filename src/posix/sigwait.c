/* SPDX-License-Identifier: MIT */
/*
 * Waiting for signals: sigwait, sigwaitinfo, sigtimedwait.
 *
 * A signal a thread waits for may be one sent to it (posix/signal.c: kept
 * on the ito thread) or one for the process, or one the kernel sent to the
 * kernel thread under it (both kept by the kernel). The wait takes its own
 * first; otherwise it waits in the kernel, in the C library's sigtimedwait
 * (a cancellation point of the C library's), on the kernel thread that
 * carries it — which the monitor hands its vproc's processor on from, as
 * from any call that blocks — after saying what it waits for in
 * sig_waiting. A signal sent to it then finds that, and pokes its kernel
 * thread (posix/cancel.c), which ends the kernel's wait; the loop takes it.
 * A signal for the process ends the kernel's wait by itself.
 *
 * None of the three fails with EINTR (POSIX lets sigwaitinfo and
 * sigtimedwait, and does not make them): the kernel ends their waits with
 * EINTR also for ito's own signals (pokes, time slices) and when another
 * kernel thread's mask changes (it hands the process's pending signals on),
 * which a program could not tell from a handler of its own. They wait on.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "posix/posix.h"
#include "runtime/sigmask.h"
#include "runtime/vproc.h"

/* What the kernel would report for a signal sent by a thread of this
 * process: pthread_sigqueue's (SI_QUEUE, with its value) or pthread_kill's. */
static void fill_info(siginfo_t *info, int sig, bool valued, union sigval v)
{
    memset(info, 0, sizeof *info);
    info->si_signo = sig;
    info->si_pid = getpid();
    info->si_uid = getuid();
    info->si_code = valued ? SI_QUEUE : SI_TKILL;
    if (valued)
        info->si_value = v;
}

/* Take a signal of `want` sent to pt, if there is one: its number, its
 * siginfo in *info (if asked); else 0. */
static int take_own(struct ito__pthread *pt, uint64_t want, siginfo_t *info)
{
    for (;;) {
        uint64_t p = atomic_load_explicit(&pt->sig_pending, memory_order_acquire) & want;
        if (!p)
            return 0;
        int sig = __builtin_ctzll(p) + 1;
        uint64_t bit = ITO__SIGBIT(sig);
        if (sig >= ITO__POSIX_SIGRT_FIRST) {
            /* Real-time: one queued instance, with its own value. */
            bool valued;
            union sigval v;
            if (!ito__posix_rt_take(pt, sig, &valued, &v))
                continue;   /* taken meanwhile */
            if (info)
                fill_info(info, sig, valued, v);
            return sig;
        }
        /* Acquire pairs with the sender's release or: the value is there. */
        if (!(atomic_fetch_and_explicit(&pt->sig_pending, ~bit, memory_order_acquire) & bit))
            continue;   /* taken meanwhile (a poke's handler raised it) */
        bool valued = atomic_fetch_and_explicit(&pt->sig_valued, ~bit, memory_order_acquire) & bit;
        if (info) {
            union sigval v = { 0 };
            if (valued) {
                uint64_t raw = atomic_load_explicit(&pt->sig_value[sig - 1], memory_order_relaxed);
                memcpy(&v, &raw, sizeof v);
            }
            fill_info(info, sig, valued, v);
        }
        return sig;
    }
}

static int libc_sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
    return ITO__POSIX_LIBC(sigtimedwait, "GLIBC_2.2.5")(set, info, timeout);
}

/* The wait of all three: a signal number, or -1 with errno (EAGAIN at the
 * deadline, EINVAL). */
static int wait_signal(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
    struct ito__pthread *pt = ito__pthread_self();
    if (!pt || !ito__thread_self())
        return libc_sigtimedwait(set, info, timeout);
    if (timeout && (timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000L || timeout->tv_sec < 0)) {
        errno = EINVAL;
        return -1;
    }
    uint64_t want = ito__posix_sigbits(set) & ~ito__sigmask_reserved();
    uint64_t deadline = timeout ? ito__now_ns() + (uint64_t)timeout->tv_sec * 1000000000u + (uint64_t)timeout->tv_nsec : 0;
    ito__posix_sigroute_accept(want);
    for (;;) {
        int sig = take_own(pt, want, info);
        if (sig)
            return sig;
        /* seq_cst, then look again: the sender sets sig_pending, then looks
         * at this (ito__posix_signals_deliverable). */
        atomic_store(&pt->sig_waiting, want);
        if ((sig = take_own(pt, want, info))) {
            atomic_store_explicit(&pt->sig_waiting, 0, memory_order_relaxed);
            return sig;
        }
        struct timespec left, *lp = NULL;
        if (timeout) {
            uint64_t now = ito__now_ns();
            uint64_t ns = now < deadline ? deadline - now : 0;
            left.tv_sec = (time_t)(ns / 1000000000u);
            left.tv_nsec = (long)(ns % 1000000000u);
            lp = &left;
        }
        int r = libc_sigtimedwait(set, info, lp);
        int e = errno;
        atomic_store_explicit(&pt->sig_waiting, 0, memory_order_relaxed);
        if (r > 0)
            return r;
        if (e != EINTR) {
            if (e == EAGAIN && (sig = take_own(pt, want, info)))
                return sig;
            errno = e;
            return -1;
        }
        /* EINTR: a poke (a signal sent to it: the loop takes it), a
         * handler, or a wake-up with nothing for it: wait on. */
    }
}

ITO_POSIX_API int sigwait(const sigset_t *set, int *sig)
{
    int r = wait_signal(set, NULL, NULL);
    if (r < 0)
        return errno;
    *sig = r;
    return 0;
}

ITO_POSIX_API int sigwaitinfo(const sigset_t *set, siginfo_t *info) { return wait_signal(set, info, NULL); }

ITO_POSIX_API int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
    return wait_signal(set, info, timeout);
}
