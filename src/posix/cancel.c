/* SPDX-License-Identifier: MIT */
/*
 * Cancellation of ito threads.
 *
 * The C library already knows how to cancel a thread, and ito threads run
 * on C-library thread descriptors of their own (tcb.c), so most of it is
 * the C library's, working on those descriptors:
 *   - the request is its word `cancelhandling` in the target's descriptor
 *     (state, type, "cancelled", "exiting" bits), found through the
 *     descriptor table glibc exports for debuggers;
 *   - acting on it is its pthread_testcancel, which unwinds the thread's
 *     stack with the forced unwinding that runs C++ destructors and the
 *     handlers of pthread_cleanup_push (also glibc's, unchanged) down to the
 *     frame that started the thread (thread.c: `start`), which then ends
 *     it with PTHREAD_CANCELED;
 *   - its own cancellation points (read, write, nanosleep, accept, poll and
 *     every other blocking call in the C library) test the word, and turn
 *     asynchronous while they sleep in the kernel.
 * What is ito's: making a thread that waits notice the request.
 *   - A thread parked in one of the POSIX face's waits that are cancellation
 *     points (condition variables, semaphores, joins) is woken: those waits
 *     are interruptible (runtime/wait.h) and end with EINTR, after which the
 *     wait tests the word and unwinds. A condition wait first takes its
 *     mutex back, as POSIX requires of the cleanup handlers' view.
 *   - A thread asleep in the kernel inside one of the C library's
 *     cancellation points (its type is then asynchronous), or running with
 *     asynchronous cancellation, gets the C library's cancellation signal
 *     (SIGCANCEL) on the kernel thread that carries it. glibc would send it
 *     to the thread's kernel thread ID; an ito thread has none, so the
 *     sender reads which activation carries the target from the target's
 *     own TLS block, and the handler is ito's: the kernel thread may carry
 *     another ito thread by the time the signal arrives, so the handler acts
 *     only if the thread it interrupts is the one the signal was for, and
 *     not inside one of ito's critical sections.
 *   - Either delivery can miss: the target may be about to wait, or
 *     preempted. So a request stays on a list until its target exits, and
 *     a small ito thread (ito-requests) delivers it again every millisecond
 *     while the list is not empty. Waits and wakers pay nothing for any of
 *     this; a program that never cancels pays a load at each cancellation
 *     point.
 * Signals sent to one thread (posix/signal.c) travel the same way: the same
 * list, the same interruption of waits, the same poke, whose handler then
 * raises them on the target's kernel thread.
 *
 * The initial thread started in the C library's own frame, which holds the
 * buffer its forced unwinding ends in; ito points that buffer's jump at a
 * function of its own (thread.c), so that unwinding ends the ito thread,
 * not the kernel thread under it.
 *
 * What glibc's layout must be: the descriptor table must name
 * `cancelhandling`, and the bits must be where glibc has kept them since
 * NPTL began (checked once against glibc's own pthread_setcancelstate and
 * pthread_setcanceltype); otherwise pthread_cancel fails with ENOSYS and
 * says so.
 */
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch.h"
#include "base/kthread.h"
#include "base/libc.h"
#include "base/panic.h"
#include "posix/posix.h"
#include "posix/tcb.h"
#include "runtime/critical.h"
#include "runtime/hooks.h"
#include "runtime/sigmask.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"
#include "runtime/wait.h"

/* glibc's cancelhandling bits. */
#define CANCEL_DISABLED 0x01   /* CANCELSTATE_BITMASK */
#define CANCEL_ASYNC 0x02      /* CANCELTYPE_BITMASK */
#define CANCELING 0x04
#define CANCELED 0x08
#define CANCEL_EXITING 0x10

#define SIGCANCEL_NUMBER 32   /* glibc's SIGCANCEL: __SIGRTMIN */
#define REDELIVER_NS 1000000u

static bool supported;
bool ito__posix_cancel_used;
static bool router_asked;   /* the first cancellation point has started the router */

