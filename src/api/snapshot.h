/* SPDX-License-Identifier: MIT */
/*
 * A snapshot of the scheduler: what the scheduler trace (schedtrace.c) prints
 * every period and what the live view (view.c) sends to ito-ctl. The
 * processors held and wanted, the activations, the threads by state, and per
 * vproc what it does, which thread it runs, its queue and its counters
 * (cumulative: the reader takes differences).
 *
 * Taken from any kernel thread while the vprocs run: each count is exact at
 * some instant of the taking, the snapshot as a whole is not (runtime/dump.h:
 * descriptors are never freed, so reading one that changes meanwhile is
 * safe).
 */
#ifndef ITO_API_SNAPSHOT_H
#define ITO_API_SNAPSHOT_H

#include <stdint.h>

#include <ito.h>

struct ito__snapshot_vproc {
    const char *doing;          /* run, idle, sleep, kernel (its carrier is in a blocking call), off
                                   (its processor is another process's) */
    unsigned thread;            /* the thread it runs (0: none) */
    char name[ITO_NAME_MAX];    /* that thread's name ("" if none) */
    int cpu;                    /* the CPU it is pinned to (or will be: the allocator's grant), -1: none */
    int queued;                 /* ready threads that last ran there */
    uint64_t switches, steals;
    uint64_t handoffs;          /* to a spare kernel thread (a blocking call or a stall) */
    uint64_t slices;            /* time slices that ended (and preempted threads recovered) */
};

struct ito__snapshot {
    uint64_t taken_ns;          /* CLOCK_MONOTONIC */
    int sharing;                /* 1: in the cross-process allocation (held and want are its) */
    int held, want, priority;
    int activations, spares;
    int running, ready, blocked; /* blocked includes suspended */
    int nvprocs;
    struct ito__snapshot_vproc vp[];
};

/* A snapshot for this process's vprocs (malloc; NULL if out of memory), to
 * be filled by ito__snapshot_take as often as wanted and freed with free().
 * After ito has started. */
struct ito__snapshot *ito__snapshot_new(void);
void ito__snapshot_take(struct ito__snapshot *s);

#endif
