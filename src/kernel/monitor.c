/*
 * The monitor: no processor lost to a blocked kernel call.
 *
 * Problem. Linux does not tell a process that one of its kernel threads has
 * blocked (seed 000's "blocked" upcall). A vproc whose carrier sits in a slow
 * system call runs nothing, however many threads are ready.
 *
 * Approach (Go's sysmon and retake, with seed 000's vocabulary). Threads
 * bracket calls that may block (ito_blocking_begin/end, blocking.c), which
 * mark the vproc's kstate with plain stores. A monitor kernel thread scans
 * the vprocs: a vproc seen in the same blocking call (same kcalls) at two
 * scans at least ITO_HANDOFF_NS apart, while threads could use it, is taken
 * with a CAS on kstate (old carrier | KERNEL -> spare | RUN) and given to a
 * spare activation, which carries it on from its scheduler loop. Spares are
 * parked kernel threads; the monitor keeps one ready in advance so that a
 * hand-off does not wait for pthread_create, and never lets the total exceed
 * ITO_MAX_ACTIVATIONS: at the cap a blocked carrier keeps its vproc (with a
 * one-time warning).
 *
 * "Could use it": its inbox, the global queue or its timers hold work, or no
 * other vproc is idle (then nobody would steal the work queued on it). When
 * another vproc idles, it takes that work itself; the monitor looks again.
 *
 * Pace. The monitor scans every ITO_MONITOR_MIN_NS after a hand-off or a
 * wake-up, and backs off by doubling to ITO_MONITOR_MAX_NS while it hands
 * nothing off, also while short calls keep coming and going (scanning at
 * full pace for them would take CPU time from the vprocs). From
 * ITO_MONITOR_SLOW_NS on it sleeps on a futex that a beginning call wakes, so
 * a call after a quiet spell is seen at once; at the longest period with
 * nothing in the kernel it sleeps until woken. Measured with 2 vprocs making
 * three million short bracketed calls a second: about 1,000 futex wake-ups
 * and 900 membarriers a second, and no measurable loss of throughput
 * against ITO_ACTIVATIONS=0.
 * Going to sleep is a Dekker pair with ito_blocking_begin: the monitor stores
 * monitor_asleep, runs the heavy fence and scans once more; begin stores
 * kstate, runs the light fence and loads monitor_asleep (sched.h:
 * ito__fence_light/heavy). When a hand-off falls due within a period while
 * threads wait and a CPU is idle, it spins up to it: a sleep of 20 µs takes
 * about 46 µs here (timer and wake-up latency), which would double the
 * hand-off time.
 *
 * Rejected: a timestamp in ito_blocking_begin (a clock read on every call);
 * a spare per blocking call (a thread switch for calls that return at once).
 */
#include "kernel/monitor.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/env.h"
#include "base/futex.h"
#include "base/panic.h"
#include "core/runtime.h"
#include "core/sched.h"
#include "core/vproc.h"

/* Fastest scan period, and the slowest (Go's sysmon: 20 µs to 10 ms). */
#define ITO_MONITOR_MIN_NS 20000u
#define ITO_MONITOR_MAX_NS 10000000u
/* From this period on, the monitor sleeps where a beginning call can wake it:
 * faster than that, a wake-up per call would cost more than the scans. */
#define ITO_MONITOR_SLOW_NS 500000u
/* A blocking call is handed off once seen this long (Go's retake: one sysmon
 * tick, 20 µs at the fastest). */
#define ITO_HANDOFF_NS 20000u
/* Default cap on activations (carriers, spares and blocked ones together). */
#define ITO_MAX_ACTIVATIONS_DEFAULT 1024

struct watch {
    uint64_t kcalls;     /* the call seen */
    uint64_t since;      /* when it was first seen (0: none) */
};

static struct watch *watches;   /* [nvprocs], monitor only */
static int ncpus_online;
static bool cap_warned;

void ito__monitor_wake(void)
{
    uint32_t one = 1;
    if (atomic_compare_exchange_strong_explicit(&ito__rt.monitor_asleep, &one, 0, memory_order_relaxed,
                                                memory_order_relaxed))
        ito__futex_wake(&ito__rt.monitor_asleep, 1);
}

