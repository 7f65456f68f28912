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
 * Cost. Off: the compare and branch at each event point (bench/yield and
 * bench/signalwait, docs/diagnostics.md). On: a clock read (vDSO) and five
 * stores per event (docs/diagnostics.md gives the measured time).
 */
#include "runtime/trace.h"

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

bool ito__trace_on;
/* The probes' semaphores (trace.h): in .probes, where the probe notes point
 * and where perf and bpftrace find them. */
#define ITO__TRACE_SEMAPHORE_DEF(name) unsigned short ito_##name##_semaphore __attribute__((section(".probes"), used));
ITO__TRACE_PROBES(ITO__TRACE_SEMAPHORE_DEF)
static struct ring *rings;   /* nrings: vprocs 0..n-1, then the foreign ring */
static int nrings;
static char *trace_path;     /* absolute (made so at init) */
static pid_t traced_pid;     /* the process that read ITO_TRACE (a fork child writes <path>.<pid>) */
static uint64_t started_ns;
/* The foreign ring's lock, and the events dropped because it stayed taken. */
static _Atomic int foreign_lock;
static _Atomic uint64_t foreign_dropped;
/* One write at a time (a dump and the exit). */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* ------------------------------------------------------------ the file */

struct snap {
    uint64_t ts, w, x;
};

static inline enum kind snap_kind(const struct snap *s) { return (enum kind)(s->w & 0xff); }
static inline unsigned snap_aux8(const struct snap *s) { return (unsigned)(s->w >> 8) & 0xff; }
static inline unsigned snap_aux16(const struct snap *s) { return (unsigned)(s->w >> 16) & 0xffff; }
static inline uint32_t snap_thread(const struct snap *s) { return (uint32_t)(s->w >> 32); }

/* Copy r's events that are whole (file comment) into *out (allocated
 * here; NULL if out of memory); *written: events ever written; *lost: those
 * overwritten (or being overwritten) meanwhile. */
static size_t snapshot(struct ring *r, struct snap **outp, uint64_t *written, uint64_t *lost)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t lo = h > ITO__TRACE_EVENTS ? h - ITO__TRACE_EVENTS : 0;
    struct snap *out = *outp = malloc((h - lo ? h - lo : 1) * sizeof *out);
    *written = h;
    *lost = h;
    if (!out)
        return 0;
    size_t n = 0;
    for (uint64_t i = lo; i < h; i++) {
        struct entry *e = &r->ev[i & RING_MASK];
        if (atomic_load_explicit(&e->stamp, memory_order_acquire) != i + 1)
            continue;
        struct snap s;
        s.ts = atomic_load_explicit(&e->ts, memory_order_acquire);
        s.w = atomic_load_explicit(&e->w, memory_order_acquire);
        s.x = atomic_load_explicit(&e->x, memory_order_acquire);
        if (atomic_load_explicit(&e->stamp, memory_order_relaxed) != i + 1)
            continue;
        out[n++] = s;
    }
    *lost = h - n;
    return n;
}

/* Buffered output to a file descriptor; remembers the first failure. */
struct out {
    int fd;
    int err;
    size_t len;
    char buf[1 << 16];
};

static void out_flush(struct out *o)
{
    size_t off = 0;
    while (off < o->len && !o->err) {
        ssize_t w = ito__sys_write(o->fd, o->buf + off, o->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            o->err = w < 0 ? errno : EIO;
        else
            off += (size_t)w;
    }
    o->len = 0;
}

static void outf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
    for (int tries = 0; tries < 2; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->buf + o->len, sizeof o->buf - o->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < sizeof o->buf - o->len) {
            o->len += (size_t)n;
            return;
        }
        out_flush(o);   /* and try once more in the empty buffer (every line fits) */
    }
}

