/* SPDX-License-Identifier: MIT */
/* A snapshot of the scheduler: see snapshot.h. */
#include "api/snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "runtime/carrier.h"
#include "runtime/dump.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"
#include "runtime/stats.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

struct ito__snapshot *ito__snapshot_new(void)
{
    int n = ito__rt.nvprocs;
    struct ito__snapshot *s = calloc(1, sizeof *s + (size_t)n * sizeof s->vp[0]);
    if (s)
        s->nvprocs = n;   /* fixed once ito has started */
    return s;
}

static bool count_one(struct ito__thread *t, void *arg)
{
    struct ito__snapshot *s = arg;
    switch (ito__thread_state(t)) {
    case ITO__TS_RUNNING:
        s->running++;
        break;
    case ITO__TS_NEW:
    case ITO__TS_READY: {
        s->ready++;
        struct ito__vproc *vp = t->vp;
        if (vp && vp->index >= 0 && vp->index < s->nvprocs)
            s->vp[vp->index].queued++;
        break;
    }
    default:
        s->blocked++;   /* blocked or suspended */
    }
    return true;
}

static void vproc_now(struct ito__vproc *vp, struct ito__snapshot_vproc *out)
{
    struct ito__thread *t = __atomic_load_n(&vp->current, __ATOMIC_RELAXED);
    out->thread = 0;
    out->name[0] = '\0';
    if ((atomic_load_explicit(&vp->kstate, memory_order_relaxed) & ITO__KS_MASK) == ITO__KS_KERNEL) {
        out->doing = "kernel";
    } else {
        switch (atomic_load_explicit(&vp->run_state, memory_order_relaxed)) {
        case ITO__VP_SLEEPING:
            out->doing = "sleep";
            t = NULL;
            break;
        case ITO__VP_REVOKED:
            out->doing = "off";
            t = NULL;
            break;
        case ITO__VP_BUSY:
            out->doing = "run";
            break;
        default:
            out->doing = "idle";
            t = NULL;
        }
    }
    if (t) {
        out->thread = t->index;
        memcpy(out->name, t->name, sizeof out->name);   /* it may be renamed meanwhile */
        out->name[sizeof out->name - 1] = '\0';
    }
    out->cpu = atomic_load_explicit(&vp->grant_cpu, memory_order_relaxed);
}

void ito__snapshot_take(struct ito__snapshot *s)
{
    ito__tsan_reads_begin();
    s->running = s->ready = s->blocked = 0;
    for (int i = 0; i < s->nvprocs; i++)
        s->vp[i].queued = 0;
    ito__threads_all(count_one, s);
    ito_alloc_info_t ai;
    s->sharing = ito_alloc_info(&ai) == 0 && ai.enabled;
    s->held = s->sharing ? ai.held : s->nvprocs;
    s->want = s->sharing ? ai.want : s->nvprocs;
    s->priority = s->sharing ? ai.priority : 0;
    ito__spin_lock(&ito__rt.spare_lock);
    s->spares = ito__rt.nspares;
    ito__spin_unlock(&ito__rt.spare_lock);
    s->activations = atomic_load_explicit(&ito__rt.nactivations, memory_order_relaxed);
    for (int i = 0; i < s->nvprocs; i++) {
        struct ito__vproc *vp = ito__rt.vprocs[i];
        struct ito__snapshot_vproc *o = &s->vp[i];
        vproc_now(vp, o);
        o->switches = ITO_STAT_READ(vp, switches);
        o->steals = ITO_STAT_READ(vp, steals);
        o->handoffs = ITO_STAT_READ(vp, handoffs) + ITO_STAT_READ(vp, stalls);
        o->slices = ITO_STAT_READ(vp, preemptions) + ITO_STAT_READ(vp, recoveries);
    }
    s->taken_ns = ito__now_ns();
    ito__tsan_reads_end();
}
