/* SPDX-License-Identifier: MIT */
/*
 * CPU-time clocks of threads: pthread_getcpuclockid, and
 * CLOCK_THREAD_CPUTIME_ID.
 *
 * The kernel's thread CPU clocks measure kernel threads; an ito thread's
 * CPU time is ito's count (runtime/cputime.c), which starts when that
 * thread's CPU time is first asked for. So the POSIX face defines clock_gettime and
 * clock_getres: CLOCK_THREAD_CPUTIME_ID read by an ito thread, and the clock
 * pthread_getcpuclockid gives for an ito thread, are answered from that
 * count; every other clock goes to the C library unchanged (one compare,
 * then the C library's vDSO call).
 *
 * A thread's clock ID has the kernel's form for a thread CPU clock,
 * ((~tid) << 3) | 6 (29 bits of ID), with an ID above any kernel thread's
 * (pid_max is at most 2^22), which tells ito's clocks from the kernel's:
 * CLOCK_TID_MIN for the initial thread (whose descriptor is the C library's,
 * holding its kernel thread's ID), and for the others one more than that
 * plus the rank of the ID in their own descriptor (tcb.c numbers them from
 * 2^30). A clock of a thread that has exited is invalid (EINVAL), as POSIX
 * allows.
 *
 * What stays the kernel's: timers and clock_nanosleep on these clocks (the
 * kernel refuses ito's IDs: EINVAL), and CLOCK_THREAD_CPUTIME_ID in a
 * kernel thread that ito did not create.
 */
#include <errno.h>
#include <stdatomic.h>
#include <time.h>

#include "posix/posix.h"
#include "posix/tcb.h"
#include "runtime/cputime.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

#define CLOCK_TID_MIN (1 << 22)     /* no kernel thread has an ID this high; the initial thread's */
#define CLOCK_TID_MAX ((1 << 29) - 1)
#define TCB_TID_FIRST (1 << 30)     /* tcb.c's first */

static clockid_t clock_of_tid(int tid) { return (clockid_t)((~(unsigned)tid) << 3 | 6u); }

/* The thread ID in one of ito's clock IDs, or 0 for another clock. */
static int tid_of_clock(clockid_t c)
{
    if (c >= 0 || (c & 7) != 6)
        return 0;
    int tid = (int)~((unsigned)c >> 3 | 0xe0000000u);
    return tid >= CLOCK_TID_MIN ? tid : 0;
}

/* pt's clock's ID, 0 if it has none. */
static int clock_tid(struct ito__pthread *pt)
{
    if (pt->main)
        return CLOCK_TID_MIN;
    long rank = (long)ito__tcb_tid(pt->tp) - TCB_TID_FIRST;
    return rank >= 0 && rank < CLOCK_TID_MAX - CLOCK_TID_MIN ? (int)(CLOCK_TID_MIN + 1 + rank) : 0;
}

struct find {
    int tid;
    struct ito__thread *t;
};

static void match(struct ito__pthread *pt, void *arg)
{
    struct find *f = arg;
    if (!f->t && clock_tid(pt) == f->tid)
        f->t = ito__pthread_thread(pt);
}

static int libc_clock_gettime(clockid_t c, struct timespec *ts)
{
    return ITO__POSIX_LIBC(clock_gettime, "GLIBC_2.17")(c, ts);
}

ITO_POSIX_API int pthread_getcpuclockid(pthread_t th, clockid_t *clock)
{
    if (!ito__pthread_ours(th))
        return ito__libc_pthread_getcpuclockid(th, clock);
    struct ito__pthread *pt = ito__pthread_of(th);
    int tid = clock_tid(pt);
    if (!ito__pthread_thread(pt))
        return ESRCH;
    if (!tid)
        return ITO__POSIX_UNSUPPORTED("pthread_getcpuclockid", "this C library's thread descriptor does not say "
                                                               "where its thread ID is");
    ito__cputime_watch(ito__pthread_thread(pt));
    *clock = clock_of_tid(tid);
    return 0;
}

/* The ito thread whose CPU time clock c is (the caller's for
 * CLOCK_THREAD_CPUTIME_ID); NULL with *ours false for a clock that is not
 * ito's; NULL with *ours true for one of an exited thread. */
static struct ito__thread *thread_of_clock(clockid_t c, bool *ours)
{
    *ours = false;
    if (c == CLOCK_THREAD_CPUTIME_ID) {
        struct ito__thread *self = ito__thread_self();
        *ours = self != NULL;
        return self;
    }
    int tid = tid_of_clock(c);
    if (!tid)
        return NULL;
    *ours = true;
    struct find f = { tid, NULL };
    ito__pthread_each(match, &f);
    return f.t;
}

ITO_POSIX_API int clock_gettime(clockid_t c, struct timespec *ts)
{
    if (__builtin_expect(c >= 0 && c != CLOCK_THREAD_CPUTIME_ID, 1))
        return libc_clock_gettime(c, ts);
    bool ours;
    struct ito__thread *t = thread_of_clock(c, &ours);
    if (!ours)
        return libc_clock_gettime(c, ts);
    if (!t) {
        errno = EINVAL;
        return -1;
    }
    ito__cputime_watch(t);
    uint64_t ns = ito__cputime_of(t);
    ts->tv_sec = (time_t)(ns / 1000000000u);
    ts->tv_nsec = (long)(ns % 1000000000u);
    return 0;
}

ITO_POSIX_API int clock_getres(clockid_t c, struct timespec *res)
{
    bool ours = false;
    struct ito__thread *t = NULL;
    if (c < 0 || c == CLOCK_THREAD_CPUTIME_ID)
        t = thread_of_clock(c, &ours);
    if (!ours)
        return ITO__POSIX_LIBC(clock_getres, "GLIBC_2.17")(c, res);
    if (!t) {
        errno = EINVAL;
        return -1;
    }
    if (res)
        *res = (struct timespec){ 0, 1 };
    return 0;
}
