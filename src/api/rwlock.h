/* SPDX-License-Identifier: MIT */
/* The reader-writer lock's layout and its two calls with every option,
 * shared with the POSIX face (posix/rwlock.c). */
#ifndef ITO_API_RWLOCK_H
#define ITO_API_RWLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/spinlock.h"
#include "runtime/wait.h"

struct ito__rwlock {
    ito__spinlock lk;
    uint32_t destroyed;
    uint32_t readers;           /* lk */
    uint32_t waiting_writers;   /* lk */
    uintptr_t writer;           /* lk */
    struct ito__waitq q;        /* lk: readers and writers, FIFO */
};

/* Take it to read or write. prefer_readers: a reader waits only while a
 * writer holds (else also while one waits); wait false: EBUSY rather than
 * wait; deadline: ito's monotonic ns, 0 none (ETIMEDOUT). Also EDEADLK,
 * EAGAIN, EINVAL. MAY SWITCH. */
int ito__rwlock_lock(struct ito__rwlock *l, bool write, bool prefer_readers, bool wait, uint64_t deadline);
int ito__rwlock_unlock(struct ito__rwlock *l);   /* EPERM, EINVAL */

#endif
