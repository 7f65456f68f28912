/* SPDX-License-Identifier: MIT */
/*
 * The monitor: no processor lost to a blocked kernel call.
 *
 * Problem. Linux does not tell a process that one of its kernel threads has
 * blocked ([SA]'s "blocked" upcall). A vproc whose carrier sits in a slow
 * system call runs nothing, however many threads are ready.
 *
 * Approach (Go's sysmon and retake, with [SA]'s vocabulary). This file
 * decides when a vproc changes carrier; how it changes — the kstate word,
 * every transition, both sides — is runtime/carrier.c. Threads bracket
 * calls that may block (ito_blocking_begin/end), which mark the vproc with
 * plain stores. A monitor kernel thread scans the vprocs: a vproc seen in
 * the same blocking call (same kcalls) at two scans at least ITO__HANDOFF_NS
 * apart, while threads could use it, is handed to a spare activation
 * (ito__carrier_hand_off), which carries it on from its scheduler loop. Spares are
 * parked kernel threads; the monitor keeps one ready in advance so that a
 * hand-off does not wait for pthread_create, and never lets the total exceed
 * ITO_MAX_ACTIVATIONS: at the cap a blocked carrier keeps its vproc (with a
 * one-time warning).
 *
 * "Could use it": its inbox, the global queue or its timers hold work, or no
 * other vproc is idle (then nobody would steal the work queued on it). When
 * another vproc idles, it takes that work itself; the monitor looks again.
 *
 * Pace. The monitor scans every ITO__MONITOR_MIN_NS after a hand-off or a
 * wake-up, and backs off by doubling to ITO__MONITOR_MAX_NS while it hands
 * nothing off, also while short calls keep coming and going (scanning at
 * full pace for them would take CPU time from the vprocs). From
 * ITO__MONITOR_SLOW_NS on it sleeps on a futex that a beginning call wakes, so
 * a call after a quiet spell is seen at once; at the longest period with
 * nothing in the kernel it sleeps until woken, so that short bracketed calls
 * coming and going cost about a thousand futex wake-ups a second, not one
 * per call (docs/performance.md).
 * Going to sleep is a Dekker pair with ito_blocking_begin: the monitor stores
 * monitor_asleep, runs the heavy fence and scans once more; begin stores
 * kstate, runs the light fence and loads monitor_asleep (sched.h:
 * ito__fence_light/heavy). When a hand-off falls due within a period while
 * threads wait and a CPU is idle, it spins up to it: a timed sleep that short
 * overshoots by tens of microseconds (timer and wake-up latency), which
 * would double the hand-off time (bench/handoff).
 *
 * Stalls. A vproc that is BUSY, could use its carrier, has picked nothing
 * and whose carrier has used no CPU time for ITO__STALL_NS has a carrier
 * asleep in a call nobody bracketed, or in a page fault: ito__carrier_steal
 * checks that from outside and hands the vproc on the same way. Watching costs one CPU-clock read per
 * busy vproc per scan. The pace: while any vproc is busy the monitor never
 * sleeps for good; in a process where stalls happened within the last
 * second it scans at least every ITO__MONITOR_BUSY_NS and looks again
 * ITO__STALL_NS after a look that found a vproc had picked or run, so a
 * stall is handed off 1-2 ms in; elsewhere it backs off to
 * ITO__MONITOR_MAX_NS like for bracketed calls, and the first stall after a quiet spell takes up to two such
 * periods. On a virtual machine a timer wake-up costs tens of
 * microseconds of CPU time, so the pace, not the scan, is what costs
 * (docs/performance.md gives the monitor's share of a CPU). With every
 * vproc idle the monitor sleeps until the first to get busy wakes it (sched.c: one
 * futex wake at most per scan period); where stalls happen lately it does
 * so at once, not only after backing off, and watches from that instant.
 *
 * Late timers and waiting threads. A vproc looks at its timers, its inbox
 * and the global queue between threads (sched.c: periodic); one whose thread
 * computes would leave them until the slice ends, and idle vprocs, which
 * run everyone's timers, may be none. So the monitor also watches the
 * earliest deadline of the busy vprocs: a timer ITO__LOOK_LATE_NS overdue on
 * one whose carrier ran since the last scan (or due, on one whose thread has
 * computed that long without a pick), threads left that long in its inbox,
 * completions left that long unreaped on its ring, or threads in the global
 * queue while no vproc is idle (then the vproc running the least urgent
 * thread), make it ask that vproc to look (ito__vproc_look: the poke).
 * While a vproc picks fewer than 32 threads a millisecond and its carrier
 * runs, the monitor keeps the ring's bell on (upcall/doorbell.c: a
 * completion is then looked at when it comes; a bell at each park cost an
 * echo server 8% of its throughput), and while threads wait on that ring it
 * looks every ITO__LOOK_IO_NS besides (a completion that came before the
 * bell). Its sleeps end by the time the next deadline would be that late, and a timer armed earlier than the end of a sleep
 * wakes it (ito__carrier_timer_armed, a Dekker pair like the one below: it
 * stores monitor_until, fences and reads the heaps; arm publishes the
 * deadline, fences and reads monitor_until).
 *
 * Rejected: a timestamp in ito_blocking_begin (a clock read on every call);
 * a spare per blocking call (a thread switch for calls that return at once);
 * for late timers, a POSIX timer per vproc on the wall clock (a system call
 * for every earlier deadline armed, and a signal per deadline).
 */
