/* SPDX-License-Identifier: MIT */
/* What the files of the POSIX face share: the thread object behind a
 * pthread_t, the start gate, deadlines on any clock, one-time warnings. */
#ifndef ITO_POSIX_POSIX_H
#define ITO_POSIX_POSIX_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <ito.h>

#include "base/libc.h"
#include "runtime/affinity.h"
#include "runtime/spinlock.h"

/* The exported names of the POSIX face. */
#define ITO_POSIX_API __attribute__((visibility("default")))

struct ito__thread;

/* A POSIX thread: one per thread pointer (posix/tcb.c), pooled with it. The
 * pthread_t of a thread is its thread pointer, as in glibc, so that the C
 * library's own idea of "the current thread" and pthread_self() agree. */
/* Real-time signal instances queued on a thread (posix/sigqueue.c). */
#define ITO__POSIX_RTQ_MAX 64
struct ito__posix_rt {
    uint8_t sig;
    bool valued;                    /* pthread_sigqueue's (SI_QUEUE), not pthread_kill's */
    union sigval value;
};
struct ito__posix_rtq {
    ito__spinlock lock;
    unsigned head, n;               /* a ring: e[head], ... e[head + n - 1] (mod MAX) */
    struct ito__posix_rt e[ITO__POSIX_RTQ_MAX];
};

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
    /* Requests from other threads (posix/cancel.c): a cancellation, or
     * signals sent to it (posix/signal.c), delivered until acted on. */
    _Atomic bool poked;             /* a poke for it is on its way (posix/cancel.c) */
    bool listed;                    /* on the list of requests (pending_lock) */
    struct ito__pthread *next_listed;
    _Atomic uint64_t sig_pending;   /* signals sent to it: bit sig - 1 */
    _Atomic uint64_t sig_valued;    /* ... of which pthread_sigqueue gave sig_value[sig - 1] */
    _Atomic uint64_t sig_value[64];  /* (a union sigval's bytes) */
    struct ito__posix_rtq rtq;      /* real-time signals sent to it (posix/sigqueue.c) */
    /* Signal masks (posix/sigmask.c; the mask itself is the ito thread's:
     * runtime/sigmask.c). */
    _Atomic uint64_t sig_waiting;   /* what it waits for in sigwait or sigsuspend: taken by
                                       the wait, never raised by a poke */
    _Atomic uint64_t sig_nudged;    /* signals for the process it was woken to take (sigroute.c) */
    _Atomic bool kernel_wait;       /* waits in the kernel with every signal blocked (epoll.c):
                                       the router pokes it, a poke raises nothing */
    void **robust;                  /* the robust mutexes it holds (their addresses): NULL
                                       (none yet), robust_inline, or allocated */
    size_t nrobust, robust_cap;
    void *robust_inline[8];         /* room enough for most threads: no allocation */
    /* Attributes it was created with, for pthread_getattr_np. */
    void *stack_addr;               /* lowest address */
    size_t stack_size, guard_size;
    bool user_stack;
    int sched_policy, sched_priority;
    /* Its CPU set (posix/affinity.c): the ito thread's cpus points to one
     * of these, or is NULL; a new set is written into the other and then
     * given (under the ito thread's lock). */
    struct ito__cpus cpus[2];
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

/* Call fn for the initial thread (once ito has started) and every object
 * ever made (live or pooled). Objects are never freed: safe anywhere. */
void ito__pthread_each(void (*fn)(struct ito__pthread *pt, void *arg), void *arg);
/* The ito thread behind pt, if it is alive (a pooled object's: NULL). */
struct ito__thread *ito__pthread_thread(struct ito__pthread *pt);
/* The initial thread's object (an ito thread once ito__posix_started). */
struct ito__pthread *ito__pthread_main(void);
/* posix/affinity.c: the CPU set a new thread starts with, from its
 * attributes (NULL: none) or else its creator's, into pt; *cpus: that set
 * (for ito__spawn), or NULL for none. 0, or an error for pthread_create. */
int ito__posix_affinity_at_create(struct ito__pthread *pt, const pthread_attr_t *attr,
                                  const struct ito__cpus **cpus);
/* The affinity of ito thread th into attr (pthread_getattr_np): 0 or an error. */
int ito__posix_affinity_attr(pthread_t th, pthread_attr_t *attr);
/* posix/signal.c: is sig discarded when sent (ignored, or a default action
 * that ignores it)? */
bool ito__posix_signal_ignored(int sig);

/* Before the calling thread takes a robust mutex: room to record one more.
 * With no memory for it, the thread waits (sleeping) until there is. */
void ito__pthread_robust_reserve(void);
/* The calling thread holds (room reserved), or no longer holds, a robust mutex. */
void ito__pthread_robust_add(void *m);
void ito__pthread_robust_remove(void *m);

