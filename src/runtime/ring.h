/* SPDX-License-Identifier: MIT */
/* Per-vproc io_uring rings: issuing requests for parked threads, reaping
 * completions, and sleeping on completions and wake-ups together. See ring.c. */
#ifndef ITO_RUNTIME_RING_H
#define ITO_RUNTIME_RING_H

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/compiler.h"
#include "runtime/spinlock.h"

struct ito__thread;
struct ito__vproc;

struct ito__ring {
    ito__spinlock lock;          /* the SQ, the CQ and every request's bookkeeping */
    struct io_uring uring;       /* lock (the kernel side needs none) */
    int evfd;                    /* eventfd that wakes the vproc sleeping on this ring */
    int bell;                    /* eventfd the kernel signals at each completion while the
                                    ring's bell is on (ito__ring_bell; upcall/doorbell.c) */
    bool ev_armed;               /* lock: a poll of evfd is in flight... */
    uint32_t ev_gen;             /* lock: ...with this generation (user_data) */
    struct ito__activation *ev_act; /* lock: ...submitted by this activation */
    struct ito__vproc *vp;       /* owner (immutable) */
    _Atomic unsigned parked;     /* threads parked for its completions (written under lock) */
};

/* One operation of a parked thread: one or more SQEs whose user_data points
 * here. Lives on the issuing thread's stack; every field but `thread` is
 * protected by ring->lock. */
struct ito__io_req {
    struct ito__thread *thread;
    struct ito__ring *ring;
    int res;                     /* result of the first completion */
    unsigned pending;            /* completions still to come */
    bool got;                    /* res is set */
    bool parked;                 /* the thread waits for this request */
    bool cancel_rest;            /* at the first completion, cancel the others */
    struct ito__io_req *cancel_next; /* reap_locked's list of those to cancel */
};

/* Set up the rings (one per vproc) unless ITO_IO_URING=0 or the kernel lacks
 * what ito needs; false if I/O runs without rings. Before activations start. */
bool ito__rings_init(void);
/* The child of fork, when its runtime resumes: let go of the parent's rings,
 * the old vprocs' (runtime/fork.c). Then ito__rings_init makes new ones. */
void ito__rings_forked(struct ito__vproc *const *old, int n);
/* Whether ito threads' I/O goes through the rings. */
extern bool ito__rings_on;

/* A free SQE of `ring` (locked by the caller), submitting if the SQ is full. */
struct io_uring_sqe *ito__ring_sqe(struct ito__ring *ring);
/* With ring->lock held and req's SQEs prepared (req->pending set): submit
 * them and park the calling thread until every one has completed (with
 * cancel_rest, the first completion cancels the others). The thread never
 * returns while the kernel may still write into its request. Releases the
 * lock. Returns 0, or EINTR when the thread's wait was interruptible and
 * was interrupted (ito__wait_interrupt): then the operations still in
 * flight were cancelled (-ECANCELED, or -EINTR from a kernel worker), and
 * those that completed first have their results. MAY SWITCH. */
int ito__ring_wait(struct ito__ring *ring, struct ito__io_req *req);
/* Submit without waiting (ring->lock held). */
void ito__ring_submit(struct ito__ring *ring);

/* ns as the kernel's timespec (relative timeouts of io_uring). */
static inline struct __kernel_timespec ito__ring_timespec(uint64_t ns)
{
    return (struct __kernel_timespec){ .tv_sec = (long long)(ns / 1000000000u),
                                       .tv_nsec = (long long)(ns % 1000000000u) };
}

/* Completions are waiting on `ring` (a hint, read without the lock). */
static inline bool ito__ring_ready(struct ito__ring *ring)
{
    /* Acquire pairs with the kernel's release store of the CQ tail. */
    unsigned tail = __atomic_load_n(ring->uring.cq.ktail, __ATOMIC_ACQUIRE);
    unsigned head = __atomic_load_n(ring->uring.cq.khead, __ATOMIC_RELAXED);
    return tail != head ||
           (__atomic_load_n(ring->uring.sq.kflags, __ATOMIC_RELAXED) & IORING_SQ_CQ_OVERFLOW);
}
/* How far `ring`'s completions have been reaped (a hint, as above). */
static inline unsigned ito__ring_head(struct ito__ring *ring)
{
    return __atomic_load_n(ring->uring.cq.khead, __ATOMIC_RELAXED);
}
/* Threads are parked waiting for completions on `ring` (a hint, read
 * without the lock: the monitor's, upcall/monitor.c). */
static inline bool ito__ring_waiters(struct ito__ring *ring)
{
    return __atomic_load_n(&ring->parked, __ATOMIC_RELAXED) != 0;
}
/* The ring's bell: while on, the kernel signals ring->bell at each
 * completion it posts (off at start). One writer: the monitor. */
static inline void ito__ring_bell(struct ito__ring *ring, bool on)
{
    /* The kernel only reads the CQ's flags; only this bit is defined. */
    if (on)
        __atomic_fetch_and(ring->uring.cq.kflags, ~(unsigned)IORING_CQ_EVENTFD_DISABLED, __ATOMIC_RELAXED);
    else
        __atomic_fetch_or(ring->uring.cq.kflags, (unsigned)IORING_CQ_EVENTFD_DISABLED, __ATOMIC_RELAXED);
}
static inline bool ito__ring_bell_on(struct ito__ring *ring)
{
    return !(__atomic_load_n(ring->uring.cq.kflags, __ATOMIC_RELAXED) & IORING_CQ_EVENTFD_DISABLED);
}
/* Reap ring's completions, making their threads ready on the caller's vproc.
 * With `try`, give up if another vproc is reaping. Returns how many threads
 * were made ready. */
unsigned ito__ring_reap(struct ito__ring *ring, bool try);
/* The idle vproc vp sleeps until a completion arrives on its ring, someone
 * kicks it (ito__ring_kick), or CLOCK_MONOTONIC reaches deadline (0: none).
 * Returns how many threads the completions made ready. */
unsigned ito__ring_sleep(struct ito__vproc *vp, uint64_t deadline);
/* Wake the vproc sleeping on ring. */
void ito__ring_kick(struct ito__ring *ring);

#endif
