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
 * work; sleep; kernel tN: its kernel thread is in a blocking call for thread
 * N; off: its processor is another process's), its queue (ready threads
 * that last ran there), and over the period its switches, steals,
 * hand-offs to a spare kernel thread, and time slices that ended. "procs"
 * is the cross-process allocator's view (ito_alloc_info): processors held
 * and asked for.
 *
 * A kernel thread of its own ("ito-sched") wakes once per period and takes a
 * snapshot (snapshot.h); nothing else is added anywhere. The counts are read
 * while the vprocs run: each is exact at some instant of the period, the line
 * as a whole is not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ito.h>

#include "api/init.h"
#include "api/snapshot.h"
#include "base/clock.h"
#include "base/env.h"
#include "base/kthread.h"
#include "base/libc.h"
#include "base/panic.h"
#include "runtime/runtime.h"

static uint64_t period_ns;
/* The tracer's buffers, in globals: the child of a fork, where the tracer
 * thread is gone, reuses them (and a leak checker sees them reachable). */
static struct ito__snapshot *snaps[2];
static char *line;

static void *tracer(void *arg)
{
    (void)arg;
    int n = ito__rt.nvprocs;
    size_t cap = 256 + (size_t)n * 96;
    for (int i = 0; i < 2; i++)
        if (!snaps[i])
            snaps[i] = ito__snapshot_new();
    if (!line)
        line = malloc(cap);
    struct ito__snapshot *s = snaps[0], *prev = snaps[1];
    if (!s || !prev || !line) {
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
        ito__snapshot_take(s);
        size_t at = 0;
#define ADD(...)                                                                         \
    do {                                                                                 \
        int k_ = snprintf(line + at, cap - at, __VA_ARGS__);                             \
        at = k_ < 0 ? at : at + (size_t)k_ >= cap ? cap - 1 : at + (size_t)k_;           \
    } while (0)
        ADD("ito: schedtrace %llums: procs held %d want %d, activations %d spares %d, threads %d running %d "
            "ready %d blocked %d",
            (unsigned long long)((s->taken_ns - start) / 1000000u), s->held, s->want, s->activations, s->spares,
            s->running + s->ready + s->blocked, s->running, s->ready, s->blocked);
        for (int i = 0; i < n; i++) {
            const struct ito__snapshot_vproc *v = &s->vp[i], *p = &prev->vp[i];
            if (v->thread)
                ADD(" | vp%d %s t%u", i, v->doing, v->thread);
            else
                ADD(" | vp%d %s", i, v->doing);
            ADD(" q%d sw %llu st %llu ho %llu pre %llu", v->queued,
                (unsigned long long)(v->switches - p->switches), (unsigned long long)(v->steals - p->steals),
                (unsigned long long)(v->handoffs - p->handoffs), (unsigned long long)(v->slices - p->slices));
        }
#undef ADD
        line[at++] = '\n';
        ssize_t w = ito__sys_write(STDERR_FILENO, line, at);
        (void)w;
        struct ito__snapshot *t = prev;
        prev = s;
        s = t;
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
