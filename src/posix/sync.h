/* SPDX-License-Identifier: MIT */
/* The POSIX mutex's layout (posix/mutex.c), which the condition variable
 * (posix/cond.c) releases and takes back around a wait. */
#ifndef ITO_POSIX_SYNC_H
#define ITO_POSIX_SYNC_H

#include <stdatomic.h>
#include <stdint.h>

#include "runtime/spinlock.h"
#include "runtime/wait.h"

struct ito__pmutex {
    _Atomic uintptr_t word;     /* owner | WAITERS, or DESTROYED (api/mutex.h) */
    uint32_t count;             /* recursive: holds beyond the first (the owner's); the
                                   top bits: a robust mutex's state (the owner's) */
    ito__spinlock lk;           /* protects q */
    int kind;                   /* glibc's __kind: type and flags */
    int ceiling;                /* priority ceiling (get/set only) */
    struct ito__waitq q;
};

/* The recursion count's bits of `count` (the top bits: a robust mutex's state). */
#define ITO__PMUTEX_COUNT_MAX ((1u << 29) - 1)

void ito__pmutex_clear(struct ito__pmutex *m);
/* Lock (deadline: 0 none, else ito's monotonic nanoseconds), unlock. */
int ito__pmutex_lock(struct ito__pmutex *m, uint64_t deadline);
int ito__pmutex_unlock(struct ito__pmutex *m);
/* A robust mutex (its word) whose owner is ending: release it to the next,
 * who gets EOWNERDEAD. */
void ito__pmutex_owner_died(void *word);

#endif
