/* SPDX-License-Identifier: MIT */
/*
 * Activations: the kernel threads that carry vprocs.
 *
 * Activations are the vprocs' carriers, and spares: parked kernel threads
 * that the monitor (upcall/monitor.c) gives the vproc of a carrier blocked in
 * the kernel. A carrier that finds its vproc gone, when its call returns
 * or at its next critical section (runtime/carrier.c: the whole protocol),
 * becomes a spare in turn.
 *
 * Each activation has ito's one thread-local variable pointing at it, an
 * alternate signal stack (so a stack overflow can be reported, overflow.c),
 * its own errno location, and a scheduler context: the idle loop of sched.c
 * and idle.c. A started activation runs that loop on its own pthread stack.
 * The adopted one — the kernel thread that initialized ito, usually main —
 * keeps running its own code as an ito thread, so its scheduler context gets
 * a separate stack.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/libc.h"
#include "base/futex.h"
#include "base/kthread.h"
#include "base/panic.h"
#include "runtime/event.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"
#include "runtime/sched.h"
#include "runtime/stats.h"
#include "runtime/thread.h"
#include "runtime/carrier.h"
#include "runtime/vproc.h"
#include "runtime/hooks.h"
#include "runtime/sigmask.h"
#include "runtime/trace.h"

/* Read only from assembly (arch.h): `used` and `externally_visible` keep
 * link-time optimization from dropping or renaming it. */
__thread struct ito__activation *ito__tls_act
    __attribute__((tls_model("initial-exec"), used, externally_visible));
/* The running thread of this kernel thread's activation (NULL: none, or its
 * scheduler context), and the critical-section word (runtime/critical.h). */
__thread struct ito__thread *ito__tls_cur __attribute__((tls_model("initial-exec"), used, externally_visible));
__thread uint32_t ito__tls_critical __attribute__((tls_model("initial-exec"), used, externally_visible));

#define ACT_STACK (512 * 1024)       /* pthread stack of a started activation */
#define SCHED_STACK (256 * 1024)     /* scheduler stack of the adopted activation */

void ito__errno_set(int e)
{
    if (ITO_OWN_TLS) {
        errno = e;   /* the thread's own, wherever it runs */
        return;
    }
    ito__critical_enter();
    struct ito__activation *a = ito__activation_self();
    if (a)
        *a->errno_ptr = e;   /* a switch at the section's end carries it along */
    else
        errno = e;
    ito__critical_exit();
}

/* A signal stack: large enough for a handler with the full AVX-512 state. */
static void altstack_setup(struct ito__activation *a)
{
    long min = sysconf(_SC_SIGSTKSZ);
    a->altstack_size = (size_t)(min > 0 ? min : SIGSTKSZ) * 4;
    if (a->altstack_size < 64 * 1024)
        a->altstack_size = 64 * 1024;
    a->altstack = mmap(NULL, a->altstack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a->altstack != MAP_FAILED) {
        stack_t ss = { .ss_sp = a->altstack, .ss_size = a->altstack_size, .ss_flags = 0 };
        sigaltstack(&ss, NULL);
    }
}

void ito__activation_setup_self(struct ito__activation *a, bool pin)
{
    ito__tls_act = a;
    a->errno_ptr = &errno;
    if (!a->tp)
        a->tp = ito__arch_thread_pointer();   /* (the adopted one has its own: ito__activation_adopt) */
    __atomic_store_n(&a->tid, gettid(), __ATOMIC_RELEASE);   /* others read it (ito__activation_tid) */
    if (!a->listed) {
        /* Activations never end: pushed once, never taken off. Release: its
         * tid is seen by whoever finds it with the acquire load. */
        a->listed = true;
        struct ito__activation *head = atomic_load_explicit(&ito__rt.all_acts, memory_order_relaxed);
        do
            a->all_next = head;
        while (!atomic_compare_exchange_weak_explicit(&ito__rt.all_acts, &head, a, memory_order_release,
                                                      memory_order_relaxed));
    }
    a->pthread = ito__libc_pthread_self();
    a->critical_word = &ito__tls_critical;
    a->kmask = ito__sigmask_of_kthread();
    if (ito__libc_pthread_getcpuclockid(a->pthread, &a->cpu_clock) != 0)
        a->cpu_clock = (clockid_t)-1;   /* the monitor then never takes its vproc while asleep */
    if (!a->altstack)   /* (the child of fork keeps its kernel thread's) */
        altstack_setup(a);
    if (a->vp) {
        if (pin)
            ito__pin_self(a->vp->cpu);
        ito__carrier_adopt(a->vp, a);   /* after the fields the monitor reads */
    }
    ito__hooks.activation_started(a);
}