/* Targets whose request has not been acted on: until they exit. */
static ito_mutex_t pending_lock = ITO_MUTEX_INIT;
static struct ito__pthread *pending;
static bool deliverer_running;

static _Atomic int *word(const struct ito__pthread *pt) { return ito__tcb_cancelhandling(pt->tp); }

/* The C library's functions (looked up on first use: a library constructor
 * may call them before ours has run). */
static void libc_testcancel(void) { ITO__POSIX_LIBC(pthread_testcancel, "GLIBC_2.2.5")(); }

static int libc_setcancelstate(int state, int *old)
{
    return ITO__POSIX_LIBC(pthread_setcancelstate, "GLIBC_2.2.5")(state, old);
}

static int libc_setcanceltype(int type, int *old)
{
    return ITO__POSIX_LIBC(pthread_setcanceltype, "GLIBC_2.2.5")(type, old);
}

static void on_preempted_resume(void);

/* Once, at the POSIX face's start, on the initial thread: find glibc's
 * functions and check the layout of its word. */
void ito__posix_cancel_init(void)
{
    _Atomic int *w = ito__tcb_cancelhandling(ito__arch_thread_pointer());
    if (!w)
        return;
    int before = atomic_load(w), s, t;
    libc_setcancelstate(PTHREAD_CANCEL_DISABLE, &s);
    libc_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &t);
    int both = atomic_load(w);
    libc_setcanceltype(t, NULL);
    libc_setcancelstate(s, NULL);
    supported = (both & ~before) == (CANCEL_DISABLED | CANCEL_ASYNC) && atomic_load(w) == before;
    if (supported)
        ito__hooks.preempted_resume = on_preempted_resume;
}

/* ----------------------------------------------------------- delivery */

static void on_cancel_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    /* Ours: queued by deliver, with the thread it is for (SI_QUEUE); or
     * the C library's own cancellation of one of its threads (SI_TKILL),
     * which acts on no ito thread. */
    if (si->si_pid != getpid() || (si->si_code != SI_QUEUE && si->si_code != SI_TKILL))
        return;
    int saved = errno;
    /* The thread this poke was sent for may be poked again (deliver sends
     * one at a time, or a flood of pthread_kill would nest this handler,
     * SA_NODEFER, until the stack overflows). Pthread objects are never
     * freed. Release pairs with the sender's exchange. */
    struct ito__pthread *target = si->si_code == SI_QUEUE ? si->si_value.sival_ptr : NULL;
    if (target)
        atomic_store_explicit(&target->poked, false, memory_order_release);
    struct ito__pthread *pt = ito__pthread_self();
    /* A wait in the kernel that this ends with EINTR (a poke for pt, or one
     * meant for the thread this kernel thread ran before) waits again
     * (sigmask.c, sigwait.c). */
    ito__sigmask_interrupted();
    /* Only on the thread it was sent for, outside ito's own code. */
    if (pt && pt == target && !(ito__arch_critical_get() & ITO__CRITICAL_DEPTH)) {
        int c = atomic_load_explicit(word(pt), memory_order_relaxed);
        if ((c & (CANCEL_DISABLED | CANCEL_ASYNC | CANCELED | CANCEL_EXITING)) == (CANCEL_ASYNC | CANCELED)) {
            errno = saved;
            libc_testcancel();   /* unwinds from here, through the signal frame */
        }
        /* Their handlers run here, on pt. This handler is installed with
         * SA_RESTART (a poke must not end a system call by itself); if a
         * handler that runs here lacks it, the call it interrupted fails
         * with EINTR, as the signal itself would have made it. */
        bool eintr = false;
        if (atomic_load_explicit(&pt->kernel_wait, memory_order_relaxed))
            ;   /* every signal blocked: the wait's end raises them (epoll.c) */
        else if (ito__posix_signals_raise(pt, &eintr) && eintr)
            ito__arch_uc_syscall_eintr(uc);
    }
    errno = saved;
}

struct kernel_sigaction {
    void (*handler)(int, siginfo_t *, void *);
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};