#include "upcall/monitor.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ito/policy.h>

#include "base/clock.h"
#include "base/env.h"
#include "base/futex.h"
#include "base/libc.h"
#include "base/kthread.h"
#include "base/panic.h"
#include "runtime/runtime.h"
#include "runtime/sched.h"
#include "runtime/thread.h"
#include "runtime/carrier.h"
#include "runtime/ring.h"
#include "runtime/vproc.h"

/* Fastest scan period, and the slowest (Go's sysmon: 20 µs to 10 ms). */
#define ITO__MONITOR_MIN_NS 20000u
#define ITO__MONITOR_MAX_NS 10000000u
/* While threads wait for I/O on a vproc whose thread computes, the monitor
 * looks at its ring this often (look_late). */
#define ITO__LOOK_IO_NS 1000000u
/* From this period on, the monitor sleeps where a beginning call can wake it:
 * faster than that, a wake-up per call would cost more than the scans. */
#define ITO__MONITOR_SLOW_NS 500000u
/* A blocking call is handed off once seen this long (Go's retake: one sysmon
 * tick, 20 µs at the fastest). */
#define ITO__HANDOFF_NS 20000u
/* A carrier that has picked nothing and used no CPU time for this long,
 * while work waits, is asleep in an unbracketed call (runtime/carrier.c). */
#define ITO__STALL_NS 1000000u
/* ... or for this long even when no work waits where the monitor can see it
 * (inbox, global queue, timers) and another vproc is idle: a policy may keep
 * threads in a busy vproc's own queue, out of an idle vproc's reach for a
 * while ("affinity": ITO_AFFINITY_IDLE_US), and the idle one may sleep; a
 * carrier asleep in the kernel must not hold them there for good. */
#define ITO__STALL_PRIVATE_NS 10000000u
/* Slowest scan while some vproc is busy and stalls have happened within
 * ITO__STALL_RECENT_NS: a new one is then noticed within ITO__STALL_NS plus
 * this. */
#define ITO__MONITOR_BUSY_NS 1000000u
#define ITO__STALL_RECENT_NS 1000000000u
/* Default cap on activations (carriers, spares and blocked ones together). */
#define ITO__MAX_ACTIVATIONS_DEFAULT 1024