bool ito__activation_tid_known(pid_t tid)
{
    for (struct ito__activation *a = atomic_load_explicit(&ito__rt.all_acts, memory_order_acquire); a;
         a = a->all_next)
        if (ito__activation_tid(a) == tid)
            return true;
    return false;
}

void ito__activation_forget_self(void)
{
    ito__tls_act = NULL;
    ito__arch_set_current(NULL);
}

/* Bounds of the calling kernel thread's own stack. */
static void own_stack(struct ito__stack *s)
{
    pthread_attr_t attr;
    void *addr = NULL;
    size_t size = 0;
    if (ito__libc_pthread_getattr_np(ito__libc_pthread_self(), &attr) == 0) {
        pthread_attr_getstack(&attr, &addr, &size);
        pthread_attr_destroy(&attr);
    }
    s->lo = addr;
    s->size = size;
    s->flags = 0;   /* not ours: never pooled, no guard page of ours */
}

static void *activation_main(void *arg)
{
    struct ito__activation *a = arg;
    ito__libc_pthread_setname_np(ito__libc_pthread_self(), "ito-activation");
    ito__sigmask_carrier_start();
    ito__activation_setup_self(a, true);
    own_stack(&a->sched_stack);
    a->sched_tsan_fiber = ito__tsan_current();
    ito__critical_restore(1);   /* a scheduler context is one critical section */
    if (a->vp)
        ito__event(ITO_EVENT_VPROC_ADDED, a->vp, 0);
    ito__sched_loop(a);
}

/* vp NULL: a spare, which parks at once (its scheduler loop sees no vproc). */
static int start(struct ito__vproc *vp)
{
    struct ito__activation *a = calloc(1, sizeof *a);
    if (!a)
        return ENOMEM;
    a->vp = vp;
    if (vp)
        vp->act = a;
    atomic_fetch_add_explicit(&ito__rt.nactivations, 1, memory_order_relaxed);
    int e = ito__kthread_start(NULL, ACT_STACK, activation_main, a, NULL);   /* it names itself */
    if (e) {
        atomic_fetch_sub_explicit(&ito__rt.nactivations, 1, memory_order_relaxed);
        if (vp)
            vp->act = NULL;
        free(a);
    }
    return e;
}

int ito__activation_start(struct ito__vproc *vp) { return start(vp); }

int ito__activation_start_spare(void) { return start(NULL); }

void ito__spare_put(struct ito__activation *a)
{
    ito__spin_lock(&ito__rt.spare_lock);
    a->spare_next = ito__rt.spares;
    ito__rt.spares = a;
    ito__rt.nspares++;
    ito__spin_unlock(&ito__rt.spare_lock);
}

struct ito__activation *ito__spare_take(void)
{
    ito__spin_lock(&ito__rt.spare_lock);
    struct ito__activation *s = ito__rt.spares;
    if (s) {
        ito__rt.spares = s->spare_next;
        ito__rt.nspares--;
    }
    ito__spin_unlock(&ito__rt.spare_lock);
    return s;
}

void ito__activation_park(struct ito__activation *a)
{
    /* A spare runs no thread: no signal is handled here — also if threads'
     * masks come into use while it is parked (the POSIX face's first
     * interruptible wait): a signal for the process is kept for a thread. */
    uint64_t was = a->kmask;
    ito__sigmask_block_all(a);
    atomic_store_explicit(&a->park, 0, memory_order_relaxed);
    ito__spare_put(a);
    /* Acquire pairs with the monitor's release store of park after it set
     * a->vp (upcall/monitor.c). */
    while (atomic_load_explicit(&a->park, memory_order_acquire) == 0)
        ito__futex_wait(&a->park, 0, 0);
    if (!atomic_load_explicit(&ito__sigmasks_used, memory_order_relaxed))
        ito__sigmask_write(a, was);   /* switches do not carry masks: back to the one it had */
    if (ito__rt.pin)
        ito__pin_self(a->vp->cpu);
    if (a->stall_handoff)
        ITO_STAT_INC(a->vp, stalls);
    else
        ITO_STAT_INC(a->vp, handoffs);
    ITO_TRACE_EVENT(handoff, a->vp->index, ito__trace_thread_of(a->handoff_thread), a->stall_handoff);
    if (a->handoff_thread) {
        ito__event(ITO_EVENT_BLOCKED, a->vp, a->handoff_thread);
        a->handoff_thread = 0;
    }
}