/* Start ito (once, the first time anything needs it): 0, or EAGAIN. ito
 * starts lazily, so that a program that never makes a thread (a shell run
 * under ito-run, and its children) pays nothing; but it must start before
 * the initial thread records its identity anywhere (a mutex's owner, a
 * key's value), since that identity changes when ito adopts the thread. */
int ito__posix_start(void);
extern bool ito__posix_started;

/* Is th an ito thread? Not a kernel thread of the C library's own, nor the
 * initial thread before ito has started: for those, the C library's call is
 * the right one. */
static inline bool ito__pthread_ours(unsigned long th)
{
    struct ito__pthread *pt = ito__pthread_of(th);
    return pt && (!pt->main || __atomic_load_n(&ito__posix_started, __ATOMIC_ACQUIRE));
}

/* The C library's function `name` (of symbol version `version`), looked up
 * on the first call; of the type the C library's header gives it. */
#define ITO__POSIX_LIBC(name, version)                                                  \
    ({                                                                                  \
        static void *_Atomic f_;                                                        \
        void *p_ = __atomic_load_n(&f_, __ATOMIC_RELAXED);                              \
        if (!p_)                                                                        \
            __atomic_store_n(&f_, p_ = ito__libc_symbol(#name, version), __ATOMIC_RELAXED); \
        (__typeof__(&name))p_;                                                          \
    })

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

/* Requests to other threads (posix/cancel.c): make pt notice a request
 * (cancellation, or a signal in sig_pending) now if it can, and again every
 * millisecond until it has acted on it or exited. */
void ito__posix_request(struct ito__pthread *pt);
/* Send the poke signal to the kernel thread that carries pt, running (or
 * asleep in the kernel): its handler raises the signals sent to pt there,
 * and acts on an asynchronous cancellation. false if none was sent. */
bool ito__posix_poke(struct ito__pthread *pt);
/* Install the poke's handler (once; from an ito thread, before a kernel
 * thread of ito's own may poke). */
void ito__posix_poke_setup(void);
/* Requests can be made: the C library's descriptor is laid out as expected. */
bool ito__posix_requests_supported(void);
/* pthread_kill or pthread_sigqueue has been called in this process. */
extern bool ito__posix_signals_used;
/* After a call that may have switched (the thread may have been ready, not
 * running, when a signal was sent to it): run the handlers of the signals
 * sent to the calling thread meanwhile. A load when no signal was ever sent
 * to a thread. */
void ito__posix_signals_check_slow(void);
static inline void ito__posix_signals_check(void)
{
    if (__builtin_expect(__atomic_load_n(&ito__posix_signals_used, __ATOMIC_RELAXED), 0))
        ito__posix_signals_check_slow();
}

/* Keep sig (and pthread_sigqueue's value, if any) pending on pt: 0, or
 * EAGAIN when pt's queue of real-time signals is full. */
int ito__posix_signal_keep(struct ito__pthread *pt, int sig, const union sigval *value);

/* Real-time signals (from SIGRTMIN, the kernel's 32, up) queued on a thread
 * (posix/sigqueue.c). keep: queue one instance and set its bit (0, or
 * EAGAIN when full). take: the first instance of sig, clearing its bit when
 * it was the last; false if none. reset: empty, for a new thread. */
#define ITO__POSIX_SIGRT_FIRST 32
int ito__posix_rt_keep(struct ito__pthread *pt, int sig, const union sigval *value);
bool ito__posix_rt_take(struct ito__pthread *pt, int sig, bool *valued, union sigval *value);
void ito__posix_rt_reset(struct ito__pthread *pt);

/* A sigset_t's 64 signals of the kernel (its first word) as a mask, bit
 * sig - 1 for signal sig, and back. */
static inline uint64_t ito__posix_sigbits(const sigset_t *set)
{
    uint64_t b;
    __builtin_memcpy(&b, set, sizeof b);
    return b;
}

static inline sigset_t ito__posix_sigset(uint64_t bits)
{
    sigset_t s;
    sigemptyset(&s);
    __builtin_memcpy(&s, &bits, sizeof bits);
    return s;
}

/* The calling thread runs the handlers of the signals sent to it (true if
 * there were any): each is raised on its own kernel thread (posix/signal.c).
 * *eintr (if asked) becomes true if one of them has a handler installed
 * without SA_RESTART, which ends an interrupted system call with EINTR. */
bool ito__posix_signals_raise(struct ito__pthread *self, bool *eintr);

/* Signal masks (posix/sigmask.c, posix/sigroute.c). A thread has changed
 * its mask: waits that are cancellation points are also interruptible for
 * signals kept for the process. */
extern bool ito__posix_masks_used;
/* The calling thread's mask changes (ito__sigmask_change, and what follows
 * for the POSIX face: the router starts, signals it now accepts are routed
 * to it). */
void ito__posix_sigmask_change(int how, uint64_t set, uint64_t *old);
/* The signal mask of a call that takes one (ppoll, pselect, epoll_pwait):
 * the thread's while it waits, so that a signal sent to it that the mask
 * accepts ends the wait with EINTR (its handler run under that mask), and
 * one the mask blocks waits until the caller's mask is back, before the
 * call returns. begin: true (errno EINTR) if the call ends at once, a
 * signal pending that the mask accepts (its handler runs as the mask is
 * set); *old is the mask to give end, which returns r with errno kept. */
bool ito__posix_mask_begin(const sigset_t *mask, uint64_t *old);
int ito__posix_mask_end(uint64_t old, int r);
/* The signals pending on the initial thread's kernel thread (sent to it by
 * the C library before ito started), taken off it before ito adopts the
 * thread — once adopted, the thread may move to another kernel thread at
 * any switch (posix/sigmask.c). */
struct ito__posix_kernel_pending {
    unsigned n;
    struct ito__posix_rt e[64 + ITO__POSIX_RTQ_MAX];
};
void ito__posix_sigpending_take(struct ito__posix_kernel_pending *p);
/* ito has adopted the initial thread (pt): those signals are its now. */
void ito__posix_sigpending_adopt(struct ito__pthread *pt, const struct ito__posix_kernel_pending *p);
/* ito did not start: they go back to the kernel thread. */
void ito__posix_sigpending_return(const struct ito__posix_kernel_pending *p);
/* The signals sent to pt that it would take now: not blocked, or waited for. */
uint64_t ito__posix_signals_deliverable(struct ito__pthread *pt, struct ito__thread *t);
/* Signals kept for the process (posix/sigroute.c): start routing them (once
 * masks are used, or a thread waits in epoll), and tell the router that some
 * thread now accepts `bits`. */
void ito__posix_sigroute_start(void);
/* A wait in the kernel on an ito thread of the POSIX face, outside ito's
 * own code (posix/kernel_wait.c): once(arg, mask, deadline) is the system
 * call, under mask, until the deadline (ito_now_ns's clock;
 * ITO__POSIX_NO_DEADLINE: for ever), made again after an EINTR that no
 * handler of the program's caused. Returns once's answer, with errno. */
#define ITO__POSIX_NO_DEADLINE UINT64_MAX
typedef int ito__posix_wait_once_fn(void *arg, const sigset_t *mask, uint64_t deadline);
int ito__posix_kernel_wait(ito__posix_wait_once_fn *once, void *arg, uint64_t deadline);
/* The time left until deadline in *ts, or NULL for none. */
struct timespec *ito__posix_time_left(uint64_t deadline, struct timespec *ts);
void ito__posix_sigroute_accept(uint64_t bits);

/* The child of fork (posix/fork.c): each file's locks, lists and kernel
 * threads, reset before the child's thread gets its activation. */
void ito__posix_fork_init(void);
void ito__posix_threads_forked(void);
void ito__posix_cancel_forked(void);
void ito__posix_once_forked(void);
void ito__posix_sigroute_forked(void);
void ito__posix_dlopen_forked(void);
/* Cancellation (posix/cancel.c). Once, at the start: find the C library's
 * cancellation word. */
void ito__posix_cancel_init(void);
/* A thread is ending (cancelled or not): no request may act on it now. */
void ito__posix_cancel_exit(struct ito__pthread *pt);
/* pthread_cancel has been called in this process. */
extern bool ito__posix_cancel_used;
/* Around a wait that is a cancellation point: enter acts on a request
 * already made and makes the wait interruptible; leave, given the wait's
 * result, acts on a request that interrupted it (EINTR): a cancellation, or
 * signals, whose handlers it runs. It returns EINTR if a handler without
 * SA_RESTART ran (the wait reports EINTR where POSIX lets it, or a spurious
 * wake-up), ITO__CP_RESTART if only handlers with SA_RESTART ran (a call
 * the kernel would restart waits again; a sleep, which it never restarts,
 * reports EINTR), and ITO__CP_AGAIN if nothing was behind the interruption
 * (wait again). */
#define ITO__CP_AGAIN (-1)
#define ITO__CP_RESTART (-2)
void *ito__posix_cp_enter(void);
int ito__posix_cp_leave(void *token, int r);
/* leave in two halves, for a wait that must do something between them (a
 * condition wait takes its mutex back): end makes waits uninterruptible
 * again, check acts on EINTR. */
void ito__posix_cp_end(void *token);
int ito__posix_cp_check(int r);

/* ENOSYS, for a call or a form of one that ito threads do not support:
 * the first time at each place, it says on stderr that `what` is not
 * supported and why. */
#define ITO__POSIX_UNSUPPORTED(what, why)                                               \
    ({                                                                                  \
        static atomic_flag said_ = ATOMIC_FLAG_INIT;                                    \
        if (!atomic_flag_test_and_set(&said_))                                          \
            ito__posix_unsupported(what, why);                                          \
        ENOSYS;                                                                         \
    })
/* Say on stderr that `what` is not supported and why. */
void ito__posix_unsupported(const char *what, const char *why);

#endif
