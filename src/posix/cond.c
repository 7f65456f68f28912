/* SPDX-License-Identifier: MIT */
/*
 * POSIX condition variables on ito's (api/cond.c).
 *
 * A pthread_cond_t (48 bytes) holds ito's condition (24 bytes) and the clock
 * its timed waits measure (pthread_condattr_setclock; all zero is
 * CLOCK_REALTIME, the default). A wait queues the thread, releases the POSIX
 * mutex whole (a recursive one's count is kept and given back), parks, and
 * takes the mutex back, as POSIX says, whatever woke it. Deadlines on either
 * clock become ito's monotonic deadline when the wait begins; a later step
 * of the realtime clock does not move it. A process-shared condition is
 * the C library's whole, recognized by the bit glibc sets in its __wrefs
 * (offset 36), which ito's conditions keep zero.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#include "api/cond.h"
#include "api/mutex.h"
#include "runtime/vproc.h"
#include "api/owner.h"
#include "base/libc.h"
#include "posix/posix.h"
#include "posix/sync.h"

struct ito__pcond {
    struct ito__cond c;
    int clock;
    int flags;
    uint32_t pad;
    uint32_t libc_wrefs;        /* glibc's __wrefs: bit 0 marks its process-shared conditions */
    char pad2[8];
};

/* The C library's own calls: process-shared conditions are left to it
 * whole, as their mutexes are (posix/mutex.c). */
static struct {
    int (*init)(pthread_cond_t *, const pthread_condattr_t *);
    int (*destroy)(pthread_cond_t *);
    int (*wait)(pthread_cond_t *, pthread_mutex_t *);
    int (*timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
    int (*clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
    int (*signal)(pthread_cond_t *);
    int (*broadcast)(pthread_cond_t *);
} libc;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;

static void find_libc(void)
{
    /* GLIBC_2.3.2: the condition variables of NPTL (2.2.5 names the old ones). */
    libc.init = (int (*)(pthread_cond_t *, const pthread_condattr_t *))ito__libc_symbol("pthread_cond_init",
                                                                                      "GLIBC_2.3.2");
    libc.destroy = (int (*)(pthread_cond_t *))ito__libc_symbol("pthread_cond_destroy", "GLIBC_2.3.2");
    libc.wait = (int (*)(pthread_cond_t *, pthread_mutex_t *))ito__libc_symbol("pthread_cond_wait", "GLIBC_2.3.2");
    libc.timedwait = (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))ito__libc_symbol(
        "pthread_cond_timedwait", "GLIBC_2.3.2");
    libc.clockwait = (int (*)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *))
        ito__libc_symbol("pthread_cond_clockwait", "GLIBC_2.30");
    libc.signal = (int (*)(pthread_cond_t *))ito__libc_symbol("pthread_cond_signal", "GLIBC_2.3.2");
    libc.broadcast = (int (*)(pthread_cond_t *))ito__libc_symbol("pthread_cond_broadcast", "GLIBC_2.3.2");
}

#define LIBC(call) (ito__libc_pthread_once(&libc_once, find_libc), libc.call)

static inline bool shared(pthread_cond_t *c) { return ((struct ito__pcond *)c)->libc_wrefs & 1; }

_Static_assert(sizeof(struct ito__pcond) == sizeof(pthread_cond_t), "pthread_cond_t layout");
_Static_assert(offsetof(struct ito__pcond, libc_wrefs) == 36, "glibc keeps __wrefs at 36");

static inline struct ito__pcond *PC(pthread_cond_t *c) { return (struct ito__pcond *)c; }

ITO_POSIX_API int pthread_cond_init(pthread_cond_t *uc, const pthread_condattr_t *attr)
{
    if (!uc)
        return EINVAL;
    clockid_t clock = CLOCK_REALTIME;
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr && (pthread_condattr_getclock(attr, &clock) || pthread_condattr_getpshared(attr, &pshared)))
        return EINVAL;
    if (pshared == PTHREAD_PROCESS_SHARED)
        return LIBC(init)(uc, attr);
    struct ito__pcond *c = PC(uc);
    ito__spin_init(&c->c.lk, ITO__LOCK_OBJECT);
    c->c.destroyed = 0;
    ito__waitq_init(&c->c.q);
    c->clock = (int)clock;
    c->flags = 0;
    c->libc_wrefs = 0;
    return 0;
}