struct watch {
    uint64_t kcalls;     /* the call seen */
    uint64_t since;      /* when it was first seen (0: none) */
    /* Stalls: the carrier seen, the vproc's pick count, the carrier's CPU
     * time, and since when both have stood still (0: not watching). */
    struct ito__activation *carrier;
    uint64_t ticks;
    uint64_t cpu_ns;
    uint64_t still_since;
    /* The same carrier used CPU time between the last two scans: it
     * computes (or did until a moment ago), it is not asleep in the kernel. */
    bool ran;
    /* Since when it has run one thread (its pick count unchanged; 0: not
     * watching): a thread that computes, as far as the scans can tell. */
    uint64_t pick_since;
    uint64_t seen_at;       /* when the last scan watched it (with pick_since) */
    /* It picked fewer threads between the last two scans than it takes to
     * look at its ring (sched.c: periodic, every 32 picks): completions
     * may wait there until its thread ends. */
    bool few_picks;
    /* ... fewer than that per ITO__LOOK_IO_NS, however long ago the last
     * scan was: a vproc that picks so rarely leaves completions for
     * milliseconds (the ring's bell: upcall/doorbell.c). */
    bool slow_picks;
    unsigned still_scans;   /* scans in a row that found its carrier had not run */
    uint64_t inbox_since;   /* threads seen in its inbox while it ran one since then (0: none) */
    uint64_t cq_since;      /* completions seen unreaped on its ring since then (0: none)... */
    unsigned cq_head;       /* ...the ring's CQ head then (it reaps: it moves) */
};

static struct watch *watches;   /* [nvprocs], monitor only */
static int ncpus_online;
static bool cap_warned;

/* Did vproc i's carrier use CPU time between the last two scans? */
static bool computed(int i) { return watches[i].ran; }

static bool could_use(struct ito__vproc *vp)
{
    /* Threads held to vp by their CPU set (runtime/affinity.c) may have
     * nowhere else to run, even while other vprocs are idle. */
    return atomic_load_explicit(&vp->inbox, memory_order_relaxed) ||
           atomic_load_explicit(&vp->held_len, memory_order_relaxed) ||
           atomic_load_explicit(&ito__rt.gq_len, memory_order_relaxed) ||
           atomic_load_explicit(&vp->timers.next, memory_order_relaxed) != UINT64_MAX ||
           atomic_load_explicit(&ito__rt.nspinning, memory_order_relaxed) +
                   atomic_load_explicit(&ito__rt.nsleeping, memory_order_relaxed) ==
               0;
}

/* Some CPU is idle: spinning there takes nothing from the vprocs. */
static bool cpu_idle(void)
{
    return atomic_load_explicit(&ito__rt.nsleeping, memory_order_relaxed) > 0 ||
           atomic_load_explicit(&ito__rt.nspinning, memory_order_relaxed) > 0 || ito__rt.nvprocs < ncpus_online;
}

/* Keep one spare parked (or on its way), within the cap. */
static void provision(void)
{
    ito__spin_lock(&ito__rt.spare_lock);
    int spares = ito__rt.nspares;
    ito__spin_unlock(&ito__rt.spare_lock);
    if (spares > 0 || atomic_load_explicit(&ito__rt.nactivations, memory_order_relaxed) >= ito__rt.max_activations)
        return;
    int e = ito__activation_start_spare();
    if (e && !cap_warned) {
        cap_warned = true;
        ito__warn("cannot start a spare activation (%s); blocked calls keep their vproc", strerror(e));
    }
}

/* A parked spare, or NULL: one is being started (provision), or the cap
 * is reached (said once). */
static struct ito__activation *spare(void)
{
    struct ito__activation *s = ito__spare_take();
    if (!s && atomic_load_explicit(&ito__rt.nactivations, memory_order_relaxed) >= ito__rt.max_activations &&
        !cap_warned) {
        cap_warned = true;
        ito__warn("ITO_MAX_ACTIVATIONS (%d) reached: threads blocked in the kernel now keep their "
                  "vproc until their call returns; raise ITO_MAX_ACTIVATIONS to allow more",
                  ito__rt.max_activations);
    }
    return s;
}