/* A new activation for the calling kernel thread, carrying vp. The kernel
 * thread's own stack holds the running thread's frames, so the scheduler
 * context gets a stack of its own. */
static int adopted_new(struct ito__vproc *vp, struct ito__activation **out)
{
    struct ito__activation *a = calloc(1, sizeof *a);
    if (!a)
        return ENOMEM;
    a->vp = vp;
    a->adopted = true;
    vp->act = a;
    atomic_fetch_add_explicit(&ito__rt.nactivations, 1, memory_order_relaxed);
    int e = ito__stack_map_standalone(SCHED_STACK, &a->sched_stack, &a->mapping, &a->mapping_size);
    if (e)
        return e;
    a->sched.sp = ito__ctx_make(ito__stack_top(&a->sched_stack), ito__sched_entry, ito__arch_fpctl());
    a->sched_tsan_fiber = ito__tsan_create();
    *out = a;
    return 0;
}

int ito__activation_adopt(struct ito__vproc *vp)
{
    struct ito__activation *a;
    int e = adopted_new(vp, &a);
    if (e)
        return e;

    /* The caller's own context becomes an ito thread. With ITO_OWN_TLS it
     * keeps this kernel thread's thread pointer, and the scheduler context
     * gets one of its own. */
    struct ito__thread *t = ito__thread_alloc(vp);
    if (!t)
        return ENOMEM;
    if (ITO_OWN_TLS) {
        t->tp = ito__arch_thread_pointer();
        if (!(a->tp = ito__hooks.tp_new()))
            return ENOMEM;
    }
    t->vp = vp;
    t->flags = ITO__TF_MAIN;
    t->started = true;
    t->pref_vproc = -1;
    __atomic_store_n(&t->prio, ITO_PRIO_DEFAULT, __ATOMIC_RELAXED);
    t->fpctl = ito__arch_fpctl();
    own_stack(&t->stack);
    /* Its frames stay on this kernel thread's stack while it may be parked
     * and the activation runs elsewhere (sanitizer.h). */
    ito__lsan_root(t->stack.lo, t->stack.size);
    t->stack_size = t->stack.size;
    t->tsan_fiber = ito__tsan_current();
    strcpy(t->name, "main");
    ito__thread_set_state(t, ITO__TS_FREE, ITO__TS_NEW);
    ito__thread_set_state(t, ITO__TS_NEW, ITO__TS_RUNNING);
    uint64_t ctl = atomic_load_explicit(&t->ctl, memory_order_relaxed) & ~(uint64_t)UINT32_MAX;
    atomic_store_explicit(&t->ctl, ctl, memory_order_release);
    ito__vproc_set_current(vp, t);
    ITO_TRACE_EVENT(run, vp->index, (int64_t)t->index);
    atomic_store_explicit(&vp->run_state, ITO__VP_BUSY, memory_order_relaxed);
    ito__activation_setup_self(a, true);
    atomic_store_explicit(&t->sigmask, a->kmask, memory_order_relaxed);
    return 0;
}

int ito__activation_adopt_forked(struct ito__vproc *vp, struct ito__thread *t, const struct ito__activation *old)
{
    struct ito__activation *a;
    int e = adopted_new(vp, &a);
    if (e)
        return e;
    /* The old scheduler context's thread pointer: one of ito's if old was
     * adopted itself; else the kernel thread's own, inside a stack that the
     * C library of the child counts as free (it reclaims the stacks of every
     * thread but the caller's, and with ITO_OWN_TLS the caller is t). */
    if (ITO_OWN_TLS && !(a->tp = old->adopted ? old->tp : ito__hooks.tp_new()))
        return ENOMEM;
    t->vp = vp;
    ito__vproc_set_current(vp, t);
    atomic_store_explicit(&vp->run_state, ITO__VP_BUSY, memory_order_relaxed);
    /* Forked inside ito_blocking_begin/end: the bracket goes on here
     * (ito__carrier_adopt marks it). */
    a->blocking = old->blocking;
    a->altstack = old->altstack;
    a->altstack_size = old->altstack_size;
    if (a->blocking)
        atomic_store_explicit(&a->blocked, t, memory_order_relaxed);
    /* Pinned when the child's runtime resumes (runtime/fork.c): a child that
     * only execs keeps the process's CPUs. */
    ito__activation_setup_self(a, false);
    return 0;
}
