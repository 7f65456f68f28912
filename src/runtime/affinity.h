/* SPDX-License-Identifier: MIT */
/* A thread's CPU set: the CPUs it may run on (runtime/affinity.c). */
#ifndef ITO_RUNTIME_AFFINITY_H
#define ITO_RUNTIME_AFFINITY_H

#include <stdbool.h>
#include <stdint.h>

#include <ito/policy.h>

struct ito__thread;
struct ito__vproc;

/* CPUs 0..ITO__CPUS_MAX-1, as cpu_set_t has them. The words are read and
 * written with relaxed atomics: a set may change while a vproc tests a bit
 * of it (the test then sees the old or the new bit, both meant at the time). */
#define ITO__CPUS_MAX 1024
struct ito__cpus {
    _Atomic uint64_t w[ITO__CPUS_MAX / 64];
};

bool ito__cpus_has(const struct ito__cpus *s, int cpu);

/* Restrict t to the CPUs of `cpus` (NULL: any CPU of the process). The set
 * must stay valid while t lives or until the next call. Takes effect when t
 * next becomes ready: ito__affinity_kick makes a t that runs where the set
 * does not allow give way at once; the caller moves itself with
 * ito__affinity_move_self. */
void ito__thread_set_cpus(struct ito__thread *t, const struct ito__cpus *cpus);
/* t (maybe ended and reused since: then at worst a vproc picks once more)
 * runs on a vproc its set does not allow: that vproc is asked to switch it
 * out now (ito_policy_preempt). */
void ito__affinity_kick(struct ito__thread *t);
/* The calling ito thread, if the CPU of its vproc is not in its set: move to
 * a vproc whose CPU is (a yield that lands there). MAY SWITCH. */
void ito__affinity_move_self(void);
/* Whether the vprocs are pinned to CPUs at all (ITO_PIN): without, a set
 * cannot be honoured. */
bool ito__affinity_supported(void);

/* The scheduler's side. t has a set (t->cpus); vp is the caller's vproc.
 * Where t should run: vp itself if its CPU is in the set, else a vproc with
 * a processor on one of the set's CPUs, else (none has one: the set is
 * broken until one does, as Linux breaks a task's affinity when its last CPU
 * goes offline) vp. */
struct ito__vproc *ito__affinity_place(struct ito__vproc *vp, struct ito__thread *t);
/* t (with a set) became ready on vp: into vp's queue of threads held to it,
 * or to its place's inbox; if the set is broken, into vp's policy. */
void ito__affinity_enqueue(struct ito__vproc *vp, struct ito__thread *t, ito_ready_reason_t why);
/* t (with a set), just taken from a queue by vp, may not run on vp (its
 * set changed while it was queued, or vp moved to another CPU): sent on to
 * its place, and true; false if it may run here. */
bool ito__affinity_sent_on(struct ito__vproc *vp, struct ito__thread *t);
/* The oldest thread held to vp, or NULL (the owner). */
struct ito__thread *ito__affinity_pop(struct ito__vproc *vp);
/* The idle vp (the caller's): a thread held to another vproc that may run
 * on vp's CPU, taken off that vproc's queue; or NULL. */
struct ito__thread *ito__affinity_steal(struct ito__vproc *vp);

#endif
