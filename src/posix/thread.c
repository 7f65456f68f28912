/* SPDX-License-Identifier: MIT */
/*
 * POSIX threads on ito threads: creation, exit, joins, identity, attributes
 * of a running thread, names, scheduling parameters.
 *
 * libito-pthread.so defines the pthread_* names, so that a program linked
 * against the C library's (or preloaded with this one, ito-run) gets ito's.
 * A pthread_t is the thread's thread pointer (posix/tcb.c), whose slot keeps
 * the struct ito__pthread; the thread itself is an ordinary ito thread (its
 * ito_thread_t in `id`), spawned with that thread pointer, on a pooled stack
 * or the caller's (pthread_attr_setstack).
 *
 * Lifetime. An object is needed by its thread until the thread's last switch
 * off its thread pointer, and by its ID until pthread_join or
 * pthread_detach: two references, the last of which puts it back in the pool
 * with its thread pointer (tcb.c explains why thread pointers are reused, not
 * freed). The initial thread keeps glibc's own thread pointer and is never
 * pooled.
 *
 * Exit. A thread starts in a frame (`start`) whose buffer the C library's
 * forced unwinding ends in, as its own threads' do: pthread_exit is the C
 * library's, which unwinds the stack (C++ destructors, the handlers of
 * pthread_cleanup_push, which are the C library's too) down to that frame;
 * so does cancellation (cancel.c). Then, as on a return from the start
 * routine: C++ thread_local destructors, the key destructors, robust
 * mutexes still held, timed joiners, and the end of the ito thread. The
 * initial thread's buffer is the C library's, in the frame that called
 * main; its jump is pointed at main_unwound.
 *
 * Start. ito starts the first time the POSIX face needs it (a thread is
 * created, or any ito object is used): a program that never makes a thread
 * runs as it would without libito-pthread. The constructor only finds what
 * the C library needs (tcb.c) and sets the runtime's thread-pointer hooks.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/cond.h"
#include "api/init.h"
#include "arch.h"
#include "base/libc.h"
#include "base/panic.h"
#include "posix/posix.h"
#include "posix/sync.h"
#include "posix/tcb.h"
#include "runtime/critical.h"
#include "runtime/hooks.h"
#include "runtime/runtime.h"
#include "runtime/spinlock.h"
#include "runtime/thread.h"

static struct ito__pthread main_thread = { .main = true };
static bool tcb_ready;                 /* ito__tcb_init succeeded */
static void (*libc_register_cancel)(__pthread_unwind_buf_t *);
static void (*libc_pthread_exit)(void *);   /* does not return */

/* ------------------------------------------------------------------ pool */

static ito__spinlock pool_lock = ITO__SPINLOCK_INITIALIZER(ITO__LOCK_OBJECT);
static struct ito__pthread *pool;
/* Every object ever made: pushed once with a release CAS, walked from an
 * acquire load (the pairs). Objects are never freed, so a walk is safe. */
static struct ito__pthread *_Atomic all;

void ito__pthread_each_tp(void (*fn)(uintptr_t tp, const void *arg), const void *arg)
{
    for (struct ito__pthread *pt = atomic_load_explicit(&all, memory_order_acquire); pt; pt = pt->all_next)
        fn(pt->tp, arg);
}

void ito__pthread_each(void (*fn)(struct ito__pthread *pt, void *arg), void *arg)
{
    if (__atomic_load_n(&ito__posix_started, __ATOMIC_ACQUIRE))
        fn(&main_thread, arg);
    for (struct ito__pthread *pt = atomic_load_explicit(&all, memory_order_acquire); pt; pt = pt->all_next)
        fn(pt, arg);
}

struct ito__pthread *ito__pthread_main(void) { return &main_thread; }

struct ito__thread *ito__pthread_thread(struct ito__pthread *pt)
{
    uint64_t ctl;
    uint64_t id = __atomic_load_n(&pt->id.id, __ATOMIC_RELAXED);   /* (ito__spawn stores it so) */
    return id ? ito__handle_lookup(id, &ctl) : NULL;
}

