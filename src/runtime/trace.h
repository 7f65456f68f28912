/* SPDX-License-Identifier: MIT */
/*
 * The execution timeline (ITO_TRACE) and the USDT probes: the event points.
 *
 * An event point is one macro call where the event happens:
 *
 *     ITO_TRACE_EVENT(park, t->index, reason, obj);
 *
 * It expands to one predicted branch on the probe's semaphore, behind which
 * sit a USDT probe `ito:park` with those arguments (a nop in the code and a
 * note in the ELF file, for perf and bpftrace) and, when ITO_TRACE names a
 * file (trace.c), a call of ito__trace_park(...) that records the event.
 * The arguments are evaluated only behind the branch, once for the probe
 * and again for the call: they must have no side effects.
 *
 * The probes and their arguments (docs/diagnostics.md, "Probes"); `thread`
 * is a thread's index (ito's messages call it "thread N"), -1 for none:
 *     run(vproc, thread)              vproc switches to thread (-1: its scheduler)
 *     spawn(thread, id, name)         a thread was created (id: its handle)
 *     park(thread, reason, object)    the running thread blocks (enum ito__wait_on)
 *     wake(thread, reason)            a blocked thread is made ready
 *     exit(thread)                    the running thread exits
 *     steal(vproc, thread, last)      an idle vproc took a thread queued elsewhere
 *                                     (last: the vproc it last ran on, -1: none)
 *     handoff(vproc, thread, stall)   a spare took the vproc of a blocked carrier
 *     preempt(vproc, thread)          a time slice ended (or a policy asked)
 *     vproc_added(vproc, cpu), vproc_removed(vproc, cpu)
 */
#ifndef ITO_RUNTIME_TRACE_H
#define ITO_RUNTIME_TRACE_H

#include <stdbool.h>
#include <stdint.h>
/* Debian: systemtap-sdt-dev (scripts/deps.sh). No library: the header
 * writes the probe notes itself. Each probe has a semaphore: a tool that
 * listens (perf, bpftrace: uprobe reference counters, Linux 4.20 and later)
 * adds one to it, and so does ITO_TRACE (all of them, at initialization). */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include "base/compiler.h"

/* The probes, and their semaphores: `ito_<probe>_semaphore`, the names
 * sys/sdt.h gives them (defined in trace.c, in the section .probes). */
#define ITO__TRACE_PROBES(X) \
    X(run) X(spawn) X(park) X(wake) X(exit) X(steal) X(handoff) X(preempt) X(vproc_added) X(vproc_removed)
#define ITO__TRACE_SEMAPHORE(name) extern unsigned short ito_##name##_semaphore __attribute__((visibility("hidden")));
ITO__TRACE_PROBES(ITO__TRACE_SEMAPHORE)
#undef ITO__TRACE_SEMAPHORE

/* Tracing into the per-vproc buffers is on (ITO_TRACE is set). Written once,
 * at initialization, before any activation starts (api/init.c). */
extern bool ito__trace_on __attribute__((visibility("hidden")));

/* A USDT probe `ito:name` with 1 to 6 arguments: sys/sdt.h's probe, written
 * as `asm inline` (STAP_PROBE_ASM, its form for use inside an asm). The
 * plain STAP_PROBEn is an asm of some twenty lines of assembler directives,
 * which GCC counts as twenty instructions when it decides what to inline.
 * It emits one nop either way. */
#define ITO__NARGS(...) ITO__NARGS_(__VA_ARGS__, 6, 5, 4, 3, 2, 1, 0)
#define ITO__NARGS_(a1, a2, a3, a4, a5, a6, n, ...) n
#define ITO__PROBE(name, ...) ITO__PROBE_N(name, ITO__NARGS(__VA_ARGS__), __VA_ARGS__)
#define ITO__PROBE_N(name, n, ...) ITO__PROBE_N_(name, n, __VA_ARGS__)
#define ITO__PROBE_N_(name, n, ...)                                                 \
    __asm__ __volatile__ __inline__(STAP_PROBE_ASM(ito, name, STAP_PROBE_ASM_TEMPLATE(n)) \
                                    ::STAP_PROBE_ASM_OPERANDS(n, __VA_ARGS__))

/* An event point. Off (no tool listens, no ITO_TRACE) it is one compare of
 * the probe's semaphore with 0 and a branch predicted not taken; the probe's
 * nop and its arguments sit behind it. */
