/* SPDX-License-Identifier: MIT */
/*
 * The agent: this process's side of the cross-process allocator.
 *
 * Problem. The allocation table (table.c) says which processors each ito
 * process of the machine holds; someone in this process must post its hints
 * there, learn its grant, and make the vprocs follow it — without adding
 * work to any thread operation.
 *
 * Approach. A kernel thread of its own ("ito-alloc"), asleep on two futexes
 * at once (futex_waitv): the table's generation, bumped by any process whose
 * division changed a grant, and a private word that the scheduler bumps when
 * this process's demand changes. It wakes only on those transitions:
 *   - Demand. The process asks for every vproc it has while work waits with
 *     no vproc free — a time slice ended, or a thread yielded, while
 *     another thread waited for the vproc; threads that were ready on a
 *     busy vproc for ITO__ALLOC_IDLE_NS in all within a slice
 *     (ito__agent_backlog_end: threads that block too often to end a
 *     slice); or,
 *     without slices or from a foreign kernel thread, work was made ready
 *     with no vproc free — [SA]'s "add more processors"; and for one
 *     fewer per vproc that has slept for ITO__ALLOC_IDLE_NS ("this processor
 *     is idle", idle.c). The want is posted only when it changes.
 *   - Weight. A vproc kept on a processor that a process of higher
 *     priority holds too runs at the kernel's idle weight (weight.c).
 *   - Grant. A new grant of g processors keeps min(g, vprocs) vprocs: those
 *     that hold one already, busy ones before idle ones, each on a processor
 *     of the grant it already has where possible. The others are revoked
 *     (cpushare/revoke.c): the flag, then a poke — a wake-up if the vproc
 *     sleeps, the time-slice signal (SI_QUEUE, tagged) to its carrier if it
 *     runs a thread, which then stops at its next safe point. The carrier
 *     is moved onto the processors kept at once (sched_setaffinity): the
 *     new owner need not wait until the kernel runs it to its safe point.
 *     A vproc granted back is moved to its processor, then woken from
 *     REVOKED.
 *   - Liveness. While it wants more than it holds, or shares a processor
 *     with a process of higher priority (and so runs there at the idle
 *     weight), it divides again twice a second, which drops the processes
 *     that have died (table.c: pid and start time): a killed process's
 *     processors go to the others within a second. A dead process that
 *     wanted nothing and was above nobody is dropped by the next division
 *     anyone makes (ito-ctl makes one at each refresh).
 * The process never holds fewer than one vproc (divide.c gives everyone one).
 * At exit it leaves the table, so that its processors go at once.
 *
 * Who takes part: every process (ITO_ALLOCATOR=1, the default) whose vprocs
 * do not outnumber its CPUs — a process that asked for more vprocs than
 * CPUs asked for time-sharing, and gets it. Processes meet in the table of
 * their user and domain (ITO_ALLOC_DOMAIN, default none).
 *
 * Memory order. revoke and grant_cpu: the agent stores grant_cpu, then
 * revoke (seq_cst); the owner loads revoke with acquire before grant_cpu.
 * Granting back is a Dekker pair with the park (revoke.c): the agent stores
 * revoke = 0 then CASes REVOKED -> IDLE (both seq_cst); the owner stores
 * REVOKED then loads revoke (seq_cst).
 */
#include "cpushare/agent.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ito.h>

#include "cpushare/table.h"
#include "cpushare/weight.h"
#include "base/clock.h"
#include "base/env.h"
#include "base/futex.h"
#include "base/kthread.h"
#include "base/libc.h"
#include "base/panic.h"
#include "base/procstat.h"
#include "cpushare/revoke.h"
#include "runtime/runtime.h"
#include "runtime/sched.h"
#include "runtime/vproc.h"
#include "runtime/carrier.h"
#include "runtime/ring.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

/* How often a process that wants more than it holds looks for dead ones. */
#define LIVENESS_NS 500000000ull