/* No signal sent to pt or routed to it (a new thread; the child of fork). */
static void no_signals(struct ito__pthread *pt)
{
    atomic_store_explicit(&pt->sig_pending, 0, memory_order_relaxed);
    atomic_store_explicit(&pt->sig_valued, 0, memory_order_relaxed);
    ito__posix_rt_reset(pt);
    atomic_store_explicit(&pt->sig_waiting, 0, memory_order_relaxed);
    atomic_store_explicit(&pt->sig_nudged, 0, memory_order_relaxed);
    atomic_store_explicit(&pt->kernel_wait, false, memory_order_relaxed);   /* (a handler jumped out of epoll.c) */
}

static void pool_put(struct ito__pthread *pt)
{
    ito__critical_enter();
    ito__spin_lock(&pool_lock);
    pt->next = pool;
    pool = pt;
    ito__spin_unlock(&pool_lock);
    ito__critical_exit();
}

/* An object with a thread pointer ready for a new thread, or NULL. */
static struct ito__pthread *pool_get(uint32_t refs)
{
    ito__critical_enter();
    ito__spin_lock(&pool_lock);
    struct ito__pthread *pt = pool;
    if (pt)
        pool = pt->next;
    ito__spin_unlock(&pool_lock);
    ito__critical_exit();
    if (pt) {
        if (!ito__tcb_reset(pt->tp)) {
            pool_put(pt);   /* whole, for a later try */
            return NULL;
        }
        pt->reused = true;
    } else {
        if (!(pt = calloc(1, sizeof *pt)))
            return NULL;
        if (!(pt->tp = ito__tcb_create(pt))) {
            free(pt);
            return NULL;
        }
        struct ito__pthread *head = atomic_load_explicit(&all, memory_order_relaxed);
        do
            pt->all_next = head;
        while (!atomic_compare_exchange_weak_explicit(&all, &head, pt, memory_order_release,
                                                      memory_order_relaxed));
    }
    atomic_store_explicit(&pt->refs, refs, memory_order_relaxed);
    atomic_store_explicit(&pt->detached, !(refs & ITO__PT_REF_ID), memory_order_relaxed);
    __atomic_store_n(&pt->id.id, 0, __ATOMIC_RELAXED);   /* (ito__pthread_thread) */
    if (!pt->reused) {
        ito_mutex_init(&pt->exit_lock);
        ito_cond_init(&pt->exit_cond);
    }
    atomic_store_explicit(&pt->exited, false, memory_order_relaxed);
    atomic_store_explicit(&pt->timed_joiners, 0, memory_order_relaxed);
    atomic_store_explicit(&pt->joining, NULL, memory_order_relaxed);
    pt->cancellable = pt->exiting = pt->listed = false;
    atomic_store_explicit(&pt->poked, false, memory_order_relaxed);
    no_signals(pt);
    pt->nrobust = 0;
    pt->stack_addr = NULL;
    pt->stack_size = pt->guard_size = 0;
    pt->user_stack = false;
    pt->sched_policy = SCHED_OTHER;
    pt->sched_priority = 0;
    return pt;
}

/* Drop one reference; the last one pools the object. acq_rel: whoever pools
 * it sees everything the other holder did (pairs with the other drop). */
static void unref(struct ito__pthread *pt, uint32_t ref)
{
    if (pt->main)
        return;
    if (atomic_fetch_and_explicit(&pt->refs, ~ref, memory_order_acq_rel) == ref)
        pool_put(pt);
}

/* Runtime hooks (runtime/hooks.h). */
static uintptr_t hook_tp_new(void)
{
    struct ito__pthread *pt = pool_get(ITO__PT_REF_RUN);
    return pt ? pt->tp : 0;
}

static void hook_tp_done(uintptr_t tp) { unref(ito__tcb_self_of(tp), ITO__PT_REF_RUN); }

/* ----------------------------------------------------------------- start */

static _Noreturn void finish(struct ito__pthread *pt, void *result);

/* Where the initial thread's forced unwinding ends (pthread_exit or
 * cancellation): on its stack, where the C library's frame that called main
 * was. Entered by a jump with the stack pointer that frame had, so it
 * realigns the stack itself. */
__attribute__((force_align_arg_pointer)) static _Noreturn void main_unwound(void)
{
    finish(&main_thread, main_thread.exiting ? main_thread.result : PTHREAD_CANCELED);
}