ITO_POSIX_API int pthread_cond_destroy(pthread_cond_t *uc)
{
    if (!uc)
        return EINVAL;
    if (shared(uc))
        return LIBC(destroy)(uc);
    struct ito__pcond *c = PC(uc);
    int e = 0;
    ito__spin_lock(&c->c.lk);
    if (!ito__waitq_empty(&c->c.q))
        e = EBUSY;
    ito__spin_unlock(&c->c.lk);
    return e;
}

static int wait(pthread_cond_t *uc, pthread_mutex_t *um, uint64_t deadline)
{
    struct ito__pcond *c = PC(uc);
    struct ito__pmutex *m = (struct ito__pmutex *)um;
    uintptr_t self = ito__owner_self();
    if ((atomic_load_explicit(&m->word, memory_order_relaxed) & ~ITO__MUTEX_WAITERS) != self)
        return EPERM;
    /* A cancellation point: a request made already acts here, with the
     * mutex held; one made during the wait interrupts it, and acts once the
     * mutex is taken back (the cleanup handlers find it locked, as POSIX
     * says). Only the wait on the condition is interruptible, not the
     * relock. */
    void *cp = ito__posix_cp_enter();
    struct ito__waiter local;
    struct ito__waiter *w = ito__cond_wait_begin(&c->c, &local, deadline);
    if (!w) {
        ito__posix_cp_leave(cp, 0);
        return EINVAL;
    }
    /* A recursive mutex is released whole and its count given back; a
     * robust one's state bits stay with the mutex (an inconsistent one
     * released here becomes unrecoverable, as in glibc). */
    uint32_t count = m->count & ITO__PMUTEX_COUNT_MAX;
    m->count &= ~ITO__PMUTEX_COUNT_MAX;
    ito__pmutex_unlock(m);
    int r = ito__cond_wait_end(&c->c, w);
    ito__posix_cp_end(cp);
    int e = ito__pmutex_lock(m, 0);
    if (e && e != EOWNERDEAD)
        return e;
    m->count |= count;
    r = ito__posix_cp_check(r);
    if (r == EINTR || r == ITO__CP_RESTART || r == ITO__CP_AGAIN)
        r = 0;   /* a signal's handler ran, or nothing: a spurious wake-up, which POSIX allows */
    return e ? e : r;
}

ITO_POSIX_API int pthread_cond_wait(pthread_cond_t *uc, pthread_mutex_t *um)
{
    if (!uc || !um)
        return EINVAL;
    if (shared(uc))
        return LIBC(wait)(uc, um);
    return wait(uc, um, 0);
}

static int timedwait(pthread_cond_t *uc, pthread_mutex_t *um, clockid_t clock, const struct timespec *abstime)
{
    if (!uc || !um)
        return EINVAL;
    uint64_t deadline;
    int e = ito__posix_deadline(clock, abstime, &deadline);
    return e ? e : wait(uc, um, deadline);
}

ITO_POSIX_API int pthread_cond_timedwait(pthread_cond_t *uc, pthread_mutex_t *um, const struct timespec *abstime)
{
    if (uc && shared(uc))
        return LIBC(timedwait)(uc, um, abstime);
    return timedwait(uc, um, uc ? (clockid_t)PC(uc)->clock : CLOCK_REALTIME, abstime);
}

ITO_POSIX_API int pthread_cond_clockwait(pthread_cond_t *uc, pthread_mutex_t *um, clockid_t clock,
                                         const struct timespec *abstime)
{
    if (uc && shared(uc))
        return LIBC(clockwait)(uc, um, clock, abstime);
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    return timedwait(uc, um, clock, abstime);
}

ITO_POSIX_API int pthread_cond_signal(pthread_cond_t *uc)
{
    if (!uc)
        return EINVAL;
    return ITO_UNLIKELY(shared(uc)) ? LIBC(signal)(uc) : ito__cond_wake(&PC(uc)->c, false);
}

ITO_POSIX_API int pthread_cond_broadcast(pthread_cond_t *uc)
{
    if (!uc)
        return EINVAL;
    return ITO_UNLIKELY(shared(uc)) ? LIBC(broadcast)(uc) : ito__cond_wake(&PC(uc)->c, true);
}