static struct {
    struct ito__table *table;
    /* Written by the agent thread (and init); read at exit too. */
    _Atomic int slot;
    _Atomic uint64_t serial;
    _Atomic bool joined;
    _Atomic bool leaving;        /* at exit: do not join again */
    _Atomic uint32_t word;       /* private futex: demand or priority changed */
    _Atomic bool more;           /* work waited with no vproc free */
    _Atomic int priority;        /* ITO_PRIORITY, ito_alloc_set_priority */
    struct ito__table_hints hints;
    _Atomic int posted_want;
    int posted_priority;
    uint32_t applied;            /* the generation whose grant the vprocs follow */
    _Atomic uint64_t nhints;     /* hints posted, and when the last one was */
    _Atomic uint64_t hinted_ns;
    _Atomic int domain_processes;
    _Atomic uint64_t domain_reallocations;
    ito__cpumask shared_above;   /* of the grant applied, what a higher priority holds too */
    bool waitv;                  /* futex_waitv works */
    _Atomic bool running;        /* the agent thread runs */
} ag;

static void poke(void)
{
    atomic_fetch_add_explicit(&ag.word, 1, memory_order_release);
    ito__futex_wake(&ag.word, 1);
}

void ito__agent_more(void)
{
    if (!ito__rt.allocator || atomic_load_explicit(&ag.more, memory_order_relaxed))
        return;
    if (!atomic_exchange_explicit(&ag.more, true, memory_order_relaxed))
        poke();
}

/* Demand the slices do not show. Threads that block often — at a barrier,
 * say — end no time slice, yet one of them may always be ready while
 * another runs. So while some of the process's vprocs have no processor,
 * the time threads spend ready on a busy vproc is measured: from a thread
 * made ready with no vproc free (below) to the vproc's next pick
 * (ito__agent_backlog_end). Waits of ITO__ALLOC_WAIT_NS or more that add up
 * to ITO__ALLOC_IDLE_NS within a time slice (the mirror of an idle vproc's
 * hysteresis, idle.c) ask for more processors. Shorter waits do not count:
 * less than a processor takes to arrive, and what two threads that hand the
 * vproc to each other see (one wakes the other, then blocks). Both ends run
 * on the vproc's owner inside a critical section, so the fields are the
 * owner's alone; the clock is read only while the process is short of
 * processors and threads do wait. */
void ito__agent_backlog_end(struct ito__vproc *vp)
{
    uint64_t now = ito__now_ns(), waited = now - vp->backlog_since;
    vp->backlog_since = 0;
    if (waited < ITO__ALLOC_WAIT_NS)
        return;
    if (now - vp->backlog_window > ito__rt.timeslice_ns) {
        vp->backlog_window = now;   /* a new window of a slice */
        vp->backlog_ns = 0;
    }
    vp->backlog_ns += waited;
    if (vp->backlog_ns >= ITO__ALLOC_IDLE_NS) {
        vp->backlog_ns = 0;
        if (atomic_load_explicit(&ito__rt.nrevoked, memory_order_relaxed) > 0 && !ito__vproc_revoked(vp))
            ito__agent_more();
    }
}

void ito__agent_backlog(void)
{
    /* A thread made ready on a vproc — by another thread, or by the vproc's
     * own timers and completions — usually runs there soon: that is no
     * demand. Time slices tell real demand apart (a slice that ends while
     * another thread waits: sched.c), and so does the time it then waits
     * (above). Without slices, or when the work comes from a kernel thread
     * ito does not know, take it as demand. */
    if (ito__rt.timeslice_ns && ito__on_activation()) {
        struct ito__vproc *vp = ito__vproc_self();
        if (vp && !vp->backlog_since)
            vp->backlog_since = ito__now_ns();   /* timed instead (above) */
        return;
    }
    ito__agent_more();
}

void ito__agent_idle(bool idle)
{
    if (idle)
        atomic_store_explicit(&ag.more, false, memory_order_relaxed);
    poke();
}