/* The C library ends the initial thread's unwinding in the buffer of the
 * frame that called main, then ends the kernel thread (or the process).
 * Find that buffer — the last of the list a buffer registered now would
 * start (the others are pthread_cleanup_push's, if main has pushed any) —
 * and point its jump at main_unwound; the saved stack pointer stays. On the
 * initial thread, once main runs (before it, in a library constructor, the
 * list is empty: then again later). */
static void redirect_main_unwinding(void)
{
    if (main_thread.cancellable)
        return;
    void (*unregister)(__pthread_unwind_buf_t *) = (void (*)(__pthread_unwind_buf_t *))ito__libc_symbol(
        "__pthread_unregister_cancel", "GLIBC_2.3.3");
    __pthread_unwind_buf_t probe;
    libc_register_cancel(&probe);
    __pthread_unwind_buf_t *bottom = probe.__pad[0];   /* priv.data.prev */
    unregister(&probe);
    if (!bottom)
        return;
    while (bottom->__pad[0])
        bottom = bottom->__pad[0];
    bottom->__cancel_jmp_buf[0].__cancel_jmp_buf[ITO__TCB_JMPBUF_PC] = (long)ito__tcb_mangle((uintptr_t)main_unwound);
    main_thread.cancellable = true;
}

static void posix_init_once(void)
{
    if (ito__tcb_init() != 0)
        return;
    tcb_ready = true;
    libc_register_cancel = (void (*)(__pthread_unwind_buf_t *))ito__libc_symbol("__pthread_register_cancel",
                                                                                  "GLIBC_2.3.3");
    libc_pthread_exit = (void (*)(void *))ito__libc_symbol("pthread_exit", "GLIBC_2.2.5");
    ito__posix_cancel_init();
    main_thread.tp = ito__arch_thread_pointer();
    atomic_store_explicit(&main_thread.refs, ITO__PT_REF_ID, memory_order_relaxed);
    ito_mutex_init(&main_thread.exit_lock);
    ito_cond_init(&main_thread.exit_cond);
    main_thread.sched_policy = SCHED_OTHER;
    ito__tcb_adopt(&main_thread);
    ito__hooks.tp_new = hook_tp_new;
    ito__hooks.tp_done = hook_tp_done;
    ito__posix_fork_init();
}

/* At load, or earlier: a constructor of a library that runs before this one
 * may already call pthread_once or sem_post, and ito must not start before
 * its thread-pointer hooks are set. The initial thread runs it. */
static pthread_once_t posix_init_done = PTHREAD_ONCE_INIT;

static void posix_init(void) { ito__libc_pthread_once(&posix_init_done, posix_init_once); }

__attribute__((constructor)) static void posix_init_at_load(void) { posix_init(); }

bool ito__posix_started;

/* glibc's default thread attributes, kept here so that a create without
 * attributes does not copy them each time; pthread_setattr_default_np
 * (below) refreshes them. Written under defaults_lock. */
static size_t dflt_stack_size, dflt_guard_size;
static ito_mutex_t defaults_lock = ITO_MUTEX_INIT;
static _Atomic bool defaults_known;

void ito__posix_threads_forked(void)
{
    /* Locks and lists a kernel thread the fork left behind may have held or
     * been changing (runtime/fork.c): the pool starts empty (the objects of
     * the parent's threads are not reused). */
    ito__spin_init(&pool_lock, ITO__LOCK_OBJECT);
    pool = NULL;
    ito_mutex_init(&defaults_lock);
    struct ito__pthread *self = ito__pthread_self();
    if (!self)
        return;
    /* A joiner or a sender of the parent's may have held these. */
    ito_mutex_init(&self->exit_lock);
    ito_cond_init(&self->exit_cond);
    /* "The set of signals pending for the child process shall be
     * initialized to the empty set" (fork). */
    no_signals(self);
    if (!self->main)
        ito__tcb_forked(self->tp);   /* glibc's child listed it as its own thread */
}

static void load_defaults(void)
{
    pthread_attr_t a;
    if (pthread_getattr_default_np(&a) != 0)
        return;
    pthread_attr_getstacksize(&a, &dflt_stack_size);
    pthread_attr_getguardsize(&a, &dflt_guard_size);
    pthread_attr_destroy(&a);
    if (dflt_stack_size < ITO_STACK_MIN)
        dflt_stack_size = ITO_STACK_MIN;
    if (dflt_stack_size > ITO_STACK_MAX)
        dflt_stack_size = ITO_STACK_MAX;
}

