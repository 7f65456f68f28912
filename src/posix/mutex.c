/* SPDX-License-Identifier: MIT */
/*
 * POSIX mutexes on ito's lock word.
 *
 * A pthread_mutex_t keeps glibc's size (40 bytes) and glibc's `__kind` word
 * at offset 16, so that the static initializers (PTHREAD_MUTEX_INITIALIZER,
 * PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP, ...) and the C library's
 * pthread_mutexattr_* and pthread_mutex_init encoding of the type stay valid.
 * Around it lie the three parts of ito's mutex (api/mutex.c): the word
 * (owner | WAITERS) at 0, the spinlock at 12 and the wait queue at 24, plus
 * the recursion count at 8 and the priority ceiling at 20:
 *
 *     0 word   8 count   12 lk   16 kind (glibc)   20 ceiling   24 queue (16)
 *
 * All zero is an unlocked normal mutex, as POSIX wants of the initializer.
 * A contended lock parks the ito thread (never its kernel thread); types
 * behave as POSIX and glibc say: normal (a relock by the owner deadlocks —
 * here it reports EDEADLK — and, as glibc allows, any thread may unlock it),
 * error-checking (EDEADLK, EPERM), recursive (a count; EAGAIN on overflow).
 * Priority-inheritance and -protect mutexes lock like normal ones (ito
 * threads run at the priorities the policy gives them; the ceiling is kept
 * for get/set). A process-shared mutex (PTHREAD_PROCESS_SHARED) is left to
 * the C library whole: it lives in memory another process sees and waits in
 * the kernel (the carrier blocks; ito hands its vproc on).
 *
 * Robust mutexes: each thread keeps a list of the robust mutexes it holds
 * (posix/thread.c: room for 8 in the thread, more allocated before a lock
 * is taken, waiting for memory if there is none); a thread that ends holding some marks each OWNER_DIED
 * and releases it, and the next owner gets EOWNERDEAD, as the kernel's
 * robust list does for kernel threads. Robust and process-shared at once
 * is not supported (the kernel's list is per kernel thread): ENOSYS, said.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "api/mutex.h"
#include "runtime/vproc.h"
#include "api/owner.h"
#include "base/libc.h"
#include "base/panic.h"
#include "posix/posix.h"
#include "posix/sync.h"

_Static_assert(sizeof(struct ito__pmutex) == sizeof(pthread_mutex_t), "pthread_mutex_t layout");
_Static_assert(offsetof(struct ito__pmutex, kind) == 16, "glibc keeps __kind at 16");

#define KIND_TYPE 3               /* NORMAL 0, RECURSIVE 1, ERRORCHECK 2, ADAPTIVE 3 */
#define KIND_ROBUST 16
#define KIND_PSHARED 128

/* A robust mutex's state, in the top bits of `count` (written by the owner). */
#define OWNER_DIED (1u << 31)      /* its owner ended holding it; the next gets EOWNERDEAD */
#define INCONSISTENT (1u << 30)    /* EOWNERDEAD was returned; pthread_mutex_consistent clears it */
#define NOT_RECOVERABLE (1u << 29) /* unlocked while inconsistent: unusable for good */
#define COUNT_MAX ITO__PMUTEX_COUNT_MAX

/* The C library's own mutex calls: its pthread_mutex_init encodes an
 * attribute in __kind; process-shared mutexes are left to it whole. */
