/* SPDX-License-Identifier: MIT */
/*
 * The scheduler trace: ITO_SCHEDTRACE=MS prints one line on stderr every MS
 * milliseconds (Go's GODEBUG=schedtrace), so that a program that is slow or
 * stuck shows what its scheduler does without a debugger:
 *
 *   ito: schedtrace 1001ms: procs held 2 want 2, activations 3 spares 1,
 *     threads 6 running 2 ready 3 blocked 1 | vp0 run t31 q2 sw 1204 st 3
 *     ho 0 pre 9 | vp1 sleep q0 sw 0 st 0 ho 0 pre 0
 *
 * (one line). Per vproc: what it does (run tN: thread N; idle: looking for
 * work; sleep; kernel: its kernel thread is in a blocking call; off: its
 * processor is another process's), its queue (ready threads that last ran
 * there), and over the period its switches, steals, hand-offs to a spare
 * kernel thread, and time slices that ended. "procs" is the cross-process
 * allocator's view (ito_alloc_info): processors held and asked for.
 *
 * A kernel thread of its own ("ito-sched") wakes once per period; nothing
 * else is added anywhere. The counts are read while the vprocs run: each is
 * exact at some instant of the period, the line as a whole is not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ito.h>

#include "api/init.h"
#include "base/clock.h"
#include "base/env.h"
#include "base/kthread.h"
#include "base/libc.h"
#include "base/panic.h"
#include "runtime/carrier.h"
#include "runtime/dump.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"
#include "runtime/stats.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

static uint64_t period_ns;

struct counts {
    int running, ready, blocked;
    int *queued;   /* [nvprocs]: ready threads that last ran there */
};

static bool count_one(struct ito__thread *t, void *arg)
{
    struct counts *c = arg;
    switch (ito__thread_state(t)) {
    case ITO__TS_RUNNING:
        c->running++;
        break;
    case ITO__TS_NEW:
    case ITO__TS_READY: {
        c->ready++;
        struct ito__vproc *vp = t->vp;
        if (vp && vp->index >= 0 && vp->index < ito__rt.nvprocs)
            c->queued[vp->index]++;
        break;
    }
    default:
        c->blocked++;   /* blocked or suspended */
    }
    return true;
}

struct vp_prev {
    uint64_t switches, steals, handoffs, slices;
};

static const char *doing(struct ito__vproc *vp, char *buf, size_t cap)
{
    if ((atomic_load_explicit(&vp->kstate, memory_order_relaxed) & ITO__KS_MASK) == ITO__KS_KERNEL)
        return "kernel";
    switch (atomic_load_explicit(&vp->run_state, memory_order_relaxed)) {
    case ITO__VP_SLEEPING:
        return "sleep";
    case ITO__VP_REVOKED:
        return "off";
    case ITO__VP_BUSY: {
        struct ito__thread *t = __atomic_load_n(&vp->current, __ATOMIC_RELAXED);
        if (t) {
            snprintf(buf, cap, "run t%u", t->index);
            return buf;
        }
        return "run";
    }
    default:
        return "idle";
    }
}

static void *tracer(void *arg)
{
    (void)arg;
    int n = ito__rt.nvprocs;
    struct vp_prev *prev = calloc((size_t)n, sizeof *prev);
    int *queued = calloc((size_t)n, sizeof *queued);
    size_t cap = 256 + (size_t)n * 96;
    char *line = malloc(cap);
    if (!prev || !queued || !line) {
        ito__warn("ITO_SCHEDTRACE: out of memory; no scheduler trace");
        return NULL;
    }
    uint64_t start = ito__now_ns(), next = start;
    for (;;) {
        next += period_ns;
        uint64_t now = ito__now_ns();
        if (next > now) {
            struct timespec ts = { (time_t)((next - now) / 1000000000u), (long)((next - now) % 1000000000u) };
            while (ito__libc_nanosleep(&ts, &ts) == -1 && errno == EINTR)
                ;
        }
        ito__tsan_reads_begin();
        memset(queued, 0, (size_t)n * sizeof *queued);
        struct counts c = { 0, 0, 0, queued };
        ito__threads_all(count_one, &c);
        ito_alloc_info_t ai;
        if (ito_alloc_info(&ai) != 0 || !ai.enabled)
            ai.held = ai.want = n;
        ito__spin_lock(&ito__rt.spare_lock);
        int spares = ito__rt.nspares;
        ito__spin_unlock(&ito__rt.spare_lock);
        size_t at = 0;
#define ADD(...)                                                                         \
    do {                                                                                 \
        int k_ = snprintf(line + at, cap - at, __VA_ARGS__);                             \
        at = k_ < 0 ? at : at + (size_t)k_ >= cap ? cap - 1 : at + (size_t)k_;           \
    } while (0)
        ADD("ito: schedtrace %llums: procs held %d want %d, activations %d spares %d, threads %d running %d "
            "ready %d blocked %d",
            (unsigned long long)((ito__now_ns() - start) / 1000000u), ai.held, ai.want,
            atomic_load_explicit(&ito__rt.nactivations, memory_order_relaxed),
            spares, c.running + c.ready + c.blocked, c.running,
            c.ready, c.blocked);
        for (int i = 0; i < n; i++) {
            struct ito__vproc *vp = ito__rt.vprocs[i];
            struct vp_prev cur = {
                ITO_STAT_READ(vp, switches),
                ITO_STAT_READ(vp, steals),
                ITO_STAT_READ(vp, handoffs) + ITO_STAT_READ(vp, stalls),
                ITO_STAT_READ(vp, preemptions) + ITO_STAT_READ(vp, recoveries),
            };
            char buf[32];
            ADD(" | vp%d %s q%d sw %llu st %llu ho %llu pre %llu", i, doing(vp, buf, sizeof buf), queued[i],
                (unsigned long long)(cur.switches - prev[i].switches),
                (unsigned long long)(cur.steals - prev[i].steals),
                (unsigned long long)(cur.handoffs - prev[i].handoffs),
                (unsigned long long)(cur.slices - prev[i].slices));
            prev[i] = cur;
        }
#undef ADD
        ito__tsan_reads_end();
        line[at++] = '\n';
        ssize_t w = ito__sys_write(STDERR_FILENO, line, at);
        (void)w;
    }
    return NULL;
}

void ito__schedtrace_start(void)
{
    long long ms = ito__env_int("ITO_SCHEDTRACE", 0, 0, 3600000, false);
    if (!ms)
        return;
    period_ns = (uint64_t)ms * 1000000u;
    int e = ito__kthread_start("ito-sched", 64 * 1024, tracer, NULL, NULL);
    if (e)
        ito__warn("ITO_SCHEDTRACE: cannot start the scheduler trace (%s)", strerror(e));
}