#define KSA_RESTORER 0x04000000

static void setup_once(void)
{
    /* The C library's sigaction refuses its own signals: install with the
     * system call. SA_NODEFER: a handler that unwinds never returns to
     * unblock the signal on its kernel thread. */
    struct kernel_sigaction ka = { .handler = on_cancel_signal,
                                   .flags = SA_SIGINFO | SA_RESTART | SA_NODEFER | KSA_RESTORER,
                                   .restorer = ito__arch_sigreturn };
    if (syscall(SYS_rt_sigaction, SIGCANCEL_NUMBER, &ka, NULL, sizeof ka.mask) != 0)
        ito__panic("cannot install the handler of the signal that delivers requests: %s", strerror(errno));
    /* The forced unwinding a handler starts finds the unwinder through the C
     * library, which loads it on first use, under a lock: load it now, from
     * a safe place (backtrace uses the same loader). */
    void *frame[1];
    backtrace(frame, 1);
}

/* Does pt have a request it has not acted on? A cancellation stays one
 * until pt exits (it may be disabled now and enabled later); signals until
 * their handlers have run (those it blocks wait: they are no request). */
static bool wants(struct ito__pthread *pt)
{
    int c = atomic_load_explicit(word(pt), memory_order_relaxed);
    if ((c & CANCELED) && !(c & CANCEL_EXITING))
        return true;
    if (!atomic_load_explicit(&pt->sig_pending, memory_order_relaxed))
        return false;
    struct ito__thread *t = ito__pthread_thread(pt);
    return t && ito__posix_signals_deliverable(pt, t);
}

/* Make pt notice its requests now if it can. Under pending_lock: pt has not
 * passed ito__posix_cancel_exit, so it and its ito thread are alive. */
static void deliver(struct ito__pthread *pt)
{
    int c = atomic_load_explicit(word(pt), memory_order_relaxed);
    bool cancel = (c & CANCELED) && !(c & (CANCEL_DISABLED | CANCEL_EXITING));
    struct ito__thread *t = ito__pthread_thread(pt);
    if (!t)
        return;
    bool sigs = ito__posix_signals_deliverable(pt, t) != 0;
    if (!cancel && !sigs)
        return;
    if (ito__wait_interrupt(t))
        return;
    if (!(sigs || (c & CANCEL_ASYNC)) || ito__thread_state(t) != ITO__TS_RUNNING)
        return;
    /* Running, with signals to take or asynchronously cancellable (most
     * often asleep in a C-library call, where it cannot move). */
    ito__posix_poke(pt);
}

static pthread_once_t setup = PTHREAD_ONCE_INIT;

void ito__posix_poke_setup(void) { pthread_once(&setup, setup_once); }

bool ito__posix_poke(struct ito__pthread *pt)
{
    ito__posix_poke_setup();
    /* Poke the kernel thread that carries pt. If pt has moved on meanwhile
     * (a computing thread, preempted between the caller's look and this
     * signal), the handler finds another thread there and does nothing —
     * but a system call of that thread which the kernel does not restart
     * returns EINTR (epoll.c's waits wait again). The window is a few
     * instructions. */
    struct ito__activation *a =
        __atomic_load_n((struct ito__activation **)(pt->tp + ito__arch_tls_offset_act()), __ATOMIC_ACQUIRE);
    pid_t tid = a ? ito__activation_tid(a) : 0;
    if (tid <= 0)
        return false;
    /* acq_rel: pairs with the handler's release store of false (a poke of
     * pt still on its way: the next deliver sends one if it is needed). */
    if (atomic_exchange_explicit(&pt->poked, true, memory_order_acq_rel))
        return true;
    if (ito__kthread_signal(tid, SIGCANCEL_NUMBER, (union sigval){ .sival_ptr = pt }) == 0)
        return true;
    atomic_store_explicit(&pt->poked, false, memory_order_relaxed);   /* none on its way */
    return false;
}

