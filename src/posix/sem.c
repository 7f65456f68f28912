/* SPDX-License-Identifier: MIT */
/*
 * POSIX unnamed semaphores on ito's (api/sem.c), and named ones left to the
 * C library.
 *
 * sem_init makes an ito semaphore in the sem_t (the same 32 bytes) and marks
 * it in a word that glibc's semaphores never set (offset 12, glibc's padding;
 * a named semaphore's file is zero there). The other calls look at the mark:
 * ito's semaphores park the ito thread; anything else — a named semaphore
 * from sem_open, which lives in a file shared between processes — goes to
 * the C library's own calls, which wait in the kernel (the carrier blocks and
 * ito hands its vproc to another, as for any blocking call). Process-shared
 * unnamed semaphores (pshared != 0) are the C library's too.
 *
 * sem_post is async-signal-safe, as POSIX requires. A handler that
 * interrupted the program's code posts as any caller does: no lock of ito's
 * is held there. One that interrupted ito's own code (a critical section,
 * which may hold this very semaphore's lock) leaves the post to the
 * scheduler (runtime/defer.c), which makes it before the interrupted thread
 * runs on; sem_destroy makes such posts first.
 */
#include <errno.h>
#include <limits.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>

#include <ito.h>

#include "base/libc.h"
#include "base/panic.h"
#include "posix/posix.h"
#include "runtime/critical.h"
#include "runtime/defer.h"

#define SEM_MARK 0x69746f73u   /* "ito" and a letter */
#define MARK_OFFSET 12

_Static_assert(sizeof(sem_t) == sizeof(ito_sem_t), "sem_t holds an ito_sem_t");

/* The C library's calls, for semaphores that are not ito's. */
static struct {
    int (*wait)(sem_t *);
    int (*trywait)(sem_t *);
    int (*timedwait)(sem_t *, const struct timespec *);
    int (*clockwait)(sem_t *, clockid_t, const struct timespec *);
    int (*post)(sem_t *);
    int (*getvalue)(sem_t *, int *);
    int (*destroy)(sem_t *);
    int (*init)(sem_t *, int, unsigned);
} libc;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;

static void find_libc(void)
{
    libc.wait = (int (*)(sem_t *))ito__libc_symbol("sem_wait", "GLIBC_2.2.5");
    libc.trywait = (int (*)(sem_t *))ito__libc_symbol("sem_trywait", "GLIBC_2.2.5");
    libc.timedwait = (int (*)(sem_t *, const struct timespec *))ito__libc_symbol("sem_timedwait", "GLIBC_2.2.5");
    libc.clockwait = (int (*)(sem_t *, clockid_t, const struct timespec *))ito__libc_symbol("sem_clockwait",
                                                                                            "GLIBC_2.30");
    libc.post = (int (*)(sem_t *))ito__libc_symbol("sem_post", "GLIBC_2.2.5");
    libc.getvalue = (int (*)(sem_t *, int *))ito__libc_symbol("sem_getvalue", "GLIBC_2.2.5");
    libc.destroy = (int (*)(sem_t *))ito__libc_symbol("sem_destroy", "GLIBC_2.2.5");
    libc.init = (int (*)(sem_t *, int, unsigned))ito__libc_symbol("sem_init", "GLIBC_2.2.5");
}

#define LIBC(call) (ito__libc_pthread_once(&libc_once, find_libc), libc.call)

static inline uint32_t *mark(sem_t *s) { return (uint32_t *)((char *)s + MARK_OFFSET); }
static inline bool ours(sem_t *s) { return s && *mark(s) == SEM_MARK; }
static inline ito_sem_t *IS(sem_t *s) { return (ito_sem_t *)s; }

/* The -1/errno convention of the semaphore calls. */
static int ret(int e)
{
    if (!e)
        return 0;
    errno = e;
    return -1;
}

ITO_POSIX_API int sem_init(sem_t *s, int pshared, unsigned value)
{
    ito__posix_ensure();
    if (!s || value > SEM_VALUE_MAX)
        return ret(EINVAL);
    if (pshared) {
        *mark(s) = 0;   /* the C library's: it does not write this word */
        return LIBC(init)(s, pshared, value);
    }
    int e = ito_sem_init(IS(s), value);
    if (!e)
        *mark(s) = SEM_MARK;
    return ret(e);
}

ITO_POSIX_API int sem_destroy(sem_t *s)
{
    if (!ours(s))
        return LIBC(destroy)(s);
    /* A post a signal handler made before this is made first. */
    ito__deferred_flush();
    return ret(ito_sem_destroy(IS(s)));
}

/* ito_sem_wait or ito_sem_timedwait as a cancellation point. */
static int cancellable(sem_t *s, const struct timespec *mono)
{
    for (;;) {
        void *cp = ito__posix_cp_enter();
        int r = ito__posix_cp_leave(cp, mono ? ito_sem_timedwait(IS(s), mono) : ito_sem_wait(IS(s)));
        if (r != ITO__CP_AGAIN && r != ITO__CP_RESTART)
            return r;   /* (EINTR: a handler without SA_RESTART ran) */
    }
}

ITO_POSIX_API int sem_wait(sem_t *s)
{
    ito__posix_ensure();
    if (!ours(s))
        return LIBC(wait)(s);
    return ret(cancellable(s, NULL));
}

ITO_POSIX_API int sem_trywait(sem_t *s)
{
    ito__posix_ensure();
    if (!ours(s))
        return LIBC(trywait)(s);
    return ret(ito_sem_trywait(IS(s)));
}

static int timedwait(sem_t *s, clockid_t clock, const struct timespec *abstime)
{
    ito__posix_ensure();
    if (ito_sem_trywait(IS(s)) == 0)
        return 0;
    uint64_t d;
    int e = ito__posix_deadline(clock, abstime, &d);
    if (e)
        return ret(e);
    if (!d)
        return ret(cancellable(s, NULL));   /* a century or more ahead */
    struct timespec mono = { (time_t)(d / 1000000000u), (long)(d % 1000000000u) };
    return ret(cancellable(s, &mono));
}

ITO_POSIX_API int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
    if (!ours(s))
        return LIBC(timedwait)(s, abstime);
    return timedwait(s, CLOCK_REALTIME, abstime);
}

ITO_POSIX_API int sem_clockwait(sem_t *s, clockid_t clock, const struct timespec *abstime)
{
    if (!ours(s))
        return LIBC(clockwait)(s, clock, abstime);
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return ret(EINVAL);
    return timedwait(s, clock, abstime);
}

static void post_deferred(void *s) { ito_sem_post(IS(s)); }

ITO_POSIX_API int sem_post(sem_t *s)
{
    if (!ours(s))
        return LIBC(post)(s);
    if (ITO_UNLIKELY(ito__critical_depth() > 0)) {
        /* A signal handler that interrupted ito's own code, which may hold
         * this semaphore's lock: the post is made by the scheduler, before
         * the interrupted thread runs on (runtime/defer.c). */
        if (!ito__defer(post_deferred, s)) {
            ito__warn("sem_post from a signal handler: %d posts already wait to be made; "
                      "this one fails with EAGAIN", ITO__DEFER_SLOTS);
            return ret(EAGAIN);
        }
        return 0;
    }
    ito__posix_ensure();
    return ret(ito_sem_post(IS(s)));
}

ITO_POSIX_API int sem_getvalue(sem_t *s, int *value)
{
    if (!ours(s))
        return LIBC(getvalue)(s, value);
    unsigned v = 0;
    int e = ito_sem_get_value(IS(s), &v);
    if (!e && value)
        *value = (int)v;
    return ret(e);
}
