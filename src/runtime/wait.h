/* SPDX-License-Identifier: MIT */
/*
 * Waiting: how every blocking operation of ito parks a thread.
 *
 * A blocking operation (mutex, condition, join, semaphore...) keeps a FIFO
 * queue of waiters under its own spinlock. A waiter is either an ito thread
 * (its record is embedded in the thread descriptor; blocking parks the thread
 * and its vproc runs another) or a foreign kernel thread (its record lives on
 * its stack; blocking is a futex wait in the kernel).
 *
 * Protocol, for the operation's code (api/sem.c is the shortest example):
 *     struct ito__waiter local;                  // used by foreign kernel threads only
 *     ito__spin_lock(&obj->lk);
 *     struct ito__waiter *w = ito__waiter_init(&local);
 *     ito__waitq_push(&obj->q, w);
 *     ito__wait_begin(w, deadline, &obj->lk, &obj->q);   // still under the lock
 *     ito__spin_unlock(&obj->lk);  ...anything else that must follow, e.g. unlock a mutex...
 *     r = ito__wait_end(w, &obj->lk, &obj->q);           // 0: woken, or ETIMEDOUT
 * and for the waker:
 *     ito__spin_lock(&obj->lk);
 *     w = ito__waitq_pop_claim(&obj->q);                 // skips timed-out ones
 *     ito__spin_unlock(&obj->lk);
 *     if (w) ito__wake_finish(w);
 * Claiming under the lock makes the waiter ours: until wake_finish it cannot
 * run, so its record (and its `next` link) stays valid; a broadcast can claim
 * a whole list under the lock and finish it outside.
 *
 * Races. The waiter's state word is (seq << 2 | WAITING/WOKEN/TIMEDOUT);
 * seq counts the waits of an ito thread, so a timer entry left over from an
 * earlier wait can never end a later one. A wait ends exactly once: the waker
 * and the timer race with a CAS on the state word, the winner makes the
 * thread ready; a waker that loses goes on to the next waiter (so a signal is
 * never lost), a timer that loses does nothing. A timer that wins unlinks the
 * record under the object's lock before making the thread ready — the thread
 * may never come back to its wait (suspended, then restarted elsewhere by
 * ito_set_entry); a foreign waiter whose futex wait timed out unlinks its own.
 * Waits without a deadline need no CAS: only the waker that unlinked the
 * record can end them.
 *
 * Interruption. A wait begun while its thread's `interruptible` is set (the
 * POSIX face sets it around the waits that are cancellation points) can also
 * be ended by ito__wait_interrupt, with EINTR: the interrupter takes the
 * object's lock — where every waker claims — and only then ends the wait
 * with a CAS on the state word, which also beats a timer. The waits
 * themselves and their wakers pay nothing for it, but for a CAS instead of
 * a store in the claim of an interruptible wait. A wait in no queue passes
 * the lock its waker claims under (a ring's: runtime/ring.c), or none if
 * nothing but its timer ends it (a sleep): the interrupter's CAS then races
 * only the timer's.
 */
#ifndef ITO_RUNTIME_WAIT_H
#define ITO_RUNTIME_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/spinlock.h"

struct ito__thread;

enum {
    ITO__WAIT_WAITING = 0,
    ITO__WAIT_WOKEN = 1,
    ITO__WAIT_TIMEDOUT = 2,
    ITO__WAIT_INTERRUPTED = 3,
    ITO__WAIT_MASK = 3,
};

/* What a thread waits on, for the reports that list threads (runtime/dump.c,
 * tools/ito-gdb.py): set by ito__wait_begin with the object's address. */
enum ito__wait_on {
    ITO__ON_NOTHING = 0,
    ITO__ON_MUTEX,      /* object: the lock word (api/mutex.h) */
    ITO__ON_COND,
    ITO__ON_RWLOCK,
    ITO__ON_SEM,
    ITO__ON_BARRIER,
    ITO__ON_ONCE,
    ITO__ON_JOIN,       /* object: the descriptor of the thread joined or touched */
    ITO__ON_SLEEP,      /* no object */
    ITO__ON_IO,         /* object: the vproc's ring; an I/O request in flight */
    ITO__ON_COUNT
};