static bool could_use(struct ito__vproc *vp)
{
    return atomic_load_explicit(&vp->inbox, memory_order_relaxed) ||
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

/* vp's carrier is in a blocking call (mark): give vp to a spare. */
static bool hand_off(struct ito__vproc *vp, uintptr_t mark)
{
    struct ito__activation *s = ito__spare_take();
    if (!s) {
        if (atomic_load_explicit(&ito__rt.nactivations, memory_order_relaxed) >= ito__rt.max_activations &&
            !cap_warned) {
            cap_warned = true;
            ito__warn("ITO_MAX_ACTIVATIONS (%d) reached: threads blocked in the kernel now keep their "
                      "vproc until their call returns; raise ITO_MAX_ACTIVATIONS to allow more",
                      ito__rt.max_activations);
        }
        return false;   /* one is being started (provision); next scan */
    }
    /* The thread in the call, for the BLOCKED event: read before the CAS
     * (after it, the carrier may already be clearing it). If the call ends
     * meanwhile the CAS fails and this is discarded; descriptors are
     * type-stable, so reading a stale one is harmless. */
    uint64_t blocked_id = 0;
    struct ito__thread *t =
        atomic_load_explicit(&((struct ito__activation *)(mark & ~(uintptr_t)ITO_KS_MASK))->blocked,
                             memory_order_relaxed);
    if (t)
        blocked_id = ito__thread_id(t, atomic_load_explicit(&t->ctl, memory_order_relaxed));
    /* Acquire: what the carrier wrote to vp before its release store of the
     * mark (blocking.c) is visible here, and to the spare through park. The
     * spare is the carrier from now on: the old one's CAS will fail. */
    if (!atomic_compare_exchange_strong_explicit(&vp->kstate, &mark, (uintptr_t)s | ITO_KS_RUN,
                                                 memory_order_acquire, memory_order_relaxed)) {
        ito__spare_put(s);   /* the call returned meanwhile */
        return false;
    }
    vp->act = s;
    vp->current = NULL;   /* the spare starts in its scheduler context */
    s->vp = vp;
    s->handoff_thread = blocked_id;   /* the spare reports the event (activation.c) */
    /* Release pairs with the spare's acquire load in ito__activation_park. */
    atomic_store_explicit(&s->park, 1, memory_order_release);
    ito__futex_wake(&s->park, 1);
    return true;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
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
        sched_setaffinity(0, sizeof set, &set);
    ncpus_online = n;
    /* Its sleeps are the hand-off latency: no timer slack (default 50 µs). */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    uint64_t delay = ITO_MONITOR_MIN_NS, spin_until = 0;
    provision();
    for (;;) {
        if (spin_until) {
            while (ito__now_ns() < spin_until)
                ito__cpu_relax();
        } else if (delay < ITO_MONITOR_SLOW_NS) {
            sleep_ns(delay);
        } else {
            /* A slow pace, or nothing to watch at all: a blocking call that
             * begins meanwhile wakes the monitor (blocking.c). Announce it,
             * then look once more (the Dekker pair of the essay). */
            atomic_store_explicit(&ito__rt.monitor_asleep, 1, memory_order_relaxed);
            ito__fence_heavy();
            bool any = false;
            for (int i = 0; i < ito__rt.nvprocs && !any; i++)
                any = (atomic_load_explicit(&ito__rt.vprocs[i]->kstate, memory_order_relaxed) & ITO_KS_MASK) ==
                      ITO_KS_KERNEL;
            uint64_t until = delay >= ITO_MONITOR_MAX_NS && !any ? 0 : ito__now_ns() + delay;
            while (!any && atomic_load_explicit(&ito__rt.monitor_asleep, memory_order_relaxed))
                if (ito__futex_wait(&ito__rt.monitor_asleep, 1, until) == ETIMEDOUT)
                    break;
            if (atomic_exchange_explicit(&ito__rt.monitor_asleep, 0, memory_order_relaxed) == 0)
                delay = ITO_MONITOR_MIN_NS;   /* woken by a call that just began */
        }
        spin_until = 0;
        uint64_t now = ito__now_ns();
        bool acted = false;
        for (int i = 0; i < ito__rt.nvprocs; i++) {
            struct ito__vproc *vp = ito__rt.vprocs[i];
            struct watch *w = &watches[i];
            uintptr_t mark = atomic_load_explicit(&vp->kstate, memory_order_relaxed);
            if ((mark & ITO_KS_MASK) != ITO_KS_KERNEL) {
                w->since = 0;
                continue;
            }
            uint64_t calls = atomic_load_explicit(&vp->kcalls, memory_order_relaxed);
            if (!w->since || w->kcalls != calls) {
                w->kcalls = calls;
                w->since = now;
            } else if (now - w->since >= ITO_HANDOFF_NS && could_use(vp) && hand_off(vp, mark)) {
                w->since = 0;
                acted = true;
                continue;
            }
            uint64_t due = w->since + ITO_HANDOFF_NS;
            if (due > now && could_use(vp) && cpu_idle() && (!spin_until || due < spin_until))
                spin_until = due;
        }
        if (acted)
            provision();
        /* A hand-off: look again soon. Otherwise back off, also while new
         * calls keep coming and going (short ones: scanning at full pace
         * for them would take CPU time from the vprocs); a call that begins
         * once the pace is slow wakes the monitor. */
        delay = acted ? ITO_MONITOR_MIN_NS : delay * 2 > ITO_MONITOR_MAX_NS ? ITO_MONITOR_MAX_NS : delay * 2;
    }
    return NULL;
}

int ito__monitor_init(void)
{
    ito__rt.activations = ito__env_int("ITO_ACTIVATIONS", 1, 0, 1, false) != 0;
    long long dflt = ITO_MAX_ACTIVATIONS_DEFAULT;
    if (dflt < 2LL * ito__rt.nvprocs)
        dflt = 2LL * ito__rt.nvprocs;
    ito__rt.max_activations = (int)ito__env_int("ITO_MAX_ACTIVATIONS", dflt, ito__rt.nvprocs, 1000000, false);
    if (!ito__rt.activations)
        return 0;
    watches = calloc((size_t)ito__rt.nvprocs, sizeof *watches);
    if (!watches)
        return ENOMEM;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int e = pthread_create(&t, &attr, monitor_main, NULL);
    pthread_attr_destroy(&attr);
    if (!e)
        pthread_setname_np(t, "ito-monitor");
    return e;
}
