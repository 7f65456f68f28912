/* SPDX-License-Identifier: MIT */
/* ito_stats_get: the per-vproc counters summed. */
#include <errno.h>
#include <string.h>

#include <ito.h>

#include "api/init.h"
#include "runtime/runtime.h"
#include "runtime/stats.h"

ITO_API int ito_stats_get(ito_stats_t *s)
{
    if (!s)
        return EINVAL;
    int e = ito__ensure_init();
    if (e)
        return e;
    memset(s, 0, sizeof *s);
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        struct ito__vproc *vp = ito__rt.vprocs[i];
        s->spawns += ITO_STAT_READ(vp, spawns);
        s->switches += ITO_STAT_READ(vp, switches);
        s->decisions += ITO_STAT_READ(vp, decisions);
        s->steals += ITO_STAT_READ(vp, steals);
        s->idle_sleeps += ITO_STAT_READ(vp, idle_sleeps);
        s->wakeups += ITO_STAT_READ(vp, wakeups);
        s->preemptions += ITO_STAT_READ(vp, preemptions);
        s->recoveries += ITO_STAT_READ(vp, recoveries);
        s->handoffs += ITO_STAT_READ(vp, handoffs);
        s->stalls += ITO_STAT_READ(vp, stalls);
        s->revocations += ITO_STAT_READ(vp, revocations);
        s->displacements += ITO_STAT_READ(vp, displacements);
        s->decision_cycles += ITO_STAT_READ(vp, decision_cycles);
    }
    s->spawns += (uint64_t)atomic_load_explicit(&ito__rt.foreign_spawns, memory_order_relaxed);
    return 0;
}
