/* SPDX-License-Identifier: MIT */
/* Per-vproc timers: a binary min-heap of (deadline, thread, wait seq) under a
 * spinlock, and a list beside it for when the heap cannot grow. See timer.c. */
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
    struct ito__thread *spill;    /* timers the heap had no room for (lock) */
    uint64_t spill_min;           /* at most their earliest deadline (lock) */
};

/* A thread's timer in a heap's spill list (timer.c), kept in the thread:
 * a thread has at most one there. */
struct ito__timer_spill {
    struct ito__timer_heap *_Atomic in;   /* whose list holds it, NULL: none (set under that lock) */
    struct ito__thread *next, *prev;      /* that heap's lock */
    uint64_t deadline, seq;               /* that heap's lock */
};

/* Arm a timer on vp (the caller's vproc). Never fails: with no memory to
 * grow the heap, the timer waits in the spill list. */
void ito__timer_arm(struct ito__vproc *vp, uint64_t deadline, struct ito__thread *t, uint64_t seq);
/* Fire the expired timers of `heap` (if its lock is free); returns how many. */
unsigned ito__timers_run(struct ito__timer_heap *heap, uint64_t now);
/* Earliest pending deadline over all vprocs, UINT64_MAX if none. */
uint64_t ito__timers_earliest(void);

#endif
