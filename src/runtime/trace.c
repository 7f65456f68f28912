/* SPDX-License-Identifier: MIT */
/*
 * The execution timeline: ITO_TRACE=file records scheduling events and
 * writes them as a Chrome trace-event JSON file (chrome://tracing,
 * https://ui.perfetto.dev), one track per vproc.
 *
 * Problem. What a scheduler did — which thread ran where and for how long,
 * who woke whom, where a thread was stolen, a vproc handed on, a slice cut —
 * is invisible in a profile, and an event log that costs a lock or a shared
 * cache line per event changes the very timing it records: a switch costs
 * tens of nanoseconds. With tracing off the event points must cost nothing
 * measurable; with it on, a few tens of nanoseconds per event.
 *
 * Approach. One ring of ITO__TRACE_EVENTS (64 Ki) 32-byte events per vproc
 * (2 MiB each, mapped when ITO_TRACE is set and touched as it fills), and one
 * for foreign kernel threads. A vproc's ring is written only by the
 * activation that carries the vproc, inside a critical section, so that no
 * other activation, no signal handler that calls into ito (it defers inside
 * a section: runtime/defer.c) and no time slice (it waits for the section's
 * end) writes it at the same time: the write path needs no lock and no
 * atomic read-modify-write. When a carrier hands its vproc to a spare
 * (runtime/carrier.c), the ring goes with the vproc: the kstate protocol
 * orders the old carrier's last write before the spare's first. The foreign
 * ring (a kernel thread without a vproc: the program's own pthreads, the
 * monitor, a parked spare) is taken under a lock; a writer that cannot take
 * it within a bounded wait drops its event and counts it, so that a signal
 * handler interrupting the holder on its own kernel thread cannot deadlock.
 *
 * When a ring is full the newest events overwrite the oldest (a flight
 * recorder: a dump asked for late in a long run wants what just happened);
 * the file's metadata counts the events overwritten. The file is written at
 * exit and whenever ito__trace_write is called (by a thread, never a signal
 * handler), each time whole, from a snapshot taken while the vprocs go on
 * writing. The snapshot is made safe by a stamp per event: the writer stores
 * the stamp 0, then the fields (release), then the stamp = its sequence
 * number + 1 (release), then the ring's head (release); a reader keeps an
 * event only if it reads the expected stamp (acquire) before the fields
 * (acquire) and again after them — a field it read from a later overwrite
 * would have shown it the 0 stored first. Every access is atomic, so this is
 * defined behaviour (and ThreadSanitizer sees it), yet on x86-64 each store
 * is a plain mov: no lock prefix, no fence. The owner only ever writes.
 *
 * Events (the arguments of each: runtime/trace.h) are recorded where they
 * happen, by one macro per event point (ITO_TRACE_EVENT), which is also the
 * USDT probe. The writer turns them into Chrome events: a complete event
 * ("X") per run of a thread on a vproc, from its switch-in to the next
 * switch on that vproc (or the vproc's hand-off); a "scheduler" slice while
 * the vproc runs its scheduler context; instants for spawn, park (with
 * what the thread waits on), wake, exit, steal, hand-off, preemption and
 * processor added or removed; and for each wake a flow ("s" on the waker's
 * track, "f" on the woken thread's next run) found by time: a wake is
 * recorded before the thread can be queued, so its next run is the first
 * one after it. Thread names come from the spawn events (a spawn writes its
 * name in up to four more events). Timestamps are CLOCK_MONOTONIC, written
 * as microseconds with three decimals, so that they line up with perf.
 *
 * The event points are guarded by the probes' semaphores (trace.h): a word
 * per probe that perf or bpftrace increments while it listens, and that
 * ITO_TRACE sets at initialization; behind it, the probe and the call that
 * records. One compare and a predicted branch when nobody listens.
 *
 * Rejected: one shared buffer with an atomic index (a fetch-add and a cache
 * line moving between processors at every event); buffers per kernel thread
 * (spares come and go, threads migrate; the track that matters is the
 * vproc); writing the file as events come (a system call per event, or a
 * flusher thread); stopping when full (a long run would show its first
 * milliseconds only); the time-stamp counter (cheaper, but then the times
 * must be converted to line up with other tools); probes without
 * semaphores (the nop alone is free, but its arguments are computed at every
 * pass: a vproc's number and a thread's index loaded and tested at every
 * switch, some ten instructions per yield under callgrind) and a flag of
 * our own beside the semaphore (two loads per event point where one does).
 * Probes need a kernel with uprobe reference counters (Linux 4.20) for
 * perf and bpftrace to set the semaphores.
 *
 * This file records; trace_file.c writes the file; trace_ring.h is what
 * they share.
 *
 * Cost. Off: the compare and branch at each event point (bench/yield and
 * bench/signalwait, docs/diagnostics.md). On: a clock read (vDSO) and five
 * stores per event (docs/diagnostics.md gives the measured time).
 */