static void *deliverer(void *arg)
{
    (void)arg;
    /* A thread of ito's own: no signal for the process is handled here. */
    ito__posix_sigmask_change(SIG_SETMASK, ~0ull, NULL);
    for (;;) {
        ito_sleep_ns(REDELIVER_NS);
        ito_mutex_lock(&pending_lock);
        for (struct ito__pthread **p = &pending; *p;) {
            struct ito__pthread *pt = *p;
            if (wants(pt)) {
                deliver(pt);
                p = &pt->next_listed;
            } else {
                *p = pt->next_listed;   /* acted on */
                pt->listed = false;
            }
        }
        if (!pending) {
            deliverer_running = false;
            ito_mutex_unlock(&pending_lock);
            return NULL;
        }
        ito_mutex_unlock(&pending_lock);
    }
}

/* Under pending_lock: list pt (not exiting: the caller checked) and deliver. */
static void list_and_deliver(struct ito__pthread *pt)
{
    pthread_once(&setup, setup_once);
    if (!pt->listed) {
        pt->next_listed = pending;
        pending = pt;
        pt->listed = true;
    }
    deliver(pt);
    if (!deliverer_running) {
        ito_attr_t a;
        ito_attr_init(&a);
        ito_attr_set_detached(&a, true);
        ito_attr_set_name(&a, "ito-requests");
        deliverer_running = ito_spawn(NULL, &a, deliverer, NULL) == 0;
    }
}

bool ito__posix_requests_supported(void) { return supported; }

void ito__posix_cancel_forked(void)
{
    /* The deliverer is a thread of the parent's; the list names the
     * parent's threads. Requests pending for the child's thread stay in its
     * descriptor and are acted on at its next cancellation point. */
    ito_mutex_init(&pending_lock);
    pending = NULL;
    deliverer_running = false;
    router_asked = false;   /* the router was the parent's: the next cancellation point starts one */
    struct ito__pthread *self = ito__pthread_self();
    if (self)
        self->listed = false;
}

void ito__posix_request(struct ito__pthread *pt)
{
    ito_mutex_lock(&pending_lock);
    /* seq_cst: the exiting thread sets EXITING, then looks for a listing
     * under this lock (ito__posix_cancel_exit). */
    if (!(atomic_load(word(pt)) & CANCEL_EXITING))
        list_and_deliver(pt);
    ito_mutex_unlock(&pending_lock);
}

/* A thread the tick switched out runs again (runtime/hooks.h): act on an
 * asynchronous cancellation requested while it was not running. */
static void on_preempted_resume(void)
{
    if (!__atomic_load_n(&ito__posix_cancel_used, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&ito__posix_signals_used, __ATOMIC_RELAXED))
        return;
    struct ito__pthread *pt = ito__pthread_self();
    if (!pt || !pt->cancellable)
        return;
    int c = atomic_load_explicit(word(pt), memory_order_relaxed);
    if ((c & (CANCEL_DISABLED | CANCEL_ASYNC | CANCELED | CANCEL_EXITING)) == (CANCEL_ASYNC | CANCELED))
        libc_testcancel();
    ito__posix_signals_raise(pt, NULL);
}

/* -------------------------------------------------------------- calls */

ITO_POSIX_API int pthread_cancel(pthread_t th)
{
    struct ito__pthread *pt = ito__pthread_of(th);
    if (!pt) {
        /* A kernel thread of the C library's own: its cancellation. */
        return ITO__POSIX_LIBC(pthread_cancel, "GLIBC_2.2.5")(th);
    }
    if (!pt->cancellable)
        return ESRCH;   /* a thread of ito's own API: not a POSIX thread */
    if (!supported)
        return ITO__POSIX_UNSUPPORTED("pthread_cancel", "this C library's cancellation word is not laid out "
                                                        "as libito-pthread expects");
    /* Before the request: a cancellation point that sees the flag tests the
     * word (ito__posix_cp_enter). */
    __atomic_store_n(&ito__posix_cancel_used, true, __ATOMIC_SEQ_CST);
    if (pt == ito__pthread_self()) {
        int c = atomic_fetch_or(word(pt), CANCELING | CANCELED);
        if ((c & (CANCEL_DISABLED | CANCEL_ASYNC)) == CANCEL_ASYNC)
            libc_testcancel();
        return 0;
    }
    /* The request and the listing under one lock: an exiting thread sets
     * EXITING in the same word, then takes the lock to come off the list
     * (ito__posix_cancel_exit), so it is never listed after it has looked. */
    ito_mutex_lock(&pending_lock);
    int c = atomic_fetch_or(word(pt), CANCELING | CANCELED);
    if (!(c & (CANCELED | CANCEL_EXITING)))
        list_and_deliver(pt);
    ito_mutex_unlock(&pending_lock);
    return 0;
}

