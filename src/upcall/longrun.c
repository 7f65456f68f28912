/* SPDX-License-Identifier: MIT */
/*
 * Long-running threads: ITO_LONGRUN_MS=N reports, once, a thread that has
 * computed for more than N ms without a switch, with its backtrace.
 *
 * Time slices already keep the other threads running beside such a thread
 * (preempt.c); what is reported is a thread that holds a vproc far longer
 * than the program meant it to — a loop that never ends, an accidental
 * quadratic — which is otherwise only visible as lost throughput.
 *
 * A kernel thread of its own ("ito-longrun") looks at every vproc four
 * times per N ms: a vproc whose kernel thread is not in a blocking call and
 * that has switched to no thread since the last look, whose thread has
 * come to no scheduling point of its own (a yield: the vproc's picks less
 * its ended slices stand still — a slice that ends with nothing else to run
 * switches to nobody) and that still runs the same thread has run it
 * without a switch since then. Past N ms the thread is reported once (until it switches).
 * Its stack can only be walked while it stands still: the watch sends the
 * kernel thread that runs it the time-slice signal with ITO__LONGRUN_TAG as
 * its value; the tick's handler (preempt.c) holds the thread there, with the
 * signal's context, while the watch walks its stack; the watch names the
 * frames once the thread goes on (naming may allocate, which a handler
 * interrupting malloc must not).
 * With time slices off there is no such handler: the report then comes
 * without a backtrace.
 */
#include "upcall/longrun.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/backtrace.h"
#include "arch.h"
#include "base/clock.h"
#include "base/env.h"
#include "base/kthread.h"
#include "base/libc.h"
#include "base/panic.h"
#include "runtime/carrier.h"
#include "runtime/dump.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

static uint64_t limit_ns;
/* How long a thread is held still for the watch to walk its stack: far
 * more than a walk takes (microseconds), so that only a watch that cannot
 * go on (a lock the held thread holds) lets it go unwalked. */
#define ITO__LONGRUN_HOLD_NS 1000000000u

/* A request. The watch names the thread (asked) and signals the kernel
 * thread that runs it; its handler copies the signal's context (held_uc),
 * says HELD and waits until the watch, which walks the stack meanwhile,
 * says DONE. The walk reads only the stack; the names come after, with
 * malloc, which a handler may not call. */
enum { REQ_IDLE, REQ_HELD, REQ_DONE, REQ_GONE };
static struct ito__thread *_Atomic asked;
static _Atomic int req;
static ucontext_t held_uc;
static struct ito__bt bt;   /* the watch's */

static void report_line(struct ito__thread *t, int vproc, uint64_t ms, const char *tail)
{
    char line[256];
    size_t n = (size_t)snprintf(line, sizeof line, "ito: ");
    n += ito__dump_name(line + n, sizeof line - n, t);
    int k = snprintf(line + n, sizeof line - n, " has run for %llu ms on vproc %d without a switch%s\n",
                     (unsigned long long)ms, vproc, tail);
    n += k > 0 ? (size_t)k : 0;
    if (n > sizeof line - 1)
        n = sizeof line - 1;
    ssize_t w = ito__sys_write(STDERR_FILENO, line, n);
    (void)w;
}

bool ito__longrun_signal(const siginfo_t *si, void *uc)
{
    if (si->si_code != SI_QUEUE || si->si_pid != getpid() || si->si_value.sival_int != ITO__LONGRUN_TAG)
        return false;
    struct ito__thread *t = ito__thread_self();
    /* The thread may have switched since the watch looked: then nothing. */
    if (!t || t != atomic_exchange_explicit(&asked, NULL, memory_order_relaxed))
        return true;
    memcpy(&held_uc, uc, sizeof held_uc);
    /* Release: the context and the stack it names, to the watch's acquire. */
    atomic_store_explicit(&req, REQ_HELD, memory_order_release);
    uint64_t until = ito__now_ns() + ITO__LONGRUN_HOLD_NS;
    int st;
    /* Acquire pairs with the watch's release of DONE: its reads are over. */
    while ((st = atomic_load_explicit(&req, memory_order_acquire)) == REQ_HELD && ito__now_ns() < until)
        ito__cpu_relax();
    if (st == REQ_HELD)
        atomic_compare_exchange_strong_explicit(&req, &st, REQ_GONE, memory_order_acq_rel, memory_order_acquire);
    return true;
}