#include "runtime/trace.h"
#include "runtime/trace_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/backoff.h"
#include "base/clock.h"
#include "base/env.h"
#include "base/libc.h"
#include "base/panic.h"
#include "runtime/critical.h"
#include "runtime/runtime.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"
#include "runtime/wait.h"

bool ito__trace_on;
/* The probes' semaphores (trace.h): in .probes, where the probe notes point
 * and where perf and bpftrace find them. */
#define ITO__TRACE_SEMAPHORE_DEF(name) unsigned short ito_##name##_semaphore __attribute__((section(".probes"), used));
ITO__TRACE_PROBES(ITO__TRACE_SEMAPHORE_DEF)
struct ring *ito__trace_rings;
int ito__trace_nrings;
char *ito__trace_path;
pid_t ito__trace_pid;
uint64_t ito__trace_started_ns;
_Atomic uint64_t ito__trace_foreign_dropped;
#define rings ito__trace_rings
#define nrings ito__trace_nrings
#define trace_path ito__trace_path
#define traced_pid ito__trace_pid
#define started_ns ito__trace_started_ns
#define foreign_dropped ito__trace_foreign_dropped
/* The foreign ring's lock. */
static _Atomic int foreign_lock;

static inline uint64_t pack(enum kind k, unsigned aux8, unsigned aux16, uint32_t thread)
{
    return (uint64_t)k | (uint64_t)(aux8 & 0xff) << 8 | (uint64_t)(aux16 & 0xffff) << 16 | (uint64_t)thread << 32;
}

/* The single writer of r at this moment appends one event. */
static inline void put(struct ring *r, uint64_t ts, uint64_t w, uint64_t x)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    struct entry *e = &r->ev[h & RING_MASK];
    atomic_store_explicit(&e->stamp, 0, memory_order_relaxed);
    /* Release: the 0 above is seen by a reader that reads any of these. */
    atomic_store_explicit(&e->ts, ts, memory_order_release);
    atomic_store_explicit(&e->w, w, memory_order_release);
    atomic_store_explicit(&e->x, x, memory_order_release);
    /* Release: pairs with the snapshot's acquire loads of stamp and head. */
    atomic_store_explicit(&e->stamp, h + 1, memory_order_release);
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
}

/* A spawn's name, in the NAME events after its SPAWN. */
static void put_name(struct ring *r, uint64_t ts, uint32_t thread, const char *name)
{
    size_t len = strnlen(name, ITO_NAME_MAX - 1);
    if (!len)
        return;
    for (unsigned p = 0; p * 8 < len + 1 && p < NAME_PARTS; p++) {
        uint64_t bytes = 0;
        size_t n = len + 1 - p * 8 < 8 ? len + 1 - p * 8 : 8;
        memcpy(&bytes, name + p * 8, n);
        put(r, ts, pack(K_NAME, p, 0, thread), bytes);
    }
}

static inline struct ring *vproc_ring(int vproc) { return vproc >= 0 && vproc < nrings - 1 ? &rings[vproc] : NULL; }

static bool foreign_take(void)
{
    unsigned spins = 0;
    for (unsigned round = 0; round < ITO__BACKOFF_SPINS + 64; round++) {
        /* Acquire pairs with the release store in foreign_drop. */
        if (!atomic_exchange_explicit(&foreign_lock, 1, memory_order_acquire))
            return true;
        ito__backoff(&spins);
    }
    atomic_fetch_add_explicit(&foreign_dropped, 1, memory_order_relaxed);
    return false;
}

static void foreign_drop(void) { atomic_store_explicit(&foreign_lock, 0, memory_order_release); }

/* An event of the caller's: into its vproc's ring, or the foreign one. */
static void record_here(uint64_t w, uint64_t x, const char *name)
{
    ito__critical_enter();   /* the vproc stays ours, and no handler writes its ring */
    struct ito__vproc *vp = ito__vproc_self();
    struct ring *r = vp ? vproc_ring(vp->index) : NULL;
    if (r) {
        uint64_t ts = ito__now_ns();
        put(r, ts, w, x);
        if (name)
            put_name(r, ts, (uint32_t)(w >> 32), name);
    } else if (foreign_take()) {
        r = &rings[nrings - 1];
        uint64_t ts = ito__now_ns();
        put(r, ts, w, x);
        if (name)
            put_name(r, ts, (uint32_t)(w >> 32), name);
        foreign_drop();
    }
    ito__critical_exit();
}

