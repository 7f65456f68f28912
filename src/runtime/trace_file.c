/* SPDX-License-Identifier: MIT */
/* The trace file: a snapshot of the rings turned into Chrome trace-event
 * JSON (the design is trace.c's essay). */
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

#define rings ito__trace_rings
#define nrings ito__trace_nrings
#define trace_path ito__trace_path
#define traced_pid ito__trace_pid
#define started_ns ito__trace_started_ns
#define foreign_dropped ito__trace_foreign_dropped

/* One write at a time (a dump and the exit). */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;

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

void ito__trace_file_forked(void) { write_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER; }
