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
 * The POSIX face (posix/rwlock.c) also asks for reader preference (a new
 * reader waits only while a writer holds, glibc's default) and for timed
 * waits: a waiter that times out leaves the queue, and a writer that leaves
 * may let readers queued behind it in.
 *
 * Limits: a reader that unlocks without holding the lock cannot be told apart
 * from one that holds it while readers remain (EPERM only when nothing is
 * held); a thread that read-locks twice while a writer waits deadlocks, as
 * with pthreads' writer-preferring locks.
 */
#include <errno.h>

#include <ito.h>

#include "api/init.h"
#include "api/rwlock.h"
#include "runtime/critical.h"
#include "runtime/runtime.h"
#include "api/owner.h"
#include "runtime/wait.h"

#define RW_DESTROYED 0xdead4e11u
enum { TAG_READ = 1, TAG_WRITE = 2 };

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
static int rw_acquire(struct ito__rwlock *l, bool write, bool prefer_readers, uintptr_t self, bool wait,
                      uint64_t deadline, struct ito__waiter *local, struct ito__waiter **queued)
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
        if (!l->writer && (!l->waiting_writers || prefer_readers)) {
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
    ito__wait_begin(w, deadline, &l->lk, &l->q, ITO__ON_RWLOCK, l);
    *queued = w;
    return 1;
}

/* Under lk, nothing held or only readers: hand the lock to the waiters at
 * the head of the queue — the first writer if nobody reads, or every reader
 * before the first writer — linked through `next` onto *tail. A waiter whose
 * claim fails has timed out: it is skipped, its tag cleared so that it
 * knows it was taken off the queue. */
static struct ito__waiter **grant(struct ito__rwlock *l, struct ito__waiter **tail)
{
    while (!l->writer && l->q.head) {
        struct ito__waiter *w = l->q.head;
        bool write = (w->tag & 3) == TAG_WRITE;
        if (write && l->readers)
            break;
        ito__waitq_pop(&l->q);
        uintptr_t owner = w->tag & ~(uintptr_t)3;
        w->tag = 0;
        if (write)
            l->waiting_writers--;
        if (!ito__wake_claim(w))
            continue;
        if (write)
            l->writer = owner;
        else
            l->readers++;
        *tail = w;
        tail = &w->next;
    }
    return tail;
}

int ito__rwlock_lock(struct ito__rwlock *l, bool write, bool prefer_readers, bool wait, uint64_t deadline)
{
    uintptr_t self = ito__owner_self();
    struct ito__waiter local, *w = NULL;
    if (wait)
        ito__critical_none();
    ito__spin_lock(&l->lk);
    int r = rw_acquire(l, write, prefer_readers, self, wait, deadline, &local, &w);
    ito__spin_unlock(&l->lk);
    if (r != 1)
        return r;
    if (ito__wait_end(w, &l->lk, &l->q) == 0)
        return 0;   /* handed the lock */
    /* Timed out. Off the queue already (wait_end or a waker took it off);
     * a writer that leaves may let the readers behind it in. */
    struct ito__waiter *granted = NULL, **tail = &granted;
    ito__spin_lock(&l->lk);
    if (w->tag && write) {
        l->waiting_writers--;   /* wait_end took it off: nobody counted it out */
        tail = grant(l, tail);
    }
    *tail = NULL;
    ito__spin_unlock(&l->lk);
    ito__wake_finish_all(granted);
    return ETIMEDOUT;
}

static int rw_lock(ito_rwlock_t *ul, bool write, bool wait)
{
    if (!ul)
        return EINVAL;
    ito__ensure_init();
    return ito__rwlock_lock(R(ul), write, false, wait, 0);
}

ITO_API int ito_rwlock_rdlock(ito_rwlock_t *l) { return rw_lock(l, false, true); }
ITO_API int ito_rwlock_tryrdlock(ito_rwlock_t *l) { return rw_lock(l, false, false); }
ITO_API int ito_rwlock_wrlock(ito_rwlock_t *l) { return rw_lock(l, true, true); }
ITO_API int ito_rwlock_trywrlock(ito_rwlock_t *l) { return rw_lock(l, true, false); }

int ito__rwlock_unlock(struct ito__rwlock *l)
{
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
    struct ito__waiter *granted = NULL, **tail = &granted;
    if (!l->readers && !l->writer)
        tail = grant(l, tail);
    *tail = NULL;
    ito__spin_unlock(&l->lk);
    ito__wake_finish_all(granted);
    return 0;
}

ITO_API int ito_rwlock_unlock(ito_rwlock_t *ul)
{
    if (!ul)
        return EINVAL;
    return ito__rwlock_unlock(R(ul));
}
