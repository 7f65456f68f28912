/* SPDX-License-Identifier: MIT */
/* Per-vproc timers: a binary min-heap of (deadline, thread, wait seq) under a
 * spinlock. See timer.c. */
#ifndef ITO_RUNTIME_TIMER_H
#define ITO_RUNTIME_TIMER_H

#include <stdatomic.h>
#include <stdint.h>

#include "runtime/spinlock.h"

struct ito__thread;
struct ito__vproc;

struct ito__timer {
    uint64_t deadline;
    struct ito__thread *thread;
    uint64_t seq;                 /* the wait this timer ends */
};

struct ito__timer_heap {
    ito__spinlock lock;
    struct ito__timer *heap;      /* lock */
    uint32_t len, cap;            /* lock */
    _Atomic uint64_t next;        /* earliest deadline, UINT64_MAX if none (written under lock) */
};

/* Arm a timer on vp (the caller's vproc). ENOMEM only if the heap cannot grow. */
int ito__timer_arm(struct ito__vproc *vp, uint64_t deadline, struct ito__thread *t, uint64_t seq);
/* Fire the expired timers of `heap` (if its lock is free); returns how many. */
unsigned ito__timers_run(struct ito__timer_heap *heap, uint64_t now);
/* Earliest pending deadline over all vprocs, UINT64_MAX if none. */
uint64_t ito__timers_earliest(void);

#endif
