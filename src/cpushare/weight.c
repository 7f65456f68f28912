/* SPDX-License-Identifier: MIT */
/*
 * The weight of a shared floor processor.
 *
 * Problem. The division (divide.c) gives every process at least one
 * processor, shared if need be. When a process of higher priority wants
 * every processor, the lower one's single vproc shares one of them, and the
 * kernel time-shares the two carriers equally: the higher process loses half
 * a processor, and a parallel program loses more, since its other threads
 * wait at their next barrier for the one that shares (bench/procprio: twice
 * as slow on 2 CPUs). Priorities would not mean what they say.
 *
 * Approach. That one vproc's carrier runs as SCHED_IDLE while it shares the
 * processor with a higher priority (weight 3 against 1024: about 0.3 % of
 * the processor when the other wants it all, the whole of it when the other
 * sleeps). The lower process keeps its vproc, its hints and its progress;
 * the higher keeps its processors. The agent decides (agent.c: the
 * processors of its grant that a higher priority holds too, from the
 * table) and calls ito__weight_follow after every grant and at every wake:
 * a carrier that took the vproc over meanwhile (a hand-off) is weakened
 * then, and one that no longer carries it is given its weight back.
 *
 * Limit. Linux lets a thread leave SCHED_IDLE only with CAP_SYS_NICE or an
 * RLIMIT_NICE of 20 or more (`ulimit -e 20`, limits.conf's "nice"); a
 * carrier made SCHED_IDLE without that could never carry a normal vproc
 * again. Such a process leaves the weights alone, and its floor processor is
 * time-shared at full weight (docs/guide.md says so).
 *
 * A thread a weakened carrier creates inherits SCHED_IDLE: ito creates its
 * own kernel threads from threads it never weakens (the monitor, init), and
 * a fork's child gets its policy back (runtime/fork.c); a pthread the
 * application creates from an ito thread there does inherit it.
 */
#include "cpushare/weight.h"

#include <linux/capability.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/runtime.h"

bool ito__weight_reversible(void)
{
    static int known = -1;   /* the agent thread only, or init */
    if (known >= 0)
        return known;
    struct rlimit rl;
    bool ok = getrlimit(RLIMIT_NICE, &rl) == 0 && (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= 20);
    if (!ok) {
        struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
        struct __user_cap_data_struct d[2];
        memset(d, 0, sizeof d);
        ok = syscall(SYS_capget, &h, d) == 0 && (d[CAP_SYS_NICE / 32].effective & (1u << (CAP_SYS_NICE % 32)));
    }
    known = ok;
    return ok;
}

/* The kernel threads made SCHED_IDLE, with the policy each had before.
 * Written by the agent thread only; a fork's child reads its copy
 * (ito__weight_forked), hence the atomics (relaxed: the child needs only
 * untorn values). */
static struct weakened {
    _Atomic pid_t tid;
    _Atomic int policy;
} weak[ITO__VPROCS_MAX];
static _Atomic int nweak;

static bool listed(pid_t tid, const pid_t *tids, int n)
{
    for (int i = 0; i < n; i++)
        if (tids[i] == tid)
            return true;
    return false;
}

static void set_policy(pid_t tid, int policy)
{
    struct sched_param p = { .sched_priority = 0 };
    /* The nice value stays. Fails only if the thread has exited. */
    sched_setscheduler(tid, policy, &p);
}

static pid_t tid_at(int i) { return atomic_load_explicit(&weak[i].tid, memory_order_relaxed); }

static int policy_at(int i) { return atomic_load_explicit(&weak[i].policy, memory_order_relaxed); }

/* Where tid is among the first m weakened, or -1. */
static int weakened(pid_t tid, int m)
{
    for (int i = 0; i < m; i++)
        if (tid_at(i) == tid)
            return i;
    return -1;
}

static void put(int i, pid_t tid, int policy)
{
    atomic_store_explicit(&weak[i].tid, tid, memory_order_relaxed);
    atomic_store_explicit(&weak[i].policy, policy, memory_order_relaxed);
}

void ito__weight_follow(const pid_t *idle, int n)
{
    if (!ito__weight_reversible())
        return;
    int m = atomic_load_explicit(&nweak, memory_order_relaxed);
    /* Give back first: a kernel thread may have moved between vprocs. */
    for (int i = 0; i < m;) {
        if (listed(tid_at(i), idle, n)) {
            i++;
            continue;
        }
        set_policy(tid_at(i), policy_at(i));
        m--;
        put(i, tid_at(m), policy_at(m));
    }
    for (int i = 0; i < n && m < ITO__VPROCS_MAX; i++) {
        if (weakened(idle[i], m) >= 0)
            continue;
        /* Only the time-shared policies: a real-time carrier is the
         * application's choice, and an idle one is already there. */
        int policy = sched_getscheduler(idle[i]);
        if (policy != SCHED_OTHER && policy != SCHED_BATCH)
            continue;
        put(m++, idle[i], policy);
        set_policy(idle[i], SCHED_IDLE);
    }
    atomic_store_explicit(&nweak, m, memory_order_relaxed);
}

void ito__weight_forked(pid_t parent_tid)
{
    int m = atomic_load_explicit(&nweak, memory_order_relaxed);
    int i = weakened(parent_tid, m < ITO__VPROCS_MAX ? m : ITO__VPROCS_MAX);
    if (i >= 0)
        set_policy(0, policy_at(i));
    /* The rest are the parent's kernel threads: never this process's to
     * give back. */
    atomic_store_explicit(&nweak, 0, memory_order_relaxed);
}
