/* SPDX-License-Identifier: MIT */
/*
 * Reader-writer lock, writer-preferring, all state under one spinlock.
 *
 * readers > 0: that many readers hold it; writer != 0: that owner writes.
 * A new reader waits while a writer holds or waits (so writers do not
 * starve). Release hands the lock over directly to the waiters it wakes — the
 * first waiting writer, or every reader queued before it — so woken threads
 * never have to compete again.
 *
 * Limits: a reader that unlocks without holding the lock cannot be told apart
 * from one that holds it while readers remain (EPERM only when nothing is
 * held); a thread that read-locks twice while a writer waits deadlocks, as
 * with pthreads' writer-preferring locks.
 */
#include <errno.h>

#include <ito.h>

#include "api/init.h"
#include "runtime/runtime.h"
#include "api/owner.h"
#include "runtime/wait.h"

#define RW_DESTROYED 0xdead4e11u
enum { TAG_READ = 1, TAG_WRITE = 2 };

struct ito__rwlock {
    ito__spinlock lk;
    uint32_t destroyed;
    uint32_t readers;           /* lk */
    uint32_t waiting_writers;   /* lk */
    uintptr_t writer;           /* lk */
    struct ito__waitq q;        /* lk: readers and writers, FIFO */
};

_Static_assert(sizeof(struct ito__rwlock) <= sizeof(ito_rwlock_t), "ito_rwlock_t too small");

static inline struct ito__rwlock *R(ito_rwlock_t *l) { return (struct ito__rwlock *)l; }

ITO_API int ito_rwlock_init(ito_rwlock_t *ul)
{
    if (!ul)
        return EINVAL;
    struct ito__rwlock *l = R(ul);
    ito__spin_init(&l->lk, ITO__LOCK_OBJECT);
    l->destroyed = 0;
    l->readers = l->waiting_writers = 0;
    l->writer = 0;
    ito__waitq_init(&l->q);
    return 0;
}

ITO_API int ito_rwlock_destroy(ito_rwlock_t *ul)
{
    if (!ul)
        return EINVAL;
    struct ito__rwlock *l = R(ul);
    int e = 0;
    ito__spin_lock(&l->lk);
    if (l->destroyed == RW_DESTROYED)
        e = EINVAL;
    else if (l->readers || l->writer || !ito__waitq_empty(&l->q))
        e = EBUSY;
    else
        l->destroyed = RW_DESTROYED;
    ito__spin_unlock(&l->lk);
    return e;
}

/* Under lk: a blocking or trying acquisition. Returns 0, EBUSY (would
 * block and `wait` is false), EDEADLK, EAGAIN, EINVAL; 1 means "queued". */
static int rw_acquire(struct ito__rwlock *l, bool write, uintptr_t self, bool wait, struct ito__waiter *local,
                      struct ito__waiter **queued)
{
    if (l->destroyed == RW_DESTROYED)
        return EINVAL;
    if (write) {
        if (l->writer == self)
            return EDEADLK;
        if (!l->readers && !l->writer) {
            l->writer = self;
            return 0;
        }
    } else {
        if (l->writer == self)
            return EDEADLK;
        if (!l->writer && !l->waiting_writers) {
            if (l->readers == INT32_MAX)
                return EAGAIN;
            l->readers++;
            return 0;
        }
    }
    if (!wait)
        return EBUSY;
    struct ito__waiter *w = ito__waiter_init(local);
    w->tag = self | (write ? TAG_WRITE : TAG_READ);   /* owner ids keep bits 0-1 free */
    if (write)
        l->waiting_writers++;
    ito__waitq_push(&l->q, w);
    ito__wait_begin(w, 0, &l->lk, &l->q);
    *queued = w;
    return 1;
}

static int rw_lock(ito_rwlock_t *ul, bool write, bool wait)
{
    if (!ul)
        return EINVAL;
    ito__ensure_init();
    struct ito__rwlock *l = R(ul);
    uintptr_t self = ito__owner_self();
    struct ito__waiter local, *w = NULL;
    ito__spin_lock(&l->lk);
    int r = rw_acquire(l, write, self, wait, &local, &w);
    ito__spin_unlock(&l->lk);
    if (r != 1)
        return r;
    ito__wait_end(w, &l->lk, &l->q);   /* untimed: ends only when handed the lock */
    return 0;
}

ITO_API int ito_rwlock_rdlock(ito_rwlock_t *l) { return rw_lock(l, false, true); }
ITO_API int ito_rwlock_tryrdlock(ito_rwlock_t *l) { return rw_lock(l, false, false); }
ITO_API int ito_rwlock_wrlock(ito_rwlock_t *l) { return rw_lock(l, true, true); }
ITO_API int ito_rwlock_trywrlock(ito_rwlock_t *l) { return rw_lock(l, true, false); }

ITO_API int ito_rwlock_unlock(ito_rwlock_t *ul)
{
    if (!ul)
        return EINVAL;
    struct ito__rwlock *l = R(ul);
    uintptr_t self = ito__owner_self();
    ito__spin_lock(&l->lk);
    if (l->destroyed == RW_DESTROYED) {
        ito__spin_unlock(&l->lk);
        return EINVAL;
    }
    if (l->writer == self)
        l->writer = 0;
    else if (l->readers && !l->writer)
        l->readers--;
    else {
        ito__spin_unlock(&l->lk);
        return EPERM;
    }
    /* Hand the lock to the next waiters, linked through `next` once claimed. */
    struct ito__waiter *grant = NULL, **tail = &grant;
    if (!l->readers && !l->writer && l->q.head) {
        if ((l->q.head->tag & 3) == TAG_WRITE) {
            struct ito__waiter *w = ito__waitq_pop(&l->q);
            l->waiting_writers--;
            l->writer = w->tag & ~(uintptr_t)3;
            ito__wake_claim(w);
            *tail = w;
            tail = &w->next;
        }
        while (!l->writer && l->q.head && (l->q.head->tag & 3) == TAG_READ) {
            struct ito__waiter *w = ito__waitq_pop(&l->q);
            l->readers++;
            ito__wake_claim(w);
            *tail = w;
            tail = &w->next;
        }
    }
    *tail = NULL;
    ito__spin_unlock(&l->lk);
    ito__wake_finish_all(grant);
    return 0;
}