static size_t default_stack_size(void)
{
    if (!atomic_load_explicit(&defaults_known, memory_order_acquire)) {
        load_defaults();   /* (before ito starts: no lock needed, one thread) */
        atomic_store_explicit(&defaults_known, true, memory_order_release);
    }
    return dflt_stack_size;
}

ITO_POSIX_API int pthread_setattr_default_np(const pthread_attr_t *attr)
{
    static int (*_Atomic libc_set)(const pthread_attr_t *);
    int (*set)(const pthread_attr_t *) = libc_set;
    if (!set)
        libc_set = set = (int (*)(const pthread_attr_t *))ito__libc_symbol("pthread_setattr_default_np",
                                                                          "GLIBC_2.18");
    int e = set(attr);
    if (!e) {
        ito_mutex_lock(&defaults_lock);
        load_defaults();
        atomic_store_explicit(&defaults_known, true, memory_order_release);
        ito_mutex_unlock(&defaults_lock);
    }
    return e;
}

int ito__posix_start(void)
{
    /* Libraries ito itself uses while it starts (hwloc) lock mutexes too:
     * those calls find ito not started and act for a foreign kernel thread. */
    static __thread bool starting;
    if (__atomic_load_n(&ito__posix_started, __ATOMIC_ACQUIRE))
        return ITO_LIKELY(ito__initialized()) ? 0 : ito__ensure_init();   /* (the child of fork resumes here) */
    if (starting)
        return EAGAIN;
    posix_init();
    if (!tcb_ready)
        return EAGAIN;
    starting = true;
    bool adopting = gettid() == getpid() && ito_thread_equal(main_thread.id, ITO_THREAD_NULL) &&
                    ito__pthread_self() == &main_thread;
    struct ito__posix_kernel_pending pending = { 0 };
    if (adopting)
        ito__posix_sigpending_take(&pending);   /* on its own kernel thread, for sure */
    if (gettid() == getpid() && !getenv("ITO_STACK_SIZE")) {
        /* The initial thread starts ito, with glibc's default stack size as
         * ito's, so that threads made without a size get it from ito's
         * per-vproc cache. (Anywhere else ito starts itself with its own
         * defaults, as its first call would.) */
        ito_config_t c = ITO_CONFIG_INIT;
        c.stack_size = default_stack_size();
        ito_init(&c);   /* EBUSY: started already */
    }
    int n = ito_vproc_count();   /* starts ito the first time */
    starting = false;
    if (n <= 0) {
        ito__posix_sigpending_return(&pending);
        return EAGAIN;
    }
    if (adopting) {
        __atomic_store_n(&main_thread.id.id, ito_self().id, __ATOMIC_RELAXED);   /* ito adopted it */
        redirect_main_unwinding();
        ito__posix_sigpending_adopt(&main_thread, &pending);
    }
    __atomic_store_n(&ito__posix_started, true, __ATOMIC_RELEASE);
    return 0;
}

struct ito__pthread *ito__pthread_self(void)
{
    return ito__tcb_self_of(ito__arch_thread_pointer());
}

struct ito__pthread *ito__pthread_of(unsigned long th) { return th ? ito__tcb_self_of(th) : NULL; }

/* ----------------------------------------------------------- deadlines */