static bool held(const struct ito__vproc *vp)
{
    return atomic_load_explicit(&vp->revoke, memory_order_relaxed) == 0;
}

/* Vprocs that hold a processor (or are about to). */
static int held_count(void)
{
    int h = 0;
    for (int i = 0; i < ito__rt.nvprocs; i++)
        h += held(ito__rt.vprocs[i]);
    return h;
}

/* What to ask for: every vproc while work waits for one, else the vprocs
 * held; minus those that are idle. */
static int desired_want(void)
{
    int n = ito__rt.nvprocs, h = 0, idle = 0;
    for (int i = 0; i < n; i++) {
        struct ito__vproc *vp = ito__rt.vprocs[i];
        if (held(vp)) {
            h++;
            idle += atomic_load_explicit(&vp->idle_declared, memory_order_relaxed);
        }
    }
    int w = (atomic_load_explicit(&ag.more, memory_order_relaxed) ? n : h) - idle;
    return w < 0 ? 0 : w > n ? n : w;   /* 0: all idle; the division still gives one, shared */
}

/* ------------------------------------------------------------- vprocs */

/* The kernel thread carrying vp now (0: none known). */
static pid_t carrier_tid(const struct ito__vproc *vp)
{
    struct ito__activation *c = ito__ks_carrier(atomic_load_explicit(&vp->kstate, memory_order_acquire));
    return c ? ito__activation_tid(c) : 0;
}

/* Does vp's carrier run a thread on a CPU now — not inside a blocking call
 * (ITO_BLOCKING: the KERNEL mark; a plain one: asleep in the kernel)? A
 * signal would end such a call early (EINTR from pause, nanosleep, ...);
 * it uses no processor, and stops at its next switch or slice once it
 * returns. */
static bool carrier_computes(const struct ito__vproc *vp, pid_t tid)
{
    uintptr_t ks = atomic_load_explicit(&vp->kstate, memory_order_acquire);
    return (ks & ITO__KS_MASK) == ITO__KS_RUN && !ito__procstat_asleep(tid);
}

/* Move vp's carrier onto the processors `to` at once (pinning only). */
static void move_carrier(pid_t tid, const ito__cpumask *to)
{
    if (!ito__rt.pin || !tid || ito__cpumask_count(to) == 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c = ito__cpumask_next(to, 0); c >= 0; c = ito__cpumask_next(to, c + 1))
        if (c < CPU_SETSIZE)
            CPU_SET(c, &set);
    ito__sys_sched_setaffinity(tid, sizeof set, &set);   /* fails only if it has exited: nothing to move */
}

/* Revoke vp; `kept` are the processors the process keeps. Its carrier is
 * moved onto them at once: until it reaches a safe point and parks it may
 * wait for the kernel to run it, and it must neither wait on nor take the
 * processor given away. A carrier that changed vproc meanwhile (a
 * hand-off) is pinned again when it is next adopted; until then it runs on
 * the kept processors, never on another process's. */
static void take_away(struct ito__vproc *vp, const ito__cpumask *kept)
{
    atomic_store_explicit(&vp->revoke, 1, memory_order_seq_cst);
    uint32_t s = atomic_load_explicit(&vp->run_state, memory_order_relaxed);
    pid_t tid = carrier_tid(vp);
    move_carrier(tid, kept);
    if (s == ITO__VP_SLEEPING)
        ito__vproc_wake(vp);
    else if (s == ITO__VP_BUSY && tid && carrier_computes(vp, tid))
        ito__carrier_poke(tid);
}

