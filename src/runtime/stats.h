/* SPDX-License-Identifier: MIT */
/* Per-vproc counters: written by the owner only, read by anyone. The owner's
 * increment is a relaxed load-add-store (no locked instruction); readers use
 * relaxed loads, so a sum over vprocs is approximate while threads run. */
#ifndef ITO_RUNTIME_STATS_H
#define ITO_RUNTIME_STATS_H

#define ITO_STAT_INC(vp, field) \
    __atomic_store_n(&(vp)->stats.field, (vp)->stats.field + 1, __ATOMIC_RELAXED)
#define ITO_STAT_READ(vp, field) __atomic_load_n(&(vp)->stats.field, __ATOMIC_RELAXED)

#endif