int ito__posix_deadline(clockid_t clock, const struct timespec *abstime, uint64_t *deadline)
{
    if (!abstime || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
        return EINVAL;
    struct timespec now;
    if (clock == CLOCK_MONOTONIC_RAW || clock == CLOCK_PROCESS_CPUTIME_ID ||
        clock == CLOCK_THREAD_CPUTIME_ID || clock_gettime(clock, &now) != 0)
        return EINVAL;
    if (abstime->tv_sec < now.tv_sec || (abstime->tv_sec == now.tv_sec && abstime->tv_nsec <= now.tv_nsec)) {
        *deadline = 1;   /* already past: a time in the past, not "none" */
        return 0;
    }
    /* A century or more ahead ("for ever", often TIME_T_MAX): no deadline
     * (ito's 0), rather than an overflow into the past. */
    if (abstime->tv_sec - now.tv_sec > 100LL * 365 * 86400) {
        *deadline = 0;
        return 0;
    }
    int64_t left = (int64_t)(abstime->tv_sec - now.tv_sec) * 1000000000LL + (abstime->tv_nsec - now.tv_nsec);
    *deadline = ito_now_ns() + (uint64_t)left;
    return 0;
}

void ito__posix_unsupported(const char *what, const char *why)
{
    ito__warn("%s is not supported on ito threads yet: %s; it fails with ENOSYS", what, why);
}

/* -------------------------------------------------------------- create */

static void *start(void *arg)
{
    struct ito__pthread *pt = arg;
    ito__tcb_thread_start(pt->reused);
    /* The frame unwinding ends in (pthread_exit, cancellation), as the C
     * library's start_thread has it. */
    __pthread_unwind_buf_t top;
    if (__sigsetjmp_cancel(top.__cancel_jmp_buf, 0) == 0) {
        libc_register_cancel(&top);
        finish(pt, pt->fn(pt->arg));
    }
    pt = ito__pthread_self();   /* (not kept in a register across the jump) */
    finish(pt, pt->exiting ? pt->result : PTHREAD_CANCELED);
}

ITO_POSIX_API int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (!th || !fn)
        return EINVAL;
    int e = ito__posix_start();
    if (e)
        return e;
    int detach = PTHREAD_CREATE_JOINABLE, inherit = PTHREAD_INHERIT_SCHED, policy = SCHED_OTHER;
    struct sched_param param = { 0 };
    size_t stack_size = default_stack_size(), guard = dflt_guard_size;
    void *stack_addr = NULL;
    struct ito__spawn_extra x = { 0 };
    if (attr) {
        pthread_attr_getdetachstate(attr, &detach);
        pthread_attr_getinheritsched(attr, &inherit);
        pthread_attr_getschedpolicy(attr, &policy);
        pthread_attr_getschedparam(attr, &param);
        pthread_attr_getstacksize(attr, &stack_size);
        pthread_attr_getguardsize(attr, &guard);
        void *lo = NULL;
        size_t lo_size = 0;
        pthread_attr_getstack(attr, &lo, &lo_size);   /* unset: the top is NULL, lo is NULL - size */
        if ((uintptr_t)lo + lo_size != 0)
            stack_addr = (char *)lo + lo_size;      /* the caller's stack, by its top */
        sigset_t mask;
        if (pthread_attr_getsigmask_np(attr, &mask) == 0) {
            x.has_sigmask = true;
            memcpy(&x.sigmask, &mask, sizeof x.sigmask);
            if (!__atomic_load_n(&ito__posix_masks_used, __ATOMIC_RELAXED)) {
                __atomic_store_n(&ito__posix_masks_used, true, __ATOMIC_SEQ_CST);
                ito__posix_sigroute_start();
            }
            ito__posix_sigroute_accept(~x.sigmask);
        }
    }
    struct ito__pthread *self = ito__pthread_self();
    if (inherit == PTHREAD_INHERIT_SCHED && self) {
        policy = self->sched_policy;
        param.sched_priority = self->sched_priority;
    } else if (ito__posix_check_sched(policy, &param)) {
        return EINVAL;
    }

    ito_attr_t ia;
    ito_attr_init(&ia);
    if (stack_addr) {
        x.stack_lo = (char *)stack_addr - stack_size;
        x.stack_size = stack_size;
    } else {
        size_t s = stack_size < ITO_STACK_MIN ? ITO_STACK_MIN : stack_size;
        if (ito_attr_set_stack_size(&ia, s > ITO_STACK_MAX ? ITO_STACK_MAX : s))
            return EINVAL;
    }
    ito_attr_set_detached(&ia, detach == PTHREAD_CREATE_DETACHED);
    ito_attr_set_priority(&ia, ito__posix_priority(policy, param.sched_priority));

    struct ito__pthread *pt = pool_get(detach == PTHREAD_CREATE_DETACHED ? ITO__PT_REF_RUN
                                                                        : ITO__PT_REF_RUN | ITO__PT_REF_ID);
    if (!pt)
        return EAGAIN;
    pt->fn = fn;
    pt->arg = arg;
    pt->user_stack = stack_addr != NULL;
    pt->stack_addr = x.stack_lo;
    pt->stack_size = stack_size;
    pt->guard_size = stack_addr ? 0 : guard;
    pt->sched_policy = policy;
    pt->sched_priority = param.sched_priority;
    if ((e = ito__posix_affinity_at_create(pt, attr, &x.cpus))) {
        pool_put(pt);
        return e;
    }
    pt->cancellable = true;   /* (start registers its frame before any of the thread's code) */
    x.tp = pt->tp;
    *th = (pthread_t)pt->tp;   /* before it can run (POSIX; programs rely on it) */
    e = ito__spawn(&pt->id.id, &ia, start, pt, 0, &x);
    if (e) {
        pool_put(pt);
        return e == ENOMEM ? EAGAIN : e;
    }
    return 0;
}

