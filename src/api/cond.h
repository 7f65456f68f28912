/* SPDX-License-Identifier: MIT */
/* The condition variable's layout and its two halves of a wait, shared with
 * the POSIX face (posix/cond.c), whose mutexes differ from ito's. */
#ifndef ITO_API_COND_H
#define ITO_API_COND_H

#include <stdint.h>

#include "runtime/spinlock.h"
#include "runtime/wait.h"

struct ito__cond {
    ito__spinlock lk;
    uint32_t destroyed;
    struct ito__waitq q;
};

/* Queue the caller (local: its record if a foreign kernel thread) before it
 * releases its mutex; NULL if the condition was destroyed (EINVAL). */
struct ito__waiter *ito__cond_wait_begin(struct ito__cond *c, struct ito__waiter *local, uint64_t deadline);
/* Park until signalled or the deadline (0: none); 0 or ETIMEDOUT. The caller
 * then takes its mutex back. */
int ito__cond_wait_end(struct ito__cond *c, struct ito__waiter *w);
/* Wake the first waiter, or all of them. 0, or EINVAL if destroyed. */
int ito__cond_wake(struct ito__cond *c, bool all);

#endif