static void grant(struct ito__vproc *vp, int cpu)
{
    int was = atomic_exchange_explicit(&vp->grant_cpu, cpu, memory_order_relaxed);
    atomic_store_explicit(&vp->revoke, 0, memory_order_seq_cst);
    uint32_t s = ITO__VP_REVOKED;
    ito__cpumask to;
    ito__cpumask_zero(&to);
    if (cpu >= 0)
        ito__cpumask_set(&to, cpu);
    if (atomic_compare_exchange_strong_explicit(&vp->run_state, &s, ITO__VP_IDLE, memory_order_seq_cst,
                                                memory_order_relaxed)) {
        /* Parked on the processors the process kept (take_away): wake it
         * on its own, not behind a vproc there. */
        move_carrier(carrier_tid(vp), &to);
        if (vp->ring)
            ito__ring_kick(vp->ring);
        else
            ito__futex_wake(&vp->run_state, 1);
    } else if (cpu >= 0 && cpu != was) {
        /* It runs, on a processor that is no longer ours: move it now; its
         * scheduler re-pins it at its next round anyway (sched.c). */
        move_carrier(carrier_tid(vp), &to);
    }
}

/* Which vprocs to keep: those on a processor of the grant first (they need
 * not move); then busy ones, then sleeping ones, then those declared idle. */
static int keep_rank(const struct ito__vproc *vp, const ito__cpumask *m)
{
    int c = atomic_load_explicit(&vp->grant_cpu, memory_order_relaxed);
    int r = c >= 0 && ito__cpumask_has(m, c) ? 3 : 0;
    if (atomic_load_explicit(&vp->idle_declared, memory_order_relaxed))
        return r;
    return r + (atomic_load_explicit(&vp->run_state, memory_order_relaxed) == ITO__VP_SLEEPING ? 1 : 2);
}

/* Make the vprocs follow the grant `m`. */
static void apply(const ito__cpumask *m)
{
    int n = ito__rt.nvprocs, g = ito__cpumask_count(m);
    int target = g < n ? g : n;
    bool keep[ITO__VPROCS_MAX] = { false };
    int cpu_of[ITO__VPROCS_MAX];
    /* Which vprocs keep a processor: held ones first, best ranked, then the
     * lowest indices. */
    int kept = 0;
    for (int rank = 5; rank >= 0 && kept < target; rank--)
        for (int i = 0; i < n && kept < target; i++)
            if (held(ito__rt.vprocs[i]) && keep_rank(ito__rt.vprocs[i], m) == rank) {
                keep[i] = true;
                kept++;
            }
    for (int i = 0; i < n && kept < target; i++)
        if (!keep[i]) {
            keep[i] = true;
            kept++;
        }
    /* Which processor each kept vproc runs on: the one it has, if granted
     * and not taken by another; else a free one of the grant. */
    ito__cpumask free = *m;
    for (int i = 0; i < n; i++) {
        cpu_of[i] = -1;
        int c = atomic_load_explicit(&ito__rt.vprocs[i]->grant_cpu, memory_order_relaxed);
        if (keep[i] && c >= 0 && ito__cpumask_has(&free, c)) {
            cpu_of[i] = c;
            ito__cpumask_clear(&free, c);
        }
    }
    for (int i = 0; i < n; i++)
        if (keep[i] && cpu_of[i] < 0) {
            cpu_of[i] = ito__cpumask_next(&free, 0);
            if (cpu_of[i] >= 0)
                ito__cpumask_clear(&free, cpu_of[i]);
        }
    /* Revoke first, so that the count of running vprocs never exceeds the
     * grant for longer than a revocation takes. */
    ito__cpumask kept_cpus;
    ito__cpumask_zero(&kept_cpus);
    for (int i = 0; i < n; i++)
        if (keep[i] && cpu_of[i] >= 0)
            ito__cpumask_set(&kept_cpus, cpu_of[i]);
    for (int i = 0; i < n; i++)
        if (!keep[i] && held(ito__rt.vprocs[i]))
            take_away(ito__rt.vprocs[i], &kept_cpus);
    for (int i = 0; i < n; i++)
        if (keep[i])
            grant(ito__rt.vprocs[i], ito__rt.pin ? cpu_of[i] : -1);
}

/* Outside the table (it is full, or cannot be opened): everything. */
static void apply_all(void)
{
    int cpus[CPU_SETSIZE];
    int nc = ito__cpus_usable(cpus, CPU_SETSIZE);
    ito__cpumask m;
    ito__cpumask_zero(&m);
    for (int i = 0; i < nc; i++)
        ito__cpumask_set(&m, cpus[i] < 0 ? i : cpus[i]);
    apply(&m);
}