static struct {
    int (*init)(pthread_mutex_t *, const pthread_mutexattr_t *);
    int (*destroy)(pthread_mutex_t *);
    int (*lock)(pthread_mutex_t *);
    int (*trylock)(pthread_mutex_t *);
    int (*timedlock)(pthread_mutex_t *, const struct timespec *);
    int (*clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
    int (*unlock)(pthread_mutex_t *);
} libc;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;

static void find_libc(void)
{
    libc.init = (int (*)(pthread_mutex_t *, const pthread_mutexattr_t *))ito__libc_symbol("pthread_mutex_init",
                                                                                        "GLIBC_2.2.5");
    libc.destroy = (int (*)(pthread_mutex_t *))ito__libc_symbol("pthread_mutex_destroy", "GLIBC_2.2.5");
    libc.lock = (int (*)(pthread_mutex_t *))ito__libc_symbol("pthread_mutex_lock", "GLIBC_2.2.5");
    libc.trylock = (int (*)(pthread_mutex_t *))ito__libc_symbol("pthread_mutex_trylock", "GLIBC_2.2.5");
    libc.timedlock = (int (*)(pthread_mutex_t *, const struct timespec *))ito__libc_symbol(
        "pthread_mutex_timedlock", "GLIBC_2.2.5");
    libc.clocklock = (int (*)(pthread_mutex_t *, clockid_t, const struct timespec *))ito__libc_symbol(
        "pthread_mutex_clocklock", "GLIBC_2.30");
    libc.unlock = (int (*)(pthread_mutex_t *))ito__libc_symbol("pthread_mutex_unlock", "GLIBC_2.2.5");
}

#define LIBC(call) (ito__libc_pthread_once(&libc_once, find_libc), libc.call)

/* A process-shared mutex is the C library's (it waits in the kernel, on a
 * word other processes see). */
static inline bool shared(const pthread_mutex_t *m)
{
    return ((const struct ito__pmutex *)m)->kind & KIND_PSHARED;
}

static inline struct ito__pmutex *PM(pthread_mutex_t *m) { return (struct ito__pmutex *)m; }

static inline int type_of(const struct ito__pmutex *m) { return m->kind & KIND_TYPE; }

ITO_POSIX_API int pthread_mutex_init(pthread_mutex_t *um, const pthread_mutexattr_t *attr)
{
    if (!um)
        return EINVAL;
    /* The C library encodes the attribute's type and flags in __kind. */
    int e = LIBC(init)(um, attr);
    if (e)
        return e;
    struct ito__pmutex *m = PM(um);
    /* glibc sets the process-shared bit in __kind for robust mutexes too:
     * ask the attribute. */
    int pshared = PTHREAD_PROCESS_PRIVATE;
    if (attr)
        pthread_mutexattr_getpshared(attr, &pshared);
    if (pshared == PTHREAD_PROCESS_SHARED && (m->kind & KIND_ROBUST)) {
        LIBC(destroy)(um);
        return ITO__POSIX_UNSUPPORTED("a robust process-shared mutex",
                                      "the kernel releases a dead process's robust mutexes by the kernel "
                                      "thread that held them, and ito threads move between kernel threads");
    }
    int protocol = PTHREAD_PRIO_NONE;
    if (attr)
        pthread_mutexattr_getprotocol(attr, &protocol);
    if (pshared == PTHREAD_PROCESS_SHARED && protocol == PTHREAD_PRIO_INHERIT) {
        LIBC(destroy)(um);
        return ITO__POSIX_UNSUPPORTED("a priority-inheritance process-shared mutex",
                                      "the kernel's priority inheritance names the owner by kernel thread ID, "
                                      "and ito threads move between kernel threads");
    }
    if (pshared == PTHREAD_PROCESS_SHARED)
        return 0;   /* the C library's from now on */
    int ceiling = 0;
    if (attr)
        pthread_mutexattr_getprioceiling(attr, &ceiling);
    int kind = m->kind & ~KIND_PSHARED;
    ito__pmutex_clear(m);
    m->kind = kind;
    m->ceiling = ceiling;
    return 0;
}

void ito__pmutex_clear(struct ito__pmutex *m)
{
    atomic_store_explicit(&m->word, 0, memory_order_relaxed);
    m->count = 0;
    ito__spin_init(&m->lk, ITO__LOCK_OBJECT);
    m->kind = 0;
    m->ceiling = 0;
    ito__waitq_init(&m->q);
}

ITO_POSIX_API int pthread_mutex_destroy(pthread_mutex_t *um)
{
    if (!um)
        return EINVAL;
    if (shared(um))
        return LIBC(destroy)(um);
    struct ito__pmutex *m = PM(um);
    uintptr_t w = 0;
    if (atomic_compare_exchange_strong_explicit(&m->word, &w, ITO__MUTEX_DESTROYED, memory_order_relaxed,
                                                memory_order_relaxed))
        return 0;
    return w & ITO__MUTEX_DESTROYED ? EINVAL : EBUSY;
}

/* ---- robust mutexes: the owner's state bits and the thread's list ---- */

/* Just acquired: report a dead owner, refuse an unrecoverable mutex. */
static int robust_acquired(struct ito__pmutex *m)
{
    if (m->count & NOT_RECOVERABLE) {
        uintptr_t self = atomic_load_explicit(&m->word, memory_order_relaxed) & ~ITO__MUTEX_WAITERS, exp = self;
        if (!atomic_compare_exchange_strong_explicit(&m->word, &exp, 0, memory_order_release, memory_order_relaxed))
            ito__lockword_unlock_slow(&m->word, &m->lk, &m->q, self);
        return ENOTRECOVERABLE;
    }
    ito__pthread_robust_add(&m->word);
    if (m->count & OWNER_DIED) {
        m->count = (m->count & ~OWNER_DIED) | INCONSISTENT;
        return EOWNERDEAD;
    }
    return 0;
}

/* About to release (the owner): off the list; inconsistent becomes lost. */
static void robust_released(struct ito__pmutex *m)
{
    ito__pthread_robust_remove(&m->word);
    if (m->count & INCONSISTENT)
        m->count = (m->count & ~INCONSISTENT) | NOT_RECOVERABLE;
}

void ito__pmutex_owner_died(void *word)
{
    struct ito__pmutex *m = (struct ito__pmutex *)word;
    m->count = (m->count & ~COUNT_MAX) | OWNER_DIED;
    uintptr_t self = atomic_load_explicit(&m->word, memory_order_relaxed) & ~ITO__MUTEX_WAITERS, exp = self;
    if (!atomic_compare_exchange_strong_explicit(&m->word, &exp, 0, memory_order_release, memory_order_relaxed))
        ito__lockword_unlock_slow(&m->word, &m->lk, &m->q, self);
}

ITO_POSIX_API int pthread_mutex_consistent(pthread_mutex_t *um)
{
    if (!um || shared(um))
        return EINVAL;
    struct ito__pmutex *m = PM(um);
    uintptr_t owner = atomic_load_explicit(&m->word, memory_order_relaxed) & ~ITO__MUTEX_WAITERS;
    if (!(m->kind & KIND_ROBUST) || owner != ito__owner_self() || !(m->count & INCONSISTENT))
        return EINVAL;
    m->count &= ~INCONSISTENT;
    return 0;
}

/* The owner relocks (or tries to). */
static int relock(struct ito__pmutex *m, bool try)
{
    switch (type_of(m)) {
    case PTHREAD_MUTEX_RECURSIVE:
        if ((m->count & COUNT_MAX) == COUNT_MAX)
            return EAGAIN;
        m->count++;
        return 0;
    case PTHREAD_MUTEX_ERRORCHECK:
        return try ? EBUSY : EDEADLK;
    default:
        return try ? EBUSY : EDEADLK;
    }
}

int ito__pmutex_lock(struct ito__pmutex *m, uint64_t deadline)
{
    ito__posix_ensure();
    if (ITO_UNLIKELY(m->kind & KIND_ROBUST))
        ito__pthread_robust_reserve();
    uintptr_t self = ito__owner_self(), exp = 0;
    int e = 0;
    /* Acquire pairs with the release of the previous unlock. */
    if (ITO_UNLIKELY(!atomic_compare_exchange_strong_explicit(&m->word, &exp, self, memory_order_acquire,
                                                              memory_order_relaxed))) {
        if ((exp & ~ITO__MUTEX_WAITERS) == self)
            return relock(m, false);
        e = ito__lockword_lock_slow(&m->word, &m->lk, &m->q, self, deadline);
        ito__posix_signals_check();   /* (sent while it waited) */
    }
    if (ITO_UNLIKELY(m->kind & KIND_ROBUST) && !e)
        e = robust_acquired(m);
    return e;
}

int ito__pmutex_unlock(struct ito__pmutex *m)
{
    uintptr_t self = ito__owner_self();
    uintptr_t w = atomic_load_explicit(&m->word, memory_order_relaxed);
    uintptr_t owner = w & ~ITO__MUTEX_WAITERS;
    if (owner != self) {
        if ((type_of(m) != PTHREAD_MUTEX_NORMAL && type_of(m) != PTHREAD_MUTEX_ADAPTIVE_NP) ||
            (m->kind & KIND_ROBUST))
            return EPERM;
        if (!owner || (w & ITO__MUTEX_DESTROYED))
            return EPERM;
        self = owner;   /* glibc lets any thread unlock a normal mutex */
    } else if (m->count & COUNT_MAX) {
        m->count--;
        return 0;
    }
    if (ITO_UNLIKELY(m->kind & KIND_ROBUST))
        robust_released(m);
    uintptr_t exp = self;
    if (ITO_LIKELY(atomic_compare_exchange_strong_explicit(&m->word, &exp, 0, memory_order_release,
                                                           memory_order_relaxed)))
        return 0;
    return ito__lockword_unlock_slow(&m->word, &m->lk, &m->q, self);
}

ITO_POSIX_API int pthread_mutex_lock(pthread_mutex_t *um)
{
    if (!um)
        return EINVAL;
    if (ITO_UNLIKELY(shared(um)))
        return LIBC(lock)(um);
    return ito__pmutex_lock(PM(um), 0);
}

ITO_POSIX_API int pthread_mutex_trylock(pthread_mutex_t *um)
{
    if (!um)
        return EINVAL;
    if (ITO_UNLIKELY(shared(um)))
        return LIBC(trylock)(um);
    ito__posix_ensure();
    struct ito__pmutex *m = PM(um);
    if (ITO_UNLIKELY(m->kind & KIND_ROBUST))
        ito__pthread_robust_reserve();
    uintptr_t self = ito__owner_self();
    uintptr_t w = atomic_load_explicit(&m->word, memory_order_relaxed);
    for (;;) {
        if (w & ITO__MUTEX_DESTROYED)
            return EINVAL;
        if ((w & ~ITO__MUTEX_WAITERS) == self)
            return relock(m, true);
        if (w & ~ITO__MUTEX_WAITERS)
            return EBUSY;
        if (atomic_compare_exchange_weak_explicit(&m->word, &w, self | w, memory_order_acquire,
                                                  memory_order_relaxed))
            return ITO_UNLIKELY(m->kind & KIND_ROBUST) ? robust_acquired(m) : 0;
    }
}

static int timedlock(pthread_mutex_t *um, clockid_t clock, const struct timespec *abstime)
{
    if (!um)
        return EINVAL;
    int e = pthread_mutex_trylock(um);
    if (e != EBUSY)
        return e;
    uint64_t deadline;
    if ((e = ito__posix_deadline(clock, abstime, &deadline)))
        return e;
    return ito__pmutex_lock(PM(um), deadline);
}

ITO_POSIX_API int pthread_mutex_timedlock(pthread_mutex_t *um, const struct timespec *abstime)
{
    if (um && shared(um))
        return LIBC(timedlock)(um, abstime);
    return timedlock(um, CLOCK_REALTIME, abstime);
}

ITO_POSIX_API int pthread_mutex_clocklock(pthread_mutex_t *um, clockid_t clock, const struct timespec *abstime)
{
    if (um && shared(um))
        return LIBC(clocklock)(um, clock, abstime);
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    return timedlock(um, clock, abstime);
}

ITO_POSIX_API int pthread_mutex_unlock(pthread_mutex_t *um)
{
    if (!um)
        return EINVAL;
    if (ITO_UNLIKELY(shared(um)))
        return LIBC(unlock)(um);
    return ito__pmutex_unlock(PM(um));
}

ITO_POSIX_API int pthread_mutex_getprioceiling(const pthread_mutex_t *um, int *ceiling)
{
    if (!um || !ceiling)
        return EINVAL;
    *ceiling = ((const struct ito__pmutex *)um)->ceiling;
    return 0;
}

ITO_POSIX_API int pthread_mutex_setprioceiling(pthread_mutex_t *um, int ceiling, int *old)
{
    if (!um)
        return EINVAL;
    int lo = sched_get_priority_min(SCHED_FIFO), hi = sched_get_priority_max(SCHED_FIFO);
    if (ceiling < lo || ceiling > hi)
        return EINVAL;
    int e = ito__pmutex_lock(PM(um), 0);
    if (e && e != EDEADLK)
        return e;
    if (old)
        *old = PM(um)->ceiling;
    PM(um)->ceiling = ceiling;
    if (!e)
        ito__pmutex_unlock(PM(um));
    return 0;
}