/* A JSON string (quotes included) of at most max bytes of s. */
static void out_str(struct out *o, const char *s, size_t max)
{
    outf(o, "\"");
    for (size_t i = 0; i < max && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            outf(o, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            outf(o, "\\u%04x", c);
        else
            outf(o, "%c", c);
    }
    outf(o, "\"");
}

/* Microseconds with three decimals, exactly. */
#define US_FMT "%" PRIu64 ".%03u"
#define US(ns) (uint64_t)(ns) / 1000u, (unsigned)((uint64_t)(ns) % 1000u)

static const char *const reason_names[ITO__ON_COUNT] = {
    [ITO__ON_NOTHING] = "nothing", [ITO__ON_MUTEX] = "mutex",     [ITO__ON_COND] = "cond",
    [ITO__ON_RWLOCK] = "rwlock",   [ITO__ON_SEM] = "sem",         [ITO__ON_BARRIER] = "barrier",
    [ITO__ON_ONCE] = "once",       [ITO__ON_JOIN] = "join",       [ITO__ON_SLEEP] = "sleep",
    [ITO__ON_IO] = "io",
};

static const char *reason_name(unsigned r) { return r < ITO__ON_COUNT && reason_names[r] ? reason_names[r] : "?"; }

/* A thread's name as its spawn recorded it. */
struct spawn {
    uint32_t thread;
    uint64_t ts;
    char name[ITO_NAME_MAX + 1];
};

/* A run of a thread on a vproc's track. */
struct run {
    uint32_t thread;
    int track;
    uint64_t start, end;
};

static int cmp_spawn(const void *a, const void *b)
{
    const struct spawn *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_run(const void *a, const void *b)
{
    const struct run *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The name of `thread` at time ts: its latest spawn before then ("" if none). */
static const char *name_at(const struct spawn *sp, size_t n, uint32_t thread, uint64_t ts)
{
    size_t lo = 0, hi = n;   /* first entry > (thread, ts) */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (sp[mid].thread < thread || (sp[mid].thread == thread && sp[mid].ts <= ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && sp[lo - 1].thread == thread ? sp[lo - 1].name : "";
}

/* The first run of `thread` that starts after ts, or NULL. */
static const struct run *run_after(const struct run *rn, size_t n, uint32_t thread, uint64_t ts)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (rn[mid].thread < thread || (rn[mid].thread == thread && rn[mid].start <= ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && rn[lo].thread == thread ? &rn[lo] : NULL;
}

/* Everything one write needs. */
struct trace_file {
    struct out *o;
    pid_t pid;
    int nvprocs;
    struct snap **ev;     /* per ring */
    size_t *nev;
    struct spawn *sp;
    size_t nsp;
    struct run *rn;       /* every run, by thread and start */
    size_t nrn;
    uint64_t now;
    uint64_t flows;
    bool first;
};

static inline int tid_of(int ring) { return ring + 1; }

static void begin_event(struct trace_file *f)
{
    outf(f->o, f->first ? "\n" : ",\n");
    f->first = false;
}

static void emit_run(struct trace_file *f, int ring, uint32_t thread, uint64_t start, uint64_t end)
{
    begin_event(f);
    if (thread == NONE) {
        outf(f->o, "{\"name\":\"scheduler\",\"cat\":\"scheduler\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":" US_FMT
                   ",\"dur\":" US_FMT "}",
             (int)f->pid, tid_of(ring), US(start), US(end - start));
        return;
    }
    const char *name = name_at(f->sp, f->nsp, thread, start);
    outf(f->o, "{\"name\":");
    if (name[0]) {
        char label[ITO_NAME_MAX + 32];
        snprintf(label, sizeof label, "thread %u (%s)", thread, name);
        out_str(f->o, label, sizeof label);
    } else {
        outf(f->o, "\"thread %u\"", thread);
    }
    outf(f->o, ",\"cat\":\"run\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":" US_FMT ",\"dur\":" US_FMT
               ",\"args\":{\"thread\":%u,\"name\":",
         (int)f->pid, tid_of(ring), US(start), US(end - start), thread);
    out_str(f->o, name, ITO_NAME_MAX);
    outf(f->o, "}}");
}

/* A point event on a track: an instant on a vproc's, a 2 ns slice on the
 * foreign one (which has no slices for a flow to start from). Leaves the
 * args object open. */
static void emit_point(struct trace_file *f, int ring, const char *name, uint64_t ts)
{
    begin_event(f);
    if (ring < f->nvprocs)
        outf(f->o, "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":" US_FMT
                   ",\"args\":{",
             name, name, (int)f->pid, tid_of(ring), US(ts));
    else
        outf(f->o, "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"dur\":0.002,\"pid\":%d,\"tid\":%d,\"ts\":" US_FMT
                   ",\"args\":{",
             name, name, (int)f->pid, tid_of(ring), US(ts));
}

/* A wake's flow: from the waker's track at the wake to the woken thread's
 * next run (bound to that slice: "bp":"e", 1 ns inside it). */
static void emit_flow(struct trace_file *f, int ring, uint64_t ts, uint32_t thread)
{
    const struct run *r = run_after(f->rn, f->nrn, thread, ts);
    if (!r)
        return;   /* it has not run since */
    uint64_t id = ++f->flows;
    uint64_t s_ts = ring < f->nvprocs ? ts : ts + 1;
    uint64_t f_ts = r->start + (r->end - r->start >= 2 ? 1 : 0);
    begin_event(f);
    outf(f->o, "{\"name\":\"wake\",\"cat\":\"wake\",\"ph\":\"s\",\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,\"ts\":" US_FMT "}",
         id, (int)f->pid, tid_of(ring), US(s_ts));
    begin_event(f);
    outf(f->o,
         "{\"name\":\"wake\",\"cat\":\"wake\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%" PRIu64
         ",\"pid\":%d,\"tid\":%d,\"ts\":" US_FMT "}",
         id, (int)f->pid, tid_of(r->track), US(f_ts));
}

static void emit_thread_arg(struct trace_file *f, uint32_t thread)
{
    if (thread == NONE)
        outf(f->o, "\"thread\":null");
    else
        outf(f->o, "\"thread\":%u", thread);
}

/* A ring's events other than runs, as Chrome events. */
static void emit_points(struct trace_file *f, int ring)
{
    const struct snap *ev = f->ev[ring];
    for (size_t i = 0; i < f->nev[ring]; i++) {
        const struct snap *s = &ev[i];
        uint32_t t = snap_thread(s);
        switch (snap_kind(s)) {
        case K_SPAWN: {
            emit_point(f, ring, "spawn", s->ts);
            outf(f->o, "\"thread\":%u,\"id\":%" PRIu64 ",\"name\":", t, s->x);
            out_str(f->o, name_at(f->sp, f->nsp, t, s->ts), ITO_NAME_MAX);
            outf(f->o, "}}");
            break;
        }
        case K_PARK:
            emit_point(f, ring, "park", s->ts);
            outf(f->o, "\"thread\":%u,\"reason\":\"%s\",\"object\":\"0x%" PRIx64 "\"}}", t, reason_name(snap_aux8(s)),
                 s->x);
            break;
        case K_WAKE:
            emit_point(f, ring, "wake", s->ts);
            outf(f->o, "\"thread\":%u,\"reason\":\"%s\",\"by\":", t, reason_name(snap_aux8(s)));
            if (s->x == NONE)
                outf(f->o, "null}}");
            else
                outf(f->o, "%u}}", (unsigned)s->x);
            emit_flow(f, ring, s->ts, t);
            break;
        case K_EXIT:
            emit_point(f, ring, "exit", s->ts);
            outf(f->o, "\"thread\":%u}}", t);
            break;
        case K_STEAL:
            emit_point(f, ring, "steal", s->ts);
            outf(f->o, "\"thread\":%u,\"last_vproc\":", t);
            if (snap_aux16(s) == 0xffff)
                outf(f->o, "null}}");
            else
                outf(f->o, "%u}}", snap_aux16(s));
            break;
        case K_HANDOFF:
            emit_point(f, ring, "handoff", s->ts);
            emit_thread_arg(f, t);
            outf(f->o, ",\"stall\":%s,\"carrier_tid\":%" PRIu64 "}}", snap_aux8(s) ? "true" : "false", s->x);
            break;
        case K_PREEMPT:
            emit_point(f, ring, "preempt", s->ts);
            emit_thread_arg(f, t);
            outf(f->o, "}}");
            break;
        case K_ADDED:
        case K_REMOVED:
            emit_point(f, ring, snap_kind(s) == K_ADDED ? "vproc_added" : "vproc_removed", s->ts);
            outf(f->o, "\"cpu\":%d}}", (int)(int16_t)snap_aux16(s));
            break;
        default:
            break;   /* K_RUN: slices; K_NAME: part of a spawn */
        }
    }
}

/* The runs of vproc ring `ring`, in order: a run lasts until the next switch
 * on the vproc, or its hand-off (the carrier blocked: the spare starts in
 * its scheduler context); the last one until now. A vproc added before any
 * switch starts in its scheduler context. */
static size_t collect_runs(struct trace_file *f, int ring, struct run *out)
{
    const struct snap *ev = f->ev[ring];
    size_t n = 0;
    bool open = false;
    struct run cur = { 0 };
    for (size_t i = 0; i < f->nev[ring]; i++) {
        const struct snap *s = &ev[i];
        enum kind k = snap_kind(s);
        if (k != K_RUN && k != K_HANDOFF && !(k == K_ADDED && !open))
            continue;
        if (open) {
            cur.end = s->ts;
            out[n++] = cur;
        }
        cur = (struct run){ k == K_RUN ? snap_thread(s) : NONE, ring, s->ts, 0 };
        open = true;
    }
    if (open) {
        uint64_t last = f->nev[ring] ? ev[f->nev[ring] - 1].ts : cur.start;
        cur.end = f->now > last ? f->now : last;
        out[n++] = cur;
    }
    return n;
}

static void emit_metadata(struct trace_file *f)
{
    begin_event(f);
    outf(f->o, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":", (int)f->pid);
    char pname[64];
    snprintf(pname, sizeof pname, "ito: %s", program_invocation_short_name);
    out_str(f->o, pname, sizeof pname);
    outf(f->o, "}}");
    for (int r = 0; r <= f->nvprocs; r++) {
        begin_event(f);
        if (r < f->nvprocs)
            outf(f->o, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"vproc %d\"}}",
                 (int)f->pid, tid_of(r), r);
        else
            outf(f->o,
                 "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"foreign kernel "
                 "threads\"}}",
                 (int)f->pid, tid_of(r));
        begin_event(f);
        outf(f->o, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
             (int)f->pid, tid_of(r), r);
    }
}

/* The spawns' names, from SPAWN events and the NAME parts after them. */
static size_t collect_spawns(struct trace_file *f, int ring, struct spawn *out)
{
    const struct snap *ev = f->ev[ring];
    size_t n = 0;
    for (size_t i = 0; i < f->nev[ring]; i++) {
        if (snap_kind(&ev[i]) != K_SPAWN)
            continue;
        struct spawn *s = &out[n++];
        memset(s, 0, sizeof *s);
        s->thread = snap_thread(&ev[i]);
        s->ts = ev[i].ts;
        for (size_t j = i + 1; j < f->nev[ring] && j <= i + NAME_PARTS; j++) {
            if (snap_kind(&ev[j]) != K_NAME || snap_thread(&ev[j]) != s->thread || snap_aux8(&ev[j]) >= NAME_PARTS)
                break;
            memcpy(s->name + snap_aux8(&ev[j]) * 8, &ev[j].x, 8);
        }
        s->name[ITO_NAME_MAX] = '\0';
    }
    return n;
}

/* Where this process writes: the path with %p replaced by the process ID;
 * a child of fork that was not given %p writes <path>.<pid>. */
static void final_path(char *out, size_t size)
{
    pid_t pid = getpid();
    size_t n = 0;
    bool has_p = false;
    for (const char *p = trace_path; *p && n + 1 < size; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            n += (size_t)snprintf(out + n, size - n, "%d", (int)pid);
            if (n >= size)
                n = size - 1;
            has_p = true;
            p++;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    if (!has_p && pid != traced_pid)
        snprintf(out + n, size - n, ".%d", (int)pid);
}

/* Everything one write needs beyond struct trace_file, on the heap: a
 * write may run on a small stack (a thread's, or a scheduler context's at
 * exit). */
struct write_state {
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    uint64_t written[ITO__VPROCS_MAX + 1], lost[ITO__VPROCS_MAX + 1];
    struct snap *ev[ITO__VPROCS_MAX + 1];
    size_t nev[ITO__VPROCS_MAX + 1];
    struct out out;
};

static int write_events(struct write_state *w, struct trace_file *f)
{
    struct out *o = &w->out;
    for (int r = 0; r < nrings; r++)
        f->nsp += collect_spawns(f, r, f->sp + f->nsp);
    qsort(f->sp, f->nsp, sizeof *f->sp, cmp_spawn);
    for (int r = 0; r < f->nvprocs; r++)
        f->nrn += collect_runs(f, r, f->rn + f->nrn);

    uint64_t all_written = 0, all_lost = 0, all_kept = 0;
    for (int r = 0; r < nrings; r++) {
        all_written += w->written[r];
        all_lost += w->lost[r];
        all_kept += w->nev[r];
    }
    outf(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":\"CLOCK_MONOTONIC\",\"vprocs\":%d,"
            "\"buffer_events\":%u,\"when_full\":\"the newest events overwrite the oldest\","
            "\"events_recorded\":%" PRIu64 ",\"events_in_file\":%" PRIu64 ",\"events_overwritten\":%" PRIu64
            ",\"foreign_events_dropped\":%" PRIu64 ",\"trace_started_us\":" US_FMT ",\"written_us\":" US_FMT
            ",\"buffers\":[",
         f->nvprocs, ITO__TRACE_EVENTS, all_written, all_kept, all_lost,
         atomic_load_explicit(&foreign_dropped, memory_order_relaxed), US(started_ns), US(f->now));
    for (int r = 0; r < nrings; r++) {
        if (r < f->nvprocs)
            outf(o, "%s{\"track\":\"vproc %d\",", r ? "," : "", r);
        else
            outf(o, ",{\"track\":\"foreign kernel threads\",");
        outf(o, "\"recorded\":%" PRIu64 ",\"overwritten\":%" PRIu64 "}", w->written[r], w->lost[r]);
    }
    outf(o, "]},\"traceEvents\":[");
    emit_metadata(f);
    /* The slices of each vproc, in order, then every point event. */
    for (size_t i = 0; i < f->nrn; i++)
        emit_run(f, f->rn[i].track, f->rn[i].thread, f->rn[i].start, f->rn[i].end);
    qsort(f->rn, f->nrn, sizeof *f->rn, cmp_run);
    for (int r = 0; r < nrings; r++)
        emit_points(f, r);
    outf(o, "\n]}\n");
    out_flush(o);
    return o->err;
}

static void write_file(struct write_state *w)
{
    final_path(w->path, sizeof w->path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%d", w->path, (int)getpid());
    struct trace_file f = { .o = &w->out, .pid = getpid(), .nvprocs = nrings - 1, .ev = w->ev, .nev = w->nev,
                            .first = true };
    int e = 0;
    for (int r = 0; r < nrings; r++) {
        w->nev[r] = snapshot(&rings[r], &w->ev[r], &w->written[r], &w->lost[r]);
        if (!w->ev[r])
            e = ENOMEM;
    }
    size_t total = 0, spawns = 0;
    if (!e) {
        f.now = ito__now_ns();
        for (int r = 0; r < nrings; r++) {
            total += w->nev[r];
            for (size_t i = 0; i < w->nev[r]; i++)
                spawns += snap_kind(&w->ev[r][i]) == K_SPAWN;
        }
        f.sp = malloc((spawns ? spawns : 1) * sizeof *f.sp);
        f.rn = malloc((total ? total : 1) * sizeof *f.rn);   /* at most one run per event */
        if (!f.sp || !f.rn)
            e = ENOMEM;
    }
    int fd = -1;
    if (!e && (fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        e = errno;
    if (!e) {
        w->out.fd = fd;
        e = write_events(w, &f);
        if (close(fd) != 0 && !e)
            e = errno;
        if (!e && rename(w->tmp, w->path) != 0)
            e = errno;
        if (e)
            unlink(w->tmp);
    }
    if (e)
        ito__warn("ITO_TRACE: cannot write the trace %s: %s", w->path, strerror(e));
    for (int r = 0; r < nrings; r++)
        free(w->ev[r]);
    free(f.sp);
    free(f.rn);
}

void ito__trace_write(void)
{
    if (!ito__trace_on)
        return;
    int saved_errno = errno;
    ito__libc_pthread_mutex_lock(&write_lock);
    struct write_state *w = calloc(1, sizeof *w);
    if (w)
        write_file(w);
    else
        ito__warn("ITO_TRACE: out of memory; the trace was not written");
    free(w);
    ito__libc_pthread_mutex_unlock(&write_lock);
    ito__errno_set(saved_errno);
}

static void at_exit(void) { ito__trace_write(); }

/* The child of fork: the lock of the foreign ring and the write lock may be
 * held by threads that are not here. */
static void forked_child(void)
{
    atomic_store_explicit(&foreign_lock, 0, memory_order_relaxed);
    write_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
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