/* ---------------------------------------------------------------- exit */

void ito__pthread_robust_reserve(void)
{
    struct ito__pthread *pt = ito__pthread_self();
    if (!pt)
        return;   /* a kernel thread ito did not create: the C library's rules */
    if (!pt->robust) {
        pt->robust = pt->robust_inline;
        pt->robust_cap = ITO_ARRAY_SIZE(pt->robust_inline);
    }
    if (ITO_LIKELY(pt->nrobust < pt->robust_cap))
        return;
    /* Before the mutex is taken, so that a thread short of memory holds
     * nothing while it waits; POSIX allows no ENOMEM from a lock. */
    size_t cap = 2 * pt->robust_cap;
    void **r;
    while (!(r = pt->robust == pt->robust_inline ? malloc(cap * sizeof *r)
                                                 : realloc(pt->robust, cap * sizeof *r))) {
        ITO_WARN_ONCE("out of memory recording the robust mutexes a thread holds (%zu): it waits "
                      "for memory before it takes another", pt->nrobust);
        ito_sleep_ns(1000000);
    }
    if (pt->robust == pt->robust_inline)
        memcpy(r, pt->robust_inline, sizeof pt->robust_inline);
    pt->robust = r;
    pt->robust_cap = cap;
}

void ito__pthread_robust_add(void *m)
{
    struct ito__pthread *pt = ito__pthread_self();
    if (!pt)
        return;
    ITO_BUG_ON(pt->nrobust >= pt->robust_cap);   /* (reserved before the lock was taken) */
    pt->robust[pt->nrobust++] = m;
}

void ito__pthread_robust_remove(void *m)
{
    struct ito__pthread *pt = ito__pthread_self();
    if (!pt)
        return;
    for (size_t i = pt->nrobust; i-- > 0;)
        if (pt->robust[i] == m) {
            pt->robust[i] = pt->robust[--pt->nrobust];
            return;
        }
}

static _Noreturn void finish(struct ito__pthread *pt, void *result)
{
    if (pt)
        ito__posix_cancel_exit(pt);   /* first: no cancellation acts in what follows */
    ito__tcb_thread_exit();
    struct ito__thread *t = ito__thread_self();
    if (ito__keys_any(t))
        ito__keys_run_destructors(t);
    if (pt) {
        while (pt->nrobust)   /* robust mutexes it still holds: the next owner hears of it */
            ito__pmutex_owner_died(pt->robust[--pt->nrobust]);
        atomic_store(&pt->exited, true);
        if (atomic_load(&pt->timed_joiners)) {
            ito_mutex_lock(&pt->exit_lock);
            ito_cond_broadcast(&pt->exit_cond);
            ito_mutex_unlock(&pt->exit_lock);
        }
    }
    ito_exit(result);
}

ITO_POSIX_API _Noreturn void pthread_exit(void *result)
{
    ito__posix_ensure();
    if (!ito__thread_self()) {
        /* A kernel thread ito did not create (the C library's own helper
         * threads, C11 threads): its exit is the C library's. */
        void (*libc_exit)(void *) = (void (*)(void *))ito__libc_symbol("pthread_exit", "GLIBC_2.2.5");
        libc_exit(result);
        __builtin_unreachable();
    }
    struct ito__pthread *pt = ito__pthread_self();
    if (pt == &main_thread)
        redirect_main_unwinding();   /* (if ito started before main) */
    if (pt && pt->cancellable) {
        pt->result = result;
        pt->exiting = true;
        libc_pthread_exit(result);   /* unwinds to start or main_unwound */
        __builtin_unreachable();
    }
    finish(pt, result);
}

