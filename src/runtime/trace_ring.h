/* SPDX-License-Identifier: MIT */
/* The trace's rings, shared by the recorder (trace.c) and the file writer
 * (trace_file.c); the design is trace.c's essay. */
#ifndef ITO_RUNTIME_TRACE_RING_H
#define ITO_RUNTIME_TRACE_RING_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include <ito.h>

#include "base/compiler.h"

/* Events per ring: 64 Ki of 32 bytes, 2 MiB per vproc — at a few million
 * switches a second on a busy vproc, the last tens of milliseconds; a
 * program that switches less keeps seconds. */
#define ITO__TRACE_EVENTS (1u << 16)
#define RING_MASK (ITO__TRACE_EVENTS - 1)

enum kind {
    K_RUN = 1,   /* thread: switched to (NONE: the scheduler context) */
    K_SPAWN,     /* thread; x: its id; NAME events follow */
    K_NAME,      /* thread; aux8: part; x: 8 bytes of its name */
    K_PARK,      /* thread; aux8: reason; x: object */
    K_WAKE,      /* thread; aux8: reason; x: the waker's index (NONE: not a thread) */
    K_EXIT,      /* thread */
    K_STEAL,     /* thread; aux16: the vproc it last ran on (0xffff: none) */
    K_HANDOFF,   /* thread (NONE: none); aux8: a stall; x: the new carrier's kernel thread id */
    K_PREEMPT,   /* thread */
    K_ADDED,     /* aux16: cpu */
    K_REMOVED,   /* aux16: cpu */
};
#define NONE 0xffffffffu
#define NAME_PARTS 4   /* 32 bytes: ITO_NAME_MAX */
_Static_assert(NAME_PARTS * 8 == ITO_NAME_MAX, "a spawn's NAME events hold a whole name");

struct entry {
    _Atomic uint64_t stamp;   /* sequence number + 1; 0 while being written */
    _Atomic uint64_t ts;      /* CLOCK_MONOTONIC, ns */
    _Atomic uint64_t w;       /* kind | aux8 << 8 | aux16 << 16 | thread << 32 */
    _Atomic uint64_t x;       /* per kind (above) */
};
_Static_assert(sizeof(struct entry) == 32, "two events per cache line");

struct ring {
    /* Events written so far: the writer's (its own relaxed load), the
     * snapshot's (acquire, pairing with the writer's release store). */
    _Atomic uint64_t head ITO_ALIGNED_CACHELINE;
    struct entry *ev;
};

/* Set once by ito__trace_init, before any event (trace.c). */
extern struct ring *ito__trace_rings;      /* vprocs 0..n-1, then the foreign ring */
extern int ito__trace_nrings;
extern char *ito__trace_path;              /* absolute */
extern pid_t ito__trace_pid;               /* the process that read ITO_TRACE */
extern uint64_t ito__trace_started_ns;
extern _Atomic uint64_t ito__trace_foreign_dropped; /* foreign events dropped: its lock stayed taken */

/* The child of fork: the writer's lock may be held by a thread not there. */
void ito__trace_file_forked(void);

#endif