struct ito__waiter {
    /* What a waker does not touch: set when the wait begins, read by the
     * object, its timer and an interrupter. */
    uintptr_t tag;                     /* for the object: e.g. reader or writer */
    uint64_t deadline;                 /* foreign waiters: absolute ns, 0 none */
    /* The object's lock and queue, for the timer that unlinks a timed-out
     * wait and for an interrupter (wait.c); atomic because an interrupter
     * reads them before it knows the wait is still the one it looked at. */
    ito__spinlock *_Atomic lock;
    struct ito__waitq *_Atomic queue;
    _Atomic uint32_t futex;            /* foreign waiters sleep on it: ITO__FUTEX_* */
    /* What a waker reads and writes: the last ITO__WAITER_WAKE_BYTES, which
     * an ito thread's descriptor keeps in its hand-off line (thread.h). */
    struct ito__thread *thread;        /* NULL: a foreign kernel thread */
    struct ito__waiter *next, *prev;   /* queue links (object lock) */
    _Atomic uint64_t state;            /* seq << 2 | ITO__WAIT_* */
    uint32_t epoch;                    /* ito__fork_epoch when it began waiting (runtime/fork.c) */
    bool queued;                       /* linked in a queue (object lock) */
    bool timed;                        /* has a deadline (set before linking) */
    _Atomic bool interruptible;        /* ito__wait_interrupt may end it (wait_begin) */
};
/* A foreign waiter's futex word. Its record lives on its stack, so the
 * waker says when it is done with it: a futex wake on a word whose frame has
 * gone is harmless to the kernel (at worst a spurious wake-up of whatever
 * waits there now), but valgrind reports the stale word (valgrind.sem, 1 run
 * in about 30). */
enum {
    ITO__FUTEX_WAITING = 0,   /* it may sleep on the word */
    ITO__FUTEX_WOKEN = 1,     /* its wait is over; the waker is still waking it */
    ITO__FUTEX_RELEASED = 2,  /* the waker has let go of the record */
};
#define ITO__WAITER_WAKE_BYTES (sizeof(struct ito__waiter) - offsetof(struct ito__waiter, thread))

struct ito__waitq {
    struct ito__waiter *head, *tail;
};

/* Set up the caller's waiter record: for an ito thread, &self->wait; for a
 * foreign kernel thread, *local (which must live until ito__wait_end returns). */
struct ito__waiter *ito__waiter_init(struct ito__waiter *local);

static inline void ito__waitq_init(struct ito__waitq *q) { q->head = q->tail = NULL; }
static inline bool ito__waitq_empty(const struct ito__waitq *q) { return q->head == NULL; }

static inline void ito__waitq_push(struct ito__waitq *q, struct ito__waiter *w)
{
    w->next = NULL;
    w->prev = q->tail;
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    w->queued = true;
}

static inline void ito__waitq_push_front(struct ito__waitq *q, struct ito__waiter *w)
{
    w->prev = NULL;
    w->next = q->head;
    if (q->head)
        q->head->prev = w;
    else
        q->tail = w;
    q->head = w;
    w->queued = true;
}

static inline void ito__waitq_remove(struct ito__waitq *q, struct ito__waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        q->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        q->tail = w->prev;
    w->next = w->prev = NULL;
    w->queued = false;
}

static inline struct ito__waiter *ito__waitq_pop(struct ito__waitq *q)
{
    struct ito__waiter *w = q->head;
    if (w)
        ito__waitq_remove(q, w);
    return w;
}

/* Under the object's lock, after linking w in q: mark the caller blocked and
 * arm the deadline (absolute CLOCK_MONOTONIC ns, 0: none). lock and q are
 * NULL for a wait in no queue (sleep). `on` and `obj` say what it waits on
 * (enum ito__wait_on), for the thread reports. */
void ito__wait_begin(struct ito__waiter *w, uint64_t deadline, ito__spinlock *lock, struct ito__waitq *q,
                     enum ito__wait_on on, const void *obj);
/* After releasing the object's lock: block until woken or timed out. On
 * timeout, unlinks w from q under `lock` if it is still there. Returns 0,
 * ETIMEDOUT, or EINTR (an interruptible wait, ito__wait_interrupt). MAY
 * SWITCH. */
int ito__wait_end(struct ito__waiter *w, ito__spinlock *lock, struct ito__waitq *q);
/* Under the object's lock, w just unlinked: end its wait. False if it had
 * already timed out, or is a thread of the parent's in the child of a fork
 * (then forget it). */
bool ito__wake_claim(struct ito__waiter *w);
/* Outside the lock: make a claimed waiter run again. Never switches. */
void ito__wake_finish(struct ito__waiter *w);
/* Pop and claim the first waiter that has not timed out, or NULL. */
static inline struct ito__waiter *ito__waitq_pop_claim(struct ito__waitq *q)
{
    struct ito__waiter *w;
    while ((w = ito__waitq_pop(q)) && !ito__wake_claim(w))
        ;
    return w;
}
/* Pop and claim every waiter (those not timed out), linked through `next`. */
struct ito__waiter *ito__waitq_claim_all(struct ito__waitq *q);
/* Finish a list from ito__waitq_claim_all. */
void ito__wake_finish_all(struct ito__waiter *list);
/* Timer expiry for an ito thread's wait number `seq`. */
void ito__wait_timeout(struct ito__thread *t, uint64_t seq);
/* End t's wait with EINTR if it is waiting in a queue, interruptibly (any
 * thread may call it; t must not exit meanwhile). False if t was not in
 * such a wait (then it may be about to begin one: call again later). */
bool ito__wait_interrupt(struct ito__thread *t);

#endif