/* vp's carrier is in a blocking call (mark): give vp to a spare. */
static bool hand_off(struct ito__vproc *vp, uintptr_t mark)
{
    struct ito__activation *s = spare();
    if (!s)
        return false;   /* next scan */
    if (ito__carrier_hand_off(vp, mark, s))
        return true;
    ito__spare_put(s);   /* the call returned meanwhile */
    return false;
}

/* vp's carrier has been asleep for a while outside any bracket: if
 * carrier.c agrees, give vp to a spare. */
static bool take_stalled(struct ito__vproc *vp, struct ito__activation *carrier)
{
    struct ito__activation *s = spare();
    if (!s)
        return false;
    if (ito__carrier_steal(vp, carrier, s))
        return true;
    ito__spare_put(s);
    return false;
}

/* When the last stall was handed off (0: never). */
static uint64_t last_stall_ns;

static bool stalls_recent(uint64_t now) { return last_stall_ns && now - last_stall_ns < ITO__STALL_RECENT_NS; }

/* Watch vp for a stall; true if it was handed off. *due: when to look again
 * to catch one that may be starting. */
static bool watch_stall(struct ito__vproc *vp, struct watch *w, uintptr_t mark, uint64_t now, uint64_t *due)
{
    struct ito__activation *carrier = ito__ks_carrier(mark);
    uint64_t ticks = atomic_load_explicit(&vp->ticks, memory_order_relaxed), cpu;
    if ((mark & ITO__KS_MASK) != ITO__KS_RUN || !carrier ||
        atomic_load_explicit(&vp->run_state, memory_order_relaxed) != ITO__VP_BUSY ||
        !ito__carrier_cpu_time(carrier, &cpu)) {
        w->still_since = 0;   /* not a candidate */
        w->ran = w->few_picks = w->slow_picks = false;
        w->pick_since = 0;
        return false;
    }
    /* (A first sight proves nothing: the carrier may have slept since.) */
    w->ran = w->still_since && carrier == w->carrier && cpu != w->cpu_ns;
    /* A pick since the last scan: it may have come at any time since then.
     * Taken as then: the look it may bring is what a late timer needs
     * (a vproc that picks often has run its timers by now anyway). */
    if (!w->still_since || carrier != w->carrier)
        w->pick_since = now;
    else if (ticks != w->ticks)
        w->pick_since = w->seen_at;
    w->few_picks = ticks - w->ticks < 32;
    w->slow_picks = w->still_since && (ticks - w->ticks) * ITO__LOOK_IO_NS < 32 * (now - w->seen_at);
    w->seen_at = now;
    if (!w->still_since || carrier != w->carrier || ticks != w->ticks || cpu != w->cpu_ns) {
        /* It picked a thread or ran since the last look (a thread computing
         * through its slice is preempt.c's business): a new window opens
         * now. Where stalls happen, look again when it would be one;
         * elsewhere at the usual pace. */
        w->carrier = carrier;
        w->ticks = ticks;
        w->cpu_ns = cpu;
        w->still_since = now;
        if (stalls_recent(now) && now + ITO__STALL_NS < *due)
            *due = now + ITO__STALL_NS;
        return false;
    }
    uint64_t stall = could_use(vp) ? ITO__STALL_NS : ITO__STALL_PRIVATE_NS;
    if (now - w->still_since < stall) {
        if (w->still_since + stall < *due)
            *due = w->still_since + stall;
        return false;
    }
    if (!take_stalled(vp, carrier))
        return false;
    w->still_since = 0;
    last_stall_ns = now;
    return true;
}

/* --------------------------------------------------------- timers late */

/* Is some vproc idle (spinning or asleep)? Then idle vprocs run the timers
 * of busy ones, and take what the global queue holds (runtime/idle.c). */