/* ---------------------------------------------------------------- join */

/* Wait until pt has exited (0), or the deadline (ETIMEDOUT); a
 * cancellation point. The exiting thread sets `exited`, then broadcasts
 * exit_cond under exit_lock if it sees timed_joiners. */
static int wait_exit(struct ito__pthread *pt, uint64_t deadline)
{
    struct ito__cond *c = (struct ito__cond *)&pt->exit_cond;
    atomic_fetch_add(&pt->timed_joiners, 1);   /* (one left over if cancelled: a needless broadcast) */
    int e = 0;
    for (;;) {
        void *cp = ito__posix_cp_enter();   /* may unwind: holds no lock here */
        ito_mutex_lock(&pt->exit_lock);
        if (atomic_load(&pt->exited) || e) {
            ito_mutex_unlock(&pt->exit_lock);
            ito__posix_cp_leave(cp, 0);
            break;
        }
        struct ito__waiter local;
        struct ito__waiter *w = ito__cond_wait_begin(c, &local, deadline);
        ito_mutex_unlock(&pt->exit_lock);
        int r = ito__posix_cp_leave(cp, ito__cond_wait_end(c, w));
        if (r == ETIMEDOUT)
            e = r;   /* (exited meanwhile? the loop looks once more) */
    }
    atomic_fetch_sub(&pt->timed_joiners, 1);
    return atomic_load(&pt->exited) ? 0 : e;
}

static int join(pthread_t th, void **result, bool try, clockid_t clock, const struct timespec *abstime)
{
    struct ito__pthread *pt = ito__pthread_of(th), *self = ito__pthread_self();
    if (!pt)
        return ESRCH;
    if (pt == self)
        return EDEADLK;
    if (atomic_load_explicit(&pt->detached, memory_order_relaxed))
        return EINVAL;
    if (try) {
        if (!atomic_load(&pt->exited))
            return EBUSY;
    } else if (abstime || (self && (__atomic_load_n(&ito__posix_cancel_used, __ATOMIC_RELAXED) ||
                                    __atomic_load_n(&ito__posix_masks_used, __ATOMIC_RELAXED)))) {
        /* A deadline, or a join that a cancellation or a signal for the
         * process (sigroute.c) may have to interrupt (ito_join cannot be):
         * wait for the exit on the thread's condition first. A program that
         * never cancels and never masks a signal joins the quick way below. */
        uint64_t deadline = 0;
        if (abstime) {
            int e = ito__posix_deadline(clock, abstime, &deadline);
            if (e)
                return e;
        }
        int e = wait_exit(pt, deadline);
        if (e)
            return e;
    }
    /* Joining each other: glibc reports EDEADLK for the second, so do we. */
    if (self) {
        atomic_store_explicit(&self->joining, pt, memory_order_seq_cst);
        if (atomic_load_explicit(&pt->joining, memory_order_seq_cst) == self) {
            atomic_store_explicit(&self->joining, NULL, memory_order_relaxed);
            return EDEADLK;
        }
    }
    int e = ito_join(pt->id, result);
    if (self)
        atomic_store_explicit(&self->joining, NULL, memory_order_relaxed);
    if (e)
        return e == ESRCH ? ESRCH : EINVAL;
    if (pt->user_stack) {
        /* The caller may free the stack once this returns, but the thread
         * ends on it: wait for its last switch off it (the RUN reference
         * goes in the next context's after_resume; acquire pairs with that
         * release). It is a few instructions away, on a running vproc. */
        while (atomic_load_explicit(&pt->refs, memory_order_acquire) & ITO__PT_REF_RUN)
            ito_yield();
    }
    unref(pt, ITO__PT_REF_ID);
    return 0;
}

ITO_POSIX_API int pthread_join(pthread_t th, void **result) { return join(th, result, false, 0, NULL); }

ITO_POSIX_API int pthread_tryjoin_np(pthread_t th, void **result) { return join(th, result, true, 0, NULL); }

