/* SPDX-License-Identifier: MIT */
/*
 * POSIX reader-writer locks on ito's (api/rwlock.c).
 *
 * A pthread_rwlock_t (56 bytes) holds ito's lock (40 bytes) and keeps
 * glibc's `__flags` word at offset 48, where the attribute's kind and the
 * static initializers put it: PTHREAD_RWLOCK_PREFER_READER_NP (the default)
 * and PREFER_WRITER_NP (which glibc treats the same) let a reader in while
 * a writer waits, so a thread may take the read lock again while holding it;
 * PREFER_WRITER_NONRECURSIVE_NP makes new readers wait behind a waiting
 * writer. Timed and clock waits become ito's monotonic deadline when the
 * wait begins. A process-shared lock is the C library's whole (it waits in
 * the kernel), marked at offset 40, glibc's padding, which ito's keep zero.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#include <ito.h>

#include "api/rwlock.h"
#include "base/libc.h"
#include "posix/posix.h"

#define LIBC_MARK 0x6c696263u   /* "libc" */

struct ito__prwlock {
    struct ito__rwlock l;
    uint32_t libc_mark;         /* LIBC_MARK: the C library's (process-shared) */
    uint32_t pad;
    uint32_t kind;              /* glibc's __flags */
    uint32_t pad2;
};

_Static_assert(sizeof(struct ito__prwlock) == sizeof(pthread_rwlock_t), "pthread_rwlock_t layout");
_Static_assert(offsetof(struct ito__prwlock, kind) == 48, "glibc keeps __flags at 48");

static inline struct ito__prwlock *PR(pthread_rwlock_t *l) { return (struct ito__prwlock *)l; }

static inline bool shared(pthread_rwlock_t *l) { return PR(l)->libc_mark == LIBC_MARK; }

static inline bool prefer_readers(pthread_rwlock_t *l)
{
    return PR(l)->kind != PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

/* The C library's calls, for process-shared locks. */
static struct {
    int (*init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
    int (*destroy)(pthread_rwlock_t *);
    int (*rdlock)(pthread_rwlock_t *);
    int (*tryrdlock)(pthread_rwlock_t *);
    int (*timedrdlock)(pthread_rwlock_t *, const struct timespec *);
    int (*clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
    int (*wrlock)(pthread_rwlock_t *);
    int (*trywrlock)(pthread_rwlock_t *);
    int (*timedwrlock)(pthread_rwlock_t *, const struct timespec *);
    int (*clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
    int (*unlock)(pthread_rwlock_t *);
} libc;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;

static void find_libc(void)
{
#define FIND(field, name, version) libc.field = (__typeof__(libc.field))ito__libc_symbol(name, version)
    FIND(init, "pthread_rwlock_init", "GLIBC_2.2.5");
    FIND(destroy, "pthread_rwlock_destroy", "GLIBC_2.2.5");
    FIND(rdlock, "pthread_rwlock_rdlock", "GLIBC_2.2.5");
    FIND(tryrdlock, "pthread_rwlock_tryrdlock", "GLIBC_2.2.5");
    FIND(timedrdlock, "pthread_rwlock_timedrdlock", "GLIBC_2.2.5");
    FIND(clockrdlock, "pthread_rwlock_clockrdlock", "GLIBC_2.30");
    FIND(wrlock, "pthread_rwlock_wrlock", "GLIBC_2.2.5");
    FIND(trywrlock, "pthread_rwlock_trywrlock", "GLIBC_2.2.5");
    FIND(timedwrlock, "pthread_rwlock_timedwrlock", "GLIBC_2.2.5");
    FIND(clockwrlock, "pthread_rwlock_clockwrlock", "GLIBC_2.30");
    FIND(unlock, "pthread_rwlock_unlock", "GLIBC_2.2.5");
#undef FIND
}

#define LIBC(call) (ito__libc_pthread_once(&libc_once, find_libc), libc.call)

ITO_POSIX_API int pthread_rwlock_init(pthread_rwlock_t *ul, const pthread_rwlockattr_t *attr)
{
    if (!ul)
        return EINVAL;
    int kind = PTHREAD_RWLOCK_DEFAULT_NP, pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr && (pthread_rwlockattr_getkind_np(attr, &kind) || pthread_rwlockattr_getpshared(attr, &pshared)))
        return EINVAL;
    if (pshared == PTHREAD_PROCESS_SHARED) {
        int e = LIBC(init)(ul, attr);
        if (!e)
            PR(ul)->libc_mark = LIBC_MARK;
        return e;
    }
    struct ito__prwlock *l = PR(ul);
    ito_rwlock_init((ito_rwlock_t *)&l->l);
    l->libc_mark = 0;
    l->pad = l->pad2 = 0;
    l->kind = (uint32_t)kind;
    return 0;
}

ITO_POSIX_API int pthread_rwlock_destroy(pthread_rwlock_t *ul)
{
    if (!ul)
        return EINVAL;
    return shared(ul) ? LIBC(destroy)(ul) : ito_rwlock_destroy((ito_rwlock_t *)&PR(ul)->l);
}

static int lock(pthread_rwlock_t *ul, bool write, bool wait, clockid_t clock, const struct timespec *abstime)
{
    if (!ul)
        return EINVAL;
    ito__posix_ensure();
    struct ito__rwlock *l = &PR(ul)->l;
    if (!abstime)
        return ito__rwlock_lock(l, write, prefer_readers(ul), wait, 0);
    int e = ito__rwlock_lock(l, write, prefer_readers(ul), false, 0);
    if (e != EBUSY)
        return e;   /* taken, or an error: the time need not be valid then */
    uint64_t deadline;
    if ((e = ito__posix_deadline(clock, abstime, &deadline)))
        return e;
    return ito__rwlock_lock(l, write, prefer_readers(ul), true, deadline);
}

ITO_POSIX_API int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    return l && shared(l) ? LIBC(rdlock)(l) : lock(l, false, true, 0, NULL);
}

ITO_POSIX_API int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
    return l && shared(l) ? LIBC(tryrdlock)(l) : lock(l, false, false, 0, NULL);
}

ITO_POSIX_API int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
    if (l && shared(l))
        return LIBC(timedrdlock)(l, abstime);
    return abstime ? lock(l, false, true, CLOCK_REALTIME, abstime) : EINVAL;
}

ITO_POSIX_API int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
    if (l && shared(l))
        return LIBC(clockrdlock)(l, clock, abstime);
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    return abstime ? lock(l, false, true, clock, abstime) : EINVAL;
}

ITO_POSIX_API int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    return l && shared(l) ? LIBC(wrlock)(l) : lock(l, true, true, 0, NULL);
}

ITO_POSIX_API int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
    return l && shared(l) ? LIBC(trywrlock)(l) : lock(l, true, false, 0, NULL);
}

ITO_POSIX_API int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
    if (l && shared(l))
        return LIBC(timedwrlock)(l, abstime);
    return abstime ? lock(l, true, true, CLOCK_REALTIME, abstime) : EINVAL;
}

ITO_POSIX_API int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
    if (l && shared(l))
        return LIBC(clockwrlock)(l, clock, abstime);
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    return abstime ? lock(l, true, true, clock, abstime) : EINVAL;
}

ITO_POSIX_API int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
    if (!l)
        return EINVAL;
    return shared(l) ? LIBC(unlock)(l) : ito__rwlock_unlock(&PR(l)->l);
}