static bool some_idle(void)
{
    return atomic_load_explicit(&ito__rt.nspinning, memory_order_relaxed) > 0 ||
           atomic_load_explicit(&ito__rt.nsleeping, memory_order_relaxed) > 0;
}

/* When a timer of a busy vproc will be ITO__LOOK_LATE_NS overdue, or the
 * ring of one is to be looked at for the threads parked there
 * (ITO__LOOK_IO_NS from now: look_late), or UINT64_MAX: neither. (An idle vproc runs the timers of
 * busy ones, but it may get busy the next instant.) */
static uint64_t timers_due(void)
{
    uint64_t due = UINT64_MAX, io = ito__now_ns() + ITO__LOOK_IO_NS;
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        struct ito__vproc *vp = ito__rt.vprocs[i];
        if (atomic_load_explicit(&vp->run_state, memory_order_relaxed) != ITO__VP_BUSY)
            continue;
        uint64_t next = atomic_load_explicit(&vp->timers.next, memory_order_relaxed);
        if (next != UINT64_MAX && next + ITO__LOOK_LATE_NS < due)
            due = next + ITO__LOOK_LATE_NS;
        if (vp->ring && watches[i].few_picks && ito__ring_waiters(vp->ring) && io < due)
            due = io;
    }
    return due;
}

/* When the monitor first saw threads waiting in the global queue while no
 * vproc was idle (0: not now). */
static uint64_t gq_since;

/* Every vproc computes: a timer that fell overdue on one (its vproc looks
 * at its timers only between threads) or threads left in the global queue
 * (woken by kernel threads ito did not create) wait for a slice to end.
 * Ask the vproc concerned — for the global queue, the one that runs the
 * least urgent thread — to look now. Returns when to look again. */