#define ITO_TRACE_EVENT(name, ...)                                                        \
    do {                                                                                  \
        if (ITO_UNLIKELY(__atomic_load_n(&ito_##name##_semaphore, __ATOMIC_RELAXED))) {   \
            ITO__PROBE(name, __VA_ARGS__);                                                \
            if (ito__trace_on)                                                            \
                ito__trace_##name(__VA_ARGS__);                                           \
        }                                                                                 \
    } while (0)

/* The state gateway's events (runtime/thread.h, ito__thread_set_state):
 * spawn (FREE -> NEW), park (RUNNING -> BLOCKED, with what the thread waits
 * on), wake (BLOCKED -> READY) and exit (-> EXITED), recorded before the new
 * state is stored — before anyone else can act on it. `from` and `to` are
 * constants at nearly every call, so only the one event that applies is
 * compiled there, or none. */
#define ITO_TRACE_STATE(t, from, to)                                                                  \
    do {                                                                                              \
        if ((to) == ITO__TS_BLOCKED)                                                                  \
            ITO_TRACE_EVENT(park, (t)->index, (unsigned)__atomic_load_n(&(t)->wait_on, __ATOMIC_RELAXED), \
                            __atomic_load_n(&(t)->wait_obj, __ATOMIC_RELAXED));                       \
        else if ((from) == ITO__TS_BLOCKED && (to) == ITO__TS_READY)                                  \
            ITO_TRACE_EVENT(wake, (t)->index, (unsigned)__atomic_load_n(&(t)->wait_on, __ATOMIC_RELAXED)); \
        else if ((from) == ITO__TS_FREE && (to) == ITO__TS_NEW)                                       \
            ITO_TRACE_EVENT(spawn, (t)->index, ito__thread_id((t), __atomic_load_n(&(t)->ctl, __ATOMIC_RELAXED)), \
                            (const char *)(t)->name);                                                 \
        else if ((to) == ITO__TS_EXITED)                                                              \
            ITO_TRACE_EVENT(exit, (t)->index);                                                        \
    } while (0)

/* The events reported to the application's hook (runtime/event.h, ito__event)
 * that the timeline shows: a slice's end, a processor added or removed. The
 * blocked carrier's hand-off has its own point (activation.c), which sees
 * every hand-off, also one with no thread to name. */
#define ITO_TRACE_UPCALL(kind, vp, thread_id)                                                         \
    do {                                                                                              \
        if ((kind) == ITO_EVENT_PREEMPTED)                                                            \
            ITO_TRACE_EVENT(preempt, (vp)->index, ito__trace_thread_of(thread_id));                   \
        else if ((kind) == ITO_EVENT_VPROC_ADDED)                                                     \
            ITO_TRACE_EVENT(vproc_added, (vp)->index, (vp)->cpu);                                     \
        else if ((kind) == ITO_EVENT_VPROC_REMOVED)                                                   \
            ITO_TRACE_EVENT(vproc_removed, (vp)->index, (vp)->cpu);                                   \
    } while (0)

/* A thread's index from its handle (0: none, -1). */
static inline int64_t ito__trace_thread_of(uint64_t id) { return id ? (int64_t)(uint32_t)id : -1; }

/* Read ITO_TRACE and, if it names a file, allocate the buffers and turn
 * tracing on (api/init.c, before the vprocs' activations start). */
void ito__trace_init(void);

/* Write the trace file now, with everything still buffered (the file is
 * replaced whole). Also called at exit. Any thread, not a signal handler;
 * may be called again. Does nothing unless ITO_TRACE is set. */
void ito__trace_write(void);

/* The recorders: what ITO_TRACE_EVENT calls when tracing is on (trace.c).
 * The first group says its vproc; the caller carries it, inside a critical
 * section. The second finds the caller's (or the foreign buffer) itself. */
void ito__trace_run(int vproc, int64_t thread) ITO_COLD;
void ito__trace_steal(int vproc, uint32_t thread, int last) ITO_COLD;
void ito__trace_handoff(int vproc, int64_t thread, bool stall) ITO_COLD;
void ito__trace_preempt(int vproc, int64_t thread) ITO_COLD;
void ito__trace_vproc_added(int vproc, int cpu) ITO_COLD;
void ito__trace_vproc_removed(int vproc, int cpu) ITO_COLD;
void ito__trace_spawn(uint32_t thread, uint64_t id, const char *name) ITO_COLD;
void ito__trace_park(uint32_t thread, unsigned reason, const void *obj) ITO_COLD;
void ito__trace_wake(uint32_t thread, unsigned reason) ITO_COLD;
void ito__trace_exit(uint32_t thread) ITO_COLD;

#endif
