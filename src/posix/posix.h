/* SPDX-License-Identifier: MIT */
/* What the files of the POSIX face share: the thread object behind a
 * pthread_t, the start gate, deadlines on any clock, one-time warnings. */
#ifndef ITO_POSIX_POSIX_H
#define ITO_POSIX_POSIX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <ito.h>

/* The exported names of the POSIX face. */
#define ITO_POSIX_API __attribute__((visibility("default")))

/* A POSIX thread: one per thread pointer (posix/tcb.c), pooled with it. The
 * pthread_t of a thread is its thread pointer, as in glibc, so that the C
 * library's own idea of "the current thread" and pthread_self() agree. */
struct ito__pthread {
    uintptr_t tp;
    ito_thread_t id;                /* written by the spawn before the thread runs */
    void *(*fn)(void *);
    void *arg;
    /* Who still needs this object: the thread, until it has switched off its
     * thread pointer for the last time (runtime hooks: tp_done), and its ID,
     * until joined or detached. The last one gives it back to the pool. */
    _Atomic uint32_t refs;
    bool reused;                    /* the thread pointer ran a thread before */
    bool main;                      /* the initial thread: glibc's own thread pointer */
    _Atomic bool detached;
    /* Exit, seen by the timed and try joins. The exiting thread stores
     * `exited`, then looks at `timed_joiners`; a timed joiner counts itself
     * in, then looks at `exited` (both seq_cst: one of the two sees the
     * other), and waits on exit_cond under exit_lock. */
    ito_mutex_t exit_lock;
    ito_cond_t exit_cond;
    _Atomic bool exited;
    _Atomic int timed_joiners;
    struct ito__pthread *_Atomic joining;   /* the thread it is joining (EDEADLK on a cycle) */
    /* Exit and cancellation (posix/cancel.c). */
    bool cancellable;               /* runs above a frame that unwinding ends in (thread.c) */
    bool exiting;                   /* pthread_exit: `result` is its value, not PTHREAD_CANCELED */
    void *result;
    _Atomic bool cancel_signal;     /* the cancellation signal sent to its carrier is for it */
    bool cancel_listed;             /* on the list of requests not acted on (pending_lock) */
    struct ito__pthread *cancel_next;
    void **robust;                  /* the robust mutexes it holds (their addresses) */
    size_t nrobust, robust_cap;
    /* Attributes it was created with, for pthread_getattr_np. */
    void *stack_addr;               /* lowest address */
    size_t stack_size, guard_size;
    bool user_stack;
    int sched_policy, sched_priority;
    struct ito__pthread *next;      /* the pool */
    struct ito__pthread *all_next;  /* every object ever made (never freed) */
};

#define ITO__PT_REF_RUN 1u
#define ITO__PT_REF_ID 2u

/* The calling thread's object (NULL on a kernel thread ito did not create). */
struct ito__pthread *ito__pthread_self(void);
/* The object behind a pthread_t; NULL for 0. */
struct ito__pthread *ito__pthread_of(unsigned long th);

/* Call fn(tp, arg) for every thread pointer the POSIX face ever made (live
 * or pooled; not the initial thread's, which the C library knows). */
void ito__pthread_each_tp(void (*fn)(uintptr_t tp, const void *arg), const void *arg);

/* The calling thread holds, or no longer holds, a robust mutex. */
void ito__pthread_robust_add(void *m);
void ito__pthread_robust_remove(void *m);

/* Start ito (once, the first time anything needs it): 0, or EAGAIN. ito
 * starts lazily, so that a program that never makes a thread (a shell run
 * under ito-run, and its children) pays nothing; but it must start before
 * the initial thread records its identity anywhere (a mutex's owner, a
 * key's value), since that identity changes when ito adopts the thread. */
int ito__posix_start(void);
extern bool ito__posix_started;

static inline void ito__posix_ensure(void)
{
    /* Acquire pairs with the release store at the end of ito__posix_start. */
    if (__builtin_expect(!__atomic_load_n(&ito__posix_started, __ATOMIC_ACQUIRE), 0))
        ito__posix_start();
}

/* An absolute time on `clock` as ito's deadline (CLOCK_MONOTONIC
 * nanoseconds; 1 if already past; 0, none, a century or more ahead).
 * EINVAL for a bad clock or timespec. */
int ito__posix_deadline(clockid_t clock, const struct timespec *abstime, uint64_t *deadline);

/* ito's priority for a POSIX policy and priority (posix/sched.c), and
 * whether they are valid (0 or EINVAL). */
struct sched_param;
int ito__posix_priority(int policy, int prio);
int ito__posix_check_sched(int policy, const struct sched_param *p);

/* Cancellation (posix/cancel.c). Once, at the start: find the C library's
 * cancellation word. */
void ito__posix_cancel_init(void);
/* A thread is ending (cancelled or not): no request may act on it now. */
void ito__posix_cancel_exit(struct ito__pthread *pt);
/* pthread_cancel has been called in this process. */
extern bool ito__posix_cancel_used;
/* Around a wait that is a cancellation point: enter acts on a request
 * already made and makes the wait interruptible; leave, given the wait's
 * result, acts on a request that interrupted it (EINTR). If leave returns
 * EINTR, no request was behind it: wait again, or report a spurious wake. */
void *ito__posix_cp_enter(void);
int ito__posix_cp_leave(void *token, int r);
/* leave in two halves, for a wait that must do something between them (a
 * condition wait takes its mutex back): end makes waits uninterruptible
 * again, check acts on EINTR. */
void ito__posix_cp_end(void *token);
int ito__posix_cp_check(int r);

/* Say once, on stderr, that `what` is not supported and why. */
void ito__posix_unsupported(const char *what, const char *why);

#endif