/* ------------------------------------------------------------- the table */

/* A hint is about to be posted: for ito_alloc_info (bench/realloc measures
 * reallocations from it). The want and the time first: a reader that sees
 * the new count sees them (release pairs with the acquire load of
 * ito_alloc_info). */
static void note_hint(void)
{
    atomic_store_explicit(&ag.hinted_ns, ito__now_ns(), memory_order_relaxed);
    atomic_fetch_add_explicit(&ag.nhints, 1, memory_order_release);
}

static bool join(void)
{
    if (atomic_load(&ag.leaving))
        return false;
    ag.hints.want = desired_want();
    ag.hints.priority = atomic_load(&ag.priority);
    int slot;
    uint64_t serial;
    ag.posted_want = ag.hints.want;   /* before the hint: ito_alloc_info pairs them */
    note_hint();
    int e = ito__table_join(ag.table, &ag.hints, &slot, &serial);
    if (e) {
        static bool warned;
        if (!warned) {
            warned = true;
            ito__warn("cannot join the processor allocation table (%s); this process uses every "
                      "CPU it may, as with ITO_ALLOCATOR=0, until a slot frees up",
                      e == ENOSPC ? "it is full: 64 ito processes" : strerror(e));
        }
        ag.joined = false;
        apply_all();
        return false;
    }
    atomic_store(&ag.slot, slot);
    atomic_store(&ag.serial, serial);
    ag.joined = true;
    ag.posted_priority = ag.hints.priority;
    ag.applied = 0;
    return true;
}

static void sync_hints(void)
{
    int want = desired_want(), prio = atomic_load(&ag.priority);
    if (!ag.joined || (want == ag.posted_want && prio == ag.posted_priority))
        return;
    ag.hints.want = want;
    ag.hints.priority = prio;
    ag.posted_want = want;
    note_hint();
    if (ito__table_post(ag.table, ag.slot, ag.serial, &ag.hints) == ESRCH) {
        join();   /* the table was rebuilt: our slot is gone */
        return;
    }
    ag.posted_priority = prio;
}

static void sync_grant(void)
{
    ito__cpumask m;
    uint32_t gen;
    struct ito__table_view view;
    if (ito__table_grant(ag.table, ag.slot, ag.serial, &m, &gen, &view) == ESRCH) {
        if (!join())
            return;
        if (ito__table_grant(ag.table, ag.slot, ag.serial, &m, &gen, &view) != 0)
            return;
    }
    ag.applied = gen;
    ag.shared_above = view.shared_above;
    apply(&m);
    atomic_store(&ag.domain_processes, view.processes);
    atomic_store(&ag.domain_reallocations, view.reallocations);
}

/* A vproc kept on a processor that a higher priority holds too runs at the
 * kernel's idle weight (weight.c). */
static void follow_weights(void)
{
    static pid_t idle[ITO__VPROCS_MAX];
    int n = 0;
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        struct ito__vproc *vp = ito__rt.vprocs[i];
        int c = atomic_load_explicit(&vp->grant_cpu, memory_order_relaxed);
        pid_t tid = carrier_tid(vp);
        if (held(vp) && c >= 0 && tid && ito__cpumask_has(&ag.shared_above, c))
            idle[n++] = tid;
    }
    ito__weight_follow(idle, n);
}