static void record_on(int vproc, uint64_t w, uint64_t x)
{
    struct ring *r = vproc_ring(vproc);
    if (r)
        put(r, ito__now_ns(), w, x);
}

static inline uint32_t thread_or_none(int64_t t) { return t < 0 ? NONE : (uint32_t)t; }

void ito__trace_run(int vproc, int64_t thread) { record_on(vproc, pack(K_RUN, 0, 0, thread_or_none(thread)), 0); }

void ito__trace_steal(int vproc, uint32_t thread, int last)
{
    record_on(vproc, pack(K_STEAL, 0, last < 0 ? 0xffff : (unsigned)last, thread), 0);
}

void ito__trace_handoff(int vproc, int64_t thread, bool stall)
{
    record_on(vproc, pack(K_HANDOFF, stall, 0, thread_or_none(thread)), (uint64_t)gettid());
}

void ito__trace_preempt(int vproc, int64_t thread) { record_on(vproc, pack(K_PREEMPT, 0, 0, thread_or_none(thread)), 0); }

void ito__trace_vproc_added(int vproc, int cpu) { record_on(vproc, pack(K_ADDED, 0, (unsigned)cpu, NONE), 0); }

void ito__trace_vproc_removed(int vproc, int cpu) { record_on(vproc, pack(K_REMOVED, 0, (unsigned)cpu, NONE), 0); }

void ito__trace_spawn(uint32_t thread, uint64_t id, const char *name) { record_here(pack(K_SPAWN, 0, 0, thread), id, name); }

void ito__trace_park(uint32_t thread, unsigned reason, const void *obj)
{
    record_here(pack(K_PARK, reason, 0, thread), (uint64_t)(uintptr_t)obj, NULL);
}

void ito__trace_wake(uint32_t thread, unsigned reason)
{
    struct ito__thread *self = ito__thread_self();
    record_here(pack(K_WAKE, reason, 0, thread), self ? self->index : NONE, NULL);
}

void ito__trace_exit(uint32_t thread) { record_here(pack(K_EXIT, 0, 0, thread), 0, NULL); }

static void at_exit(void) { ito__trace_write(); }

/* The child of fork: the lock of the foreign ring and the write lock may be
 * held by threads that are not here. */
static void forked_child(void)
{
    atomic_store_explicit(&foreign_lock, 0, memory_order_relaxed);
    ito__trace_file_forked();
}

void ito__trace_init(void)
{
    const char *p = ito__env_str("ITO_TRACE");
    if (!p || !*p || ito__trace_on)
        return;
    char cwd[PATH_MAX];
    size_t size = strlen(p) + 1;
    if (p[0] != '/') {
        if (!getcwd(cwd, sizeof cwd)) {
            ito__warn("ITO_TRACE: cannot tell the current directory (%s); no trace", strerror(errno));
            return;
        }
        size += strlen(cwd) + 1;
    }
    int n = ito__rt.nvprocs + 1;
    size_t bytes = (size_t)ITO__TRACE_EVENTS * sizeof(struct entry);
    char *path = malloc(size);
    struct ring *rs = calloc((size_t)n, sizeof *rs);
    if (!path || !rs) {
        free(path);
        free(rs);
        ito__warn("ITO_TRACE: out of memory; no trace");
        return;
    }
    if (p[0] != '/')
        snprintf(path, size, "%s/%s", cwd, p);
    else
        memcpy(path, p, size);
    for (int i = 0; i < n; i++) {
        void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            ito__warn("ITO_TRACE: cannot map %zu bytes for the trace buffers (%s); no trace", bytes * (size_t)n,
                      strerror(errno));
            for (int j = 0; j < i; j++)
                munmap(rs[j].ev, bytes);
            free(path);
            free(rs);
            return;
        }
        rs[i].ev = m;
    }
    rings = rs;
    nrings = n;
    trace_path = path;
    traced_pid = getpid();
    started_ns = ito__now_ns();
    pthread_atfork(NULL, NULL, forked_child);
    atexit(at_exit);
    /* Before any activation starts (api/init.c), which publishes both. The
     * semaphores open every event point; a tool that attaches or leaves
     * adds or takes its own one. */
    ito__trace_on = true;
#define ITO__TRACE_SEMAPHORE_ON(name) __atomic_fetch_add(&ito_##name##_semaphore, 1, __ATOMIC_RELAXED);
    ITO__TRACE_PROBES(ITO__TRACE_SEMAPHORE_ON)
}