ITO_POSIX_API int pthread_setcancelstate(int state, int *old) { return libc_setcancelstate(state, old); }

ITO_POSIX_API int pthread_setcanceltype(int type, int *old) { return libc_setcanceltype(type, old); }

ITO_POSIX_API void pthread_testcancel(void) { libc_testcancel(); }

/* The token: the thread, and in bit 0 whether its waits were interruptible
 * before (a signal handler's call nested in another: leaving the inner one
 * must not end the outer one's interruptibility). */
void *ito__posix_cp_enter(void)
{
    struct ito__thread *t = ito__thread_self();
    if (!t)
        return NULL;   /* a kernel thread of the C library's: not cancelled by ito */
    if (__atomic_load_n(&ito__posix_cancel_used, __ATOMIC_RELAXED))
        libc_testcancel();
    if (ITO_UNLIKELY(!__atomic_load_n(&router_asked, __ATOMIC_RELAXED))) {
        /* From the first wait that a signal may interrupt, a signal for the
         * process goes to a thread, as it would go to a kernel thread blocked
         * in a system call: kernel threads block signals where they run no
         * thread (switches carry masks: runtime/sigmask.c), so the kernel
         * keeps one that no running thread takes, and the router ends the
         * wait of a thread that accepts it (posix/sigroute.c). */
        __atomic_store_n(&router_asked, true, __ATOMIC_RELAXED);
        ito__sigmasks_begin();
        ito__posix_sigroute_start();
    }
    bool was = t->interruptible;
    t->interruptible = true;
    return (void *)((uintptr_t)t | was);
}

void ito__posix_cp_end(void *token)
{
    struct ito__thread *t = (struct ito__thread *)((uintptr_t)token & ~(uintptr_t)1);
    if (t)
        t->interruptible = (uintptr_t)token & 1;
}

int ito__posix_cp_check(int r)
{
    if (r != EINTR) {
        ito__posix_signals_check();   /* sent while it was ready to run */
        return r;
    }
    /* Interrupted by a request: act on it. */
    libc_testcancel();
    struct ito__pthread *pt = ito__pthread_self();
    bool eintr = false;
    if (!pt || !ito__posix_signals_raise(pt, &eintr))
        return ITO__CP_AGAIN;
    return eintr ? EINTR : ITO__CP_RESTART;
}

int ito__posix_cp_leave(void *token, int r)
{
    ito__posix_cp_end(token);
    return ito__posix_cp_check(r);
}

void ito__posix_cancel_exit(struct ito__pthread *pt)
{
    if (!pt->cancellable || !supported)
        return;
    /* seq_cst: ordered against pthread_cancel's fetch_or on the same word,
     * and ito__posix_request's load of it. */
    atomic_fetch_or(word(pt), CANCEL_EXITING);
    if (!__atomic_load_n(&ito__posix_cancel_used, __ATOMIC_SEQ_CST) &&
        !__atomic_load_n(&ito__posix_signals_used, __ATOMIC_SEQ_CST))
        return;
    ito_mutex_lock(&pending_lock);
    if (pt->listed) {
        struct ito__pthread **p = &pending;
        while (*p != pt)
            p = &(*p)->next_listed;
        *p = pt->next_listed;
        pt->listed = false;
    }
    ito_mutex_unlock(&pending_lock);
}