/* Sleep until the generation or our word changes, or the deadline. */
static void wait_change(uint32_t gen, uint32_t word, uint64_t deadline)
{
    struct timespec ts = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };
    if (ag.waitv) {
        struct futex_waitv w[2];
        memset(w, 0, sizeof w);
        w[0].val = gen;
        w[0].uaddr = (uintptr_t)&ag.table->h.generation;
        w[0].flags = FUTEX_32;   /* shared between processes */
        w[1].val = word;
        w[1].uaddr = (uintptr_t)&ag.word;
        w[1].flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
        long r = syscall(SYS_futex_waitv, w, 2, 0, deadline ? &ts : NULL, CLOCK_MONOTONIC);
        if (r >= 0 || errno != ENOSYS)
            return;
        ag.waitv = false;
    }
    /* Without futex_waitv (Linux < 5.16): the private word, and a look at
     * the generation every 10 ms. */
    uint64_t d = ito__now_ns() + 10000000u;
    ito__futex_wait(&ag.word, word, deadline && deadline < d ? deadline : d);
}

/* The agent works a few microseconds per wake-up, and a reallocation waits
 * for it: ask the kernel for a short slice (sched_attr.sched_runtime, a
 * request any thread may make for itself on Linux 6.12 and later, where
 * EEVDF then lets it preempt a computing thread when it wakes, instead of
 * waiting up to a full slice of that thread's: bench/realloc shows the
 * difference, docs/performance.md the figures). Older kernels ignore the field.
 * Not a priority: it gets no more CPU time than before. */
static void short_slice(void)
{
    struct {
        uint32_t size, sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime, sched_deadline, sched_period;
    } a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;   /* SCHED_ATTR_SIZE_VER0 */
    a.sched_policy = SCHED_OTHER;
    a.sched_nice = getpriority(PRIO_PROCESS, 0);
    a.sched_runtime = 100000;   /* 100 us, the kernel's least */
    syscall(SYS_sched_setattr, 0, &a, 0);
}

static void *agent_main(void *arg)
{
    (void)arg;
    short_slice();
    uint64_t next_check = 0;
    for (;;) {
        uint32_t word = atomic_load_explicit(&ag.word, memory_order_acquire);
        uint32_t gen = atomic_load_explicit(&ag.table->h.generation, memory_order_acquire);
        if (atomic_load(&ag.leaving))
            return NULL;
        if (!ag.joined) {
            if (!join()) {
                wait_change(gen, word, ito__now_ns() + LIVENESS_NS);
                continue;
            }
        }
        sync_hints();
        if (gen != ag.applied || !ag.applied)
            sync_grant();
        follow_weights();
        /* The grant changed which vprocs we hold, and so perhaps our want
         * (the idle ones among those held): post it before sleeping. */
        if (ag.joined && desired_want() != ag.posted_want)
            continue;
        uint64_t now = ito__now_ns(), deadline = 0;
        if (ag.posted_want > held_count() || ito__cpumask_count(&ag.shared_above) > 0) {
            if (now >= next_check) {
                /* A dead process's processors: a division drops it. */
                next_check = now + LIVENESS_NS;
                ito__table_lock(ag.table);
                bool changed = ito__table_divide(ag.table);
                ito__table_unlock(ag.table);
                if (changed)
                    continue;
            }
            deadline = next_check;
        }
        wait_change(ag.applied, word, deadline);
    }
}

static void leave(void)
{
    atomic_store(&ag.leaving, true);
    poke();
    if (ag.joined)
        ito__table_leave(ag.table, ag.slot, ag.serial);
}