static uint64_t look_late(uint64_t now)
{
    uint64_t due = UINT64_MAX;
    for (int i = 0; i < ito__rt.nvprocs; i++) {
        struct ito__vproc *vp = ito__rt.vprocs[i];
        struct watch *w = &watches[i];
        if (atomic_load_explicit(&vp->run_state, memory_order_relaxed) != ITO__VP_BUSY) {
            w->inbox_since = w->cq_since = 0;
            if (vp->ring && ito__ring_bell_on(vp->ring))
                ito__ring_bell(vp->ring, false);   /* idle: it sleeps on its ring */
            continue;
        }
        /* Only a carrier that ran since the last scan computes: one asleep
         * in the kernel (a stall: watch_stall) would be woken from its call
         * for nothing, or end it with EINTR. */
        bool computing = w->ran;
        uint64_t next = atomic_load_explicit(&vp->timers.next, memory_order_relaxed);
        /* Threads sent to it (a preferred vproc) wait in its inbox. */
        if (!atomic_load_explicit(&vp->inbox, memory_order_relaxed))
            w->inbox_since = 0;
        else if (!w->inbox_since)
            w->inbox_since = now;
        if (w->inbox_since && w->inbox_since < next)
            next = w->inbox_since;
        /* Completions on its ring, for threads parked there: the monitor
         * has no doorbell for them, so while such threads wait on a busy
         * vproc (its thread may compute all along) it looks every
         * ITO__LOOK_IO_NS, and asks it to look once completions have stood
         * unreaped (its CQ head unmoved) ITO__LOOK_LATE_NS: a vproc that
         * switches reaps them itself, and new ones keep coming. */
        struct ito__ring *ring = vp->ring;
        if (!ring || !ito__ring_ready(ring)) {
            w->cq_since = 0;
        } else {
            unsigned head = ito__ring_head(ring);
            if (!w->cq_since || head != w->cq_head)
                w->cq_since = now;   /* waiting since now, as far as the scans tell */
            w->cq_head = head;
        }
        if (ring && w->few_picks && ito__ring_waiters(ring) && now + ITO__LOOK_IO_NS < due)
            due = now + ITO__LOOK_IO_NS;
        /* The bell (upcall/doorbell.c): on while the vproc's thread
         * computes, so that a completion is looked at when it comes, not at
         * the next of these looks — whether or not threads wait on the ring
         * now: one that parks between two scans would find it off. Off
         * once two scans in a row found the carrier had not run (asleep in
         * the kernel: a stall), not one: on a loaded machine the kernel
         * leaves a computing carrier waiting for a CPU now and then. */
        w->still_scans = computing ? 0 : w->still_scans < 2 ? w->still_scans + 1 : 2;
        bool bell = ring && w->slow_picks && w->still_scans < 2;
        if (ring && bell != ito__ring_bell_on(ring))
            ito__ring_bell(ring, bell);
        if (next == UINT64_MAX && !w->cq_since)
            continue;
        /* Its running thread may pick soon and see to it: look once it is
         * ITO__LOOK_LATE_NS overdue — or at once, if that thread has
         * computed that long already without a pick (the watch's window). */
        uint64_t late = next == UINT64_MAX ? UINT64_MAX : next + ITO__LOOK_LATE_NS;
        if (next != UINT64_MAX && w->pick_since && w->pick_since + ITO__LOOK_LATE_NS < late)
            late = w->pick_since + ITO__LOOK_LATE_NS > next ? w->pick_since + ITO__LOOK_LATE_NS : next;
        if (w->cq_since && w->cq_since + ITO__LOOK_LATE_NS < late)
            late = w->cq_since + ITO__LOOK_LATE_NS;
        if (late <= now && computing)
            ito__vproc_look(vp);
        else if (late <= now)
            late = now + ITO__LOOK_LATE_NS;   /* asleep in the kernel, or not given a CPU: look again */
        if (late > now && late < due)
            due = late;
    }
    if (!atomic_load_explicit(&ito__rt.gq_len, memory_order_relaxed) || some_idle()) {
        gq_since = 0;
    } else if (!gq_since) {
        gq_since = now;
    } else if (now - gq_since >= ITO__LOOK_LATE_NS) {
        int least = ito__vproc_least_urgent(0, ito__rt.nvprocs, ITO_PRIO_MAX + 1, computed);
        if (least >= 0)
            ito__vproc_look(ito__rt.vprocs[least]);
        gq_since = now;
    }
    if (gq_since && gq_since + ITO__LOOK_LATE_NS < due)
        due = gq_since + ITO__LOOK_LATE_NS;
    return due;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (ito__libc_nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static void *monitor_main(void *arg)
{
    (void)arg;
    /* Not pinned: it (and the spares it starts) may run on any usable CPU. */
    int cpus[CPU_SETSIZE], n = ito__cpus_usable(cpus, CPU_SETSIZE);
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < n; i++)
        CPU_SET(cpus[i], &set);
    if (n > 0)
        ito__sys_sched_setaffinity(0, sizeof set, &set);
    ncpus_online = n;
    /* Its sleeps are the hand-off latency: no timer slack (default 50 µs). */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    /* And its wake-ups the latency of every look: at the lowest real-time
     * priority where the process may (root, CAP_SYS_NICE, RLIMIT_RTPRIO),
     * so that it runs as soon as it wakes, as an interrupt would, instead of
     * waiting for the kernel to preempt a vproc's kernel thread: with every
     * CPU computing, that took milliseconds (a due timer's p99 on 2 CPUs:
     * 2.9 ms at the normal priority, 0.33 ms at this one). It runs
     * microseconds at a time; the spares it starts do not inherit it
     * (base/kthread.c). ITO_MONITOR_RT=0 leaves it at the process's. */
    if (ito__env_int("ITO_MONITOR_RT", 1, 0, 1, false)) {
        struct sched_param rt = { .sched_priority = 1 };
        ito__sys_sched_setscheduler(0, SCHED_FIFO, &rt);   /* (EPERM: stays as it was) */
    }
    uint64_t delay = ITO__MONITOR_MIN_NS, nap = delay, spin_until = 0;
    provision();
    for (;;) {
        if (spin_until) {
            while (ito__now_ns() < spin_until)
                ito__cpu_relax();
        } else if (nap < ITO__MONITOR_SLOW_NS) {
            sleep_ns(nap);
        } else {
            /* A slow pace, or nothing to watch at all: a blocking call that
             * begins meanwhile wakes the monitor (runtime/carrier.c), and so does,
             * when it sleeps for good, the first vproc to get busy
             * (sched.c). Announce it, then look once more (the Dekker pair
             * of the essay). */
            atomic_store_explicit(&ito__rt.monitor_asleep, ITO__MONITOR_ASLEEP_LONG, memory_order_relaxed);
            /* Any timer armed from now on wakes it (ito__carrier_timer_armed)
             * until it knows how long it sleeps. */
            atomic_store_explicit(&ito__rt.monitor_until, UINT64_MAX, memory_order_relaxed);
            ito__fence_heavy();
            bool watch = false, fresh = false;
            for (int i = 0; i < ito__rt.nvprocs; i++) {
                struct ito__vproc *vp = ito__rt.vprocs[i];
                bool kernel = (atomic_load_explicit(&vp->kstate, memory_order_relaxed) & ITO__KS_MASK) == ITO__KS_KERNEL;
                /* A call that began after the last scan, before the flag. */
                fresh |= kernel && !watches[i].since;
                watch |= kernel || atomic_load_explicit(&vp->run_state, memory_order_relaxed) == ITO__VP_BUSY;
            }
            uint64_t look_due = timers_due();
            uint32_t asleep = ITO__MONITOR_ASLEEP_LONG;
            uint64_t until = 0;
            if (fresh) {
                asleep = 0;   /* no sleep: look at it now */
            } else if (watch || (delay < ITO__MONITOR_MAX_NS && !stalls_recent(ito__now_ns()))) {
                /* A timed sleep: a vproc getting busy need not wake it.
                 * Where stalls happen lately, nothing to watch means
                 * sleeping until the first vproc to get busy wakes it, so
                 * that a stall is watched for from its first instant. */
                asleep = ITO__MONITOR_ASLEEP;
                uint32_t long_sleep = ITO__MONITOR_ASLEEP_LONG;
                atomic_compare_exchange_strong_explicit(&ito__rt.monitor_asleep, &long_sleep, asleep,
                                                        memory_order_relaxed, memory_order_relaxed);
                until = ito__now_ns() + nap;
                if (look_due < until)
                    until = look_due;
            }
            /* Sleeping until woken (every vproc idle: they run the timers,
             * and the first to get busy wakes it), no timer needs it. */
            atomic_store_explicit(&ito__rt.monitor_until, until, memory_order_relaxed);
            while (asleep && atomic_load_explicit(&ito__rt.monitor_asleep, memory_order_relaxed) == asleep)
                if (ito__futex_wait(&ito__rt.monitor_asleep, asleep, until) == ETIMEDOUT)
                    break;
            uint32_t was = atomic_exchange_explicit(&ito__rt.monitor_asleep, 0, memory_order_relaxed);
            atomic_store_explicit(&ito__rt.monitor_until, 0, memory_order_relaxed);
            if (was == 0 || fresh)
                delay = ITO__MONITOR_MIN_NS;   /* woken by a call that began, or a new call */
            else if (was == ITO__MONITOR_WOKEN_BUSY) {
                /* Woken before the vproc picks: look once it has, so that
                 * the watch opens then. */
                sleep_ns(ITO__MONITOR_MIN_NS);
                delay = ITO__MONITOR_BUSY_NS / 2;   /* doubled below */
            }
        }
        spin_until = 0;
        uint64_t now = ito__now_ns();
        bool acted = false, busy = false;
        uint64_t stall_due = UINT64_MAX;
        for (int i = 0; i < ito__rt.nvprocs; i++) {
            struct ito__vproc *vp = ito__rt.vprocs[i];
            struct watch *w = &watches[i];
            /* Acquire pairs with the carrier's release store when it took vp
             * (activation.c): its fields that runtime/carrier.c reads. */
            uintptr_t mark = atomic_load_explicit(&vp->kstate, memory_order_acquire);
            if ((mark & ITO__KS_MASK) != ITO__KS_KERNEL) {
                w->since = 0;
                busy |= atomic_load_explicit(&vp->run_state, memory_order_relaxed) == ITO__VP_BUSY;
                acted |= watch_stall(vp, w, mark, now, &stall_due);
                continue;
            }
            w->ran = w->few_picks = w->slow_picks = false;   /* in a bracketed call */
            w->pick_since = 0;
            uint64_t calls = atomic_load_explicit(&vp->kcalls, memory_order_relaxed);
            if (!w->since || w->kcalls != calls) {
                w->kcalls = calls;
                w->since = now;
            } else if (now - w->since >= ITO__HANDOFF_NS && could_use(vp) && hand_off(vp, mark)) {
                w->since = 0;
                acted = true;
                continue;
            }
            uint64_t due = w->since + ITO__HANDOFF_NS;
            if (due > now && could_use(vp) && cpu_idle() && (!spin_until || due < spin_until))
                spin_until = due;
        }
        uint64_t look_due = look_late(now);
        if (acted)
            provision();
        /* A hand-off: look again soon. Otherwise back off, also while new
         * calls keep coming and going (short ones: scanning at full pace
         * for them would take CPU time from the vprocs); a call that begins
         * once the pace is slow wakes the monitor. */
        delay = acted ? ITO__MONITOR_MIN_NS : delay * 2 > ITO__MONITOR_MAX_NS ? ITO__MONITOR_MAX_NS : delay * 2;
        /* Where stalls have happened lately, a new one is noticed within
         * ITO__MONITOR_BUSY_NS + ITO__STALL_NS; elsewhere within two
         * periods of ITO__MONITOR_MAX_NS (a scan costs a wake-up: tens of
         * microseconds of CPU time on a virtual machine). */
        if (busy && stalls_recent(now) && delay > ITO__MONITOR_BUSY_NS)
            delay = ITO__MONITOR_BUSY_NS;
        if (stall_due != UINT64_MAX) {
            uint64_t d = stall_due > now ? stall_due - now : 0;
            if (d < ITO__MONITOR_MIN_NS)
                d = ITO__MONITOR_MIN_NS;
            if (d < delay)
                delay = d;
        }
        /* This sleep only, not the pace: until a timer falls overdue. */
        nap = delay;
        if (look_due != UINT64_MAX) {
            uint64_t d = look_due > now ? look_due - now : 0;
            if (d < ITO__MONITOR_MIN_NS)
                d = ITO__MONITOR_MIN_NS;
            if (d < nap)
                nap = d;
        }
    }
    return NULL;
}

int ito__monitor_init(void)
{
    long long dflt = ITO__MAX_ACTIVATIONS_DEFAULT;
    if (dflt < 2LL * ito__rt.nvprocs)
        dflt = 2LL * ito__rt.nvprocs;
    ito__rt.max_activations = (int)ito__env_int("ITO_MAX_ACTIVATIONS", dflt, ito__rt.nvprocs, 1000000, false);
    if (!ito__rt.activations)
        return 0;
    free(watches);   /* the child of fork starts a monitor again (api/init.c) */
    watches = calloc((size_t)ito__rt.nvprocs, sizeof *watches);
    if (!watches)
        return ENOMEM;
    return ito__kthread_start("ito-monitor", 64 * 1024, monitor_main, NULL, NULL);
}