ITO_POSIX_API int pthread_timedjoin_np(pthread_t th, void **result, const struct timespec *abstime)
{
    return abstime ? join(th, result, false, CLOCK_REALTIME, abstime) : join(th, result, false, 0, NULL);
}

ITO_POSIX_API int pthread_clockjoin_np(pthread_t th, void **result, clockid_t clock, const struct timespec *abstime)
{
    if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
        return EINVAL;
    return abstime ? join(th, result, false, clock, abstime) : join(th, result, false, 0, NULL);
}

ITO_POSIX_API int pthread_detach(pthread_t th)
{
    struct ito__pthread *pt = ito__pthread_of(th);
    if (!pt)
        return ESRCH;
    if (pt->main) {
        atomic_store_explicit(&pt->detached, true, memory_order_relaxed);
        return 0;
    }
    int e = ito_detach(pt->id);
    if (e)
        return e == ESRCH ? ESRCH : EINVAL;
    atomic_store_explicit(&pt->detached, true, memory_order_relaxed);
    unref(pt, ITO__PT_REF_ID);
    return 0;
}

/* ------------------------------------------------------------ identity */

ITO_POSIX_API pthread_t pthread_self(void) { return (pthread_t)ito__arch_thread_pointer(); }

ITO_POSIX_API int pthread_equal(pthread_t a, pthread_t b) { return a == b; }

/* -------------------------------------------------- a running thread's */

ITO_POSIX_API int pthread_getattr_np(pthread_t th, pthread_attr_t *attr)
{
    struct ito__pthread *pt = ito__pthread_of(th);
    if (!pt || !attr)
        return ESRCH;
    if (pt->main) {
        /* glibc's own thread: the C library knows its stack. */
        int e = ito__libc_pthread_getattr_np(th, attr);
        if (!e && atomic_load_explicit(&pt->detached, memory_order_relaxed))
            pthread_attr_setdetachstate(attr, PTHREAD_CREATE_DETACHED);
        if (!e && __atomic_load_n(&ito__posix_started, __ATOMIC_ACQUIRE))
            e = ito__posix_affinity_attr(th, attr);   /* (the C library's is its carrier's) */
        return e;
    }
    int e = pthread_attr_init(attr);
    if (e)
        return e;
    pthread_attr_setdetachstate(attr, atomic_load_explicit(&pt->detached, memory_order_relaxed)
                                          ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE);
    struct sched_param p = { .sched_priority = pt->sched_priority };
    pthread_attr_setschedpolicy(attr, pt->sched_policy);
    pthread_attr_setschedparam(attr, &p);
    pthread_attr_setguardsize(attr, pt->guard_size);
    void *lo = pt->stack_addr;
    size_t size = pt->stack_size;
    if (!pt->user_stack) {
        /* The pooled stack it runs on (ito gives it at its spawn). */
        struct ito__thread *t = ito__thread_lock_handle(pt->id);
        if (t) {
            lo = t->stack.lo;
            size = t->stack.size;
            ito__spin_unlock(&t->lk);
        }
    }
    if (lo)
        pthread_attr_setstack(attr, lo, size);
    else
        pthread_attr_setstacksize(attr, size);
    return ito__posix_affinity_attr(th, attr);
}

ITO_POSIX_API int pthread_setname_np(pthread_t th, const char *name)
{
    struct ito__pthread *pt = ito__pthread_of(th);
    if (!pt || !name)
        return ESRCH;
    if (strlen(name) > 15)
        return ERANGE;   /* glibc's (and the kernel's) limit: 16 bytes with the NUL */
    ito__posix_start();
    int e = ito_set_name(pt->id, name);
    return e == 0 ? 0 : ESRCH;
}

ITO_POSIX_API int pthread_getname_np(pthread_t th, char *buf, size_t len)
{
    struct ito__pthread *pt = ito__pthread_of(th);
    if (!pt || !buf)
        return ESRCH;
    char name[ITO_NAME_MAX];
    ito__posix_start();
    if (ito_get_name(pt->id, name, sizeof name) != 0)
        name[0] = 0;
    if (strlen(name) + 1 > len)
        return ERANGE;
    strcpy(buf, name);
    return 0;
}