void ito__agent_configure(void)
{
    if (!ito__env_int("ITO_ALLOCATOR", 1, 0, 1, false))
        return;
    int cpus[CPU_SETSIZE];
    int nc = ito__cpus_usable(cpus, CPU_SETSIZE);
    if (ito__rt.nvprocs > nc || ito__rt.nvprocs > ITO__VPROCS_MAX)
        return;   /* it asked for time-sharing */
    const char *domain = ito__env_str("ITO_ALLOC_DOMAIN");
    char path[192];
    if (domain && !ito__table_domain_ok(domain)) {
        ito__warn("ignoring ITO_ALLOC_DOMAIN='%.64s%s': not a domain name; accepted: 1 to %d letters, digits, "
                  "'-' and '_'; using no domain (sharing with this user's ito processes that name none)", domain,
                  strlen(domain) > 64 ? "..." : "", ITO__ALLOC_DOMAIN_MAX);
        domain = NULL;
    }
    ito__table_path(domain, path, sizeof path);
    int e = ito__table_open(path, &ag.table);
    if (e) {
        struct stat st;
        if (e == EACCES && lstat(path, &st) == 0 && st.st_uid != geteuid())
            ito__warn("cannot use the processor allocation table %s: another user (uid %u) created it first; "
                      "this process uses every CPU it may, as with ITO_ALLOCATOR=0. A runtime directory of this "
                      "user's (/run/user/%u, which a login session creates) keeps the table where no other user "
                      "can create files", path, (unsigned)st.st_uid, (unsigned)geteuid());
        else
            ito__warn("cannot open the processor allocation table %s (%s); this process uses every CPU "
                      "it may, as with ITO_ALLOCATOR=0", path, strerror(e));
        return;
    }
    atomic_store(&ag.priority, (int)ito__env_int("ITO_PRIORITY", 0, ITO_ALLOC_PRIORITY_MIN,
                                                 ITO_ALLOC_PRIORITY_MAX, false));
    ag.hints.quota = 0;   /* the vprocs already count the quota (vproc.c) */
    ag.hints.vprocs = ito__rt.nvprocs;
    /* Its affinity mask (nc CPUs, the quota counted: vproc.c). */
    for (int i = 0; i < nc; i++)
        ito__cpumask_set(&ag.hints.allowed, cpus[i] < 0 ? i : cpus[i]);
    prctl(PR_GET_NAME, ag.hints.name);
    ag.hints.name[sizeof ag.hints.name - 1] = '\0';
    ag.waitv = true;
    atomic_store(&ag.more, true);   /* a new process asks for every vproc it has */
    ito__rt.allocator = true;
}

void ito__agent_start(void)
{
    if (!ito__rt.allocator)
        return;
    join();   /* if it fails, the agent retries */
    int e = ito__kthread_start("ito-alloc", 256 * 1024, agent_main, NULL, NULL);
    if (e) {
        ito__warn("cannot start the allocator's thread (%s); this process uses every CPU it may",
                  strerror(e));
        if (ag.joined)
            ito__table_leave(ag.table, ag.slot, ag.serial);
        ag.joined = false;
        apply_all();
        return;
    }
    atomic_store(&ag.running, true);
    static bool leave_registered;   /* a forked child inherits the registration */
    if (!leave_registered) {
        leave_registered = true;
        atexit(leave);
    }
}

void ito__agent_forked(void)
{
    /* The parent's slot and agent thread stay the parent's (the table
     * checks the process ID too). This process joins as itself when its
     * runtime resumes (ito__agent_start), asking for every vproc. */
    ag.joined = false;
    atomic_store(&ag.running, false);
    atomic_store(&ag.leaving, false);
    atomic_store(&ag.word, 0);
    atomic_store(&ag.more, true);
    ag.applied = 0;
}

/* ------------------------------------------------------------- the API */

void ito__agent_info(ito_alloc_info_t *info)
{
    memset(info, 0, sizeof *info);
    /* The count first (acquire, pairs with note_hint's release), then what
     * went with it: a hint posted in between gives a newer want and time,
     * never an older one. */
    info->hints = atomic_load_explicit(&ag.nhints, memory_order_acquire);
    info->hinted_ns = atomic_load_explicit(&ag.hinted_ns, memory_order_relaxed);
    info->enabled = atomic_load(&ag.running);
    info->vprocs = ito__rt.nvprocs;
    info->held = held_count();
    info->want = info->enabled ? ag.posted_want : ito__rt.nvprocs;
    info->priority = atomic_load(&ag.priority);
    info->processes = info->enabled ? atomic_load(&ag.domain_processes) : 1;
    info->reallocations = atomic_load(&ag.domain_reallocations);
}

void ito__agent_set_priority(int priority)
{
    atomic_store(&ag.priority, priority);
    if (atomic_load(&ag.running))
        poke();
}