/* Ask for t's backtrace on its kernel thread tid and write the report. */
static void report(struct ito__thread *t, int vproc, uint64_t ms, pid_t tid)
{
    atomic_store_explicit(&req, REQ_IDLE, memory_order_relaxed);
    atomic_store_explicit(&asked, t, memory_order_relaxed);
    ito__kthread_signal(tid, ito__rt.preempt_signal, (union sigval){ .sival_int = ITO__LONGRUN_TAG });
    /* Until it is held; a request that met a pending tick was merged with
     * it (one instance of a standard signal): ask again. */
    uint64_t start = ito__now_ns(), asked_at = start;
    while (atomic_load_explicit(&req, memory_order_acquire) != REQ_HELD) {
        uint64_t now = ito__now_ns();
        if (now - start > 100000000u) {
            /* It switched (or exited) meanwhile: no longer a long run. */
            if (atomic_exchange_explicit(&asked, NULL, memory_order_relaxed) == t)
                return;
            continue;   /* taken just now: it holds itself */
        }
        if (now - asked_at > 10000000u && atomic_load_explicit(&asked, memory_order_relaxed) == t) {
            ito__kthread_signal(tid, ito__rt.preempt_signal, (union sigval){ .sival_int = ITO__LONGRUN_TAG });
            asked_at = now;
        }
        struct timespec ts = { 0, 50000 };
        ito__libc_nanosleep(&ts, NULL);
    }
    ito__bt_capture(&bt, &held_uc, true);
    int st = REQ_HELD;
    /* Release pairs with the handler's acquire: the walk is over. */
    bool walked = atomic_compare_exchange_strong_explicit(&req, &st, REQ_DONE, memory_order_release,
                                                          memory_order_relaxed);
    report_line(t, vproc, ms, walked ? ":" : " (no backtrace: it could not be held still)");
    if (walked)
        ito__bt_print(STDERR_FILENO, &bt, "    ");
}

struct look {
    struct ito__thread *t;
    uint64_t switches, since;
    bool reported;
};

/* In a global: the child of a fork, where the watch thread is gone, reuses
 * it (and a leak checker sees it reachable). */
static struct look *looks;

static void *watch(void *arg)
{
    (void)arg;
    int n = ito__rt.nvprocs;
    if (looks)
        memset(looks, 0, (size_t)n * sizeof *looks);
    else
        looks = calloc((size_t)n, sizeof *looks);
    if (!looks) {
        ito__warn("ITO_LONGRUN_MS: out of memory; long-running threads are not reported");
        return NULL;
    }
    uint64_t period = limit_ns / 4 < 1000000u ? 1000000u : limit_ns / 4;
    for (;;) {
        struct timespec ts = { (time_t)(period / 1000000000u), (long)(period % 1000000000u) };
        while (ito__libc_nanosleep(&ts, &ts) == -1 && errno == EINTR)
            ;
        uint64_t now = ito__now_ns();
        ito__tsan_reads_begin();
        for (int i = 0; i < n; i++) {
            struct ito__vproc *vp = ito__rt.vprocs[i];
            struct look *l = &looks[i];
            uintptr_t ks = atomic_load_explicit(&vp->kstate, memory_order_acquire);
            struct ito__thread *t = __atomic_load_n(&vp->current, __ATOMIC_RELAXED);
            /* Switches, and scheduling points the thread came to itself (a
             * yield): picks less the slices that ended. */
            uint64_t ticks = __atomic_load_n(&vp->stats.switches, __ATOMIC_RELAXED) +
                             atomic_load_explicit(&vp->ticks, memory_order_relaxed) -
                             __atomic_load_n(&vp->stats.preemptions, __ATOMIC_RELAXED) -
                             __atomic_load_n(&vp->stats.recoveries, __ATOMIC_RELAXED);
            bool computing = t && (ks & ITO__KS_MASK) == ITO__KS_RUN &&
                             atomic_load_explicit(&vp->run_state, memory_order_relaxed) == ITO__VP_BUSY;
            if (!computing || t != l->t || ticks != l->switches) {
                *l = (struct look){ computing ? t : NULL, ticks, now, false };
                continue;
            }
            if (l->reported || now - l->since < limit_ns)
                continue;
            l->reported = true;
            uint64_t ms = (now - l->since) / 1000000u;
            struct ito__activation *carrier = ito__ks_carrier(ks);
            pid_t tid = carrier ? ito__activation_tid(carrier) : 0;
            if (!ito__rt.preempt_signal || !tid)
                report_line(t, i, ms, " (no backtrace: ITO_ACTIVATIONS=0)");
            else
                report(t, i, ms, tid);
        }
        ito__tsan_reads_end();
    }
    return NULL;
}

void ito__longrun_start(void)
{
    long long ms = ito__env_int("ITO_LONGRUN_MS", 0, 0, 3600000, false);
    if (!ms)
        return;
    limit_ns = (uint64_t)ms * 1000000u;
    int e = ito__kthread_start("ito-longrun", 64 * 1024, watch, NULL, NULL);
    if (e)
        ito__warn("ITO_LONGRUN_MS: cannot start the watch (%s); long-running threads are not reported",
                  strerror(e));
}
