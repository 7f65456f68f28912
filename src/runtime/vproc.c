/* SPDX-License-Identifier: MIT */
/*
 * Virtual processors: how many, on which CPUs, and their per-vproc state.
 *
 * By default there is one vproc per CPU the process may use: the CPUs in its
 * affinity mask, further limited by a cgroup CPU quota (cgroup v2 cpu.max or
 * v1 cpu.cfs_quota_us / cpu.cfs_period_us; a quota of 2.5 CPUs gives 3
 * vprocs). ITO_VPROCS or ito_config_t.vprocs override the count. vproc i is
 * pinned to the i-th usable CPU (modulo their number).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/libc.h"
#include "base/panic.h"
#include "base/topology.h"
#include "runtime/runtime.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"


/* The cgroup quota in CPUs (rounded up), or 0 if none. */
static int cgroup_quota_cpus(void)
{
    char path[512], line[512];
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return 0;
    int cpus = 0;
    while (fgets(line, sizeof line, f)) {
        /* v2: "0::/path"; v1: "N:cpu,cpuacct:/path" */
        char *p1 = strchr(line, ':'), *p2 = p1 ? strchr(p1 + 1, ':') : NULL;
        if (!p2)
            continue;
        *p2 = 0;
        char *ctrl = p1 + 1, *cg = p2 + 1;
        cg[strcspn(cg, "\n")] = 0;
        long long quota = -1, period = 0;
        if (!*ctrl) {
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpu.max", cg);
            FILE *m = fopen(path, "r");
            if (m) {
                char q[32];
                if (fscanf(m, "%31s %lld", q, &period) == 2 && strcmp(q, "max") != 0)
                    quota = atoll(q);
                fclose(m);
            }
        } else if (strstr(ctrl, "cpu") && !strstr(ctrl, "cpuset")) {
            snprintf(path, sizeof path, "/sys/fs/cgroup/cpu,cpuacct%s/cpu.cfs_quota_us", cg);
            FILE *m = fopen(path, "r");
            if (m) {
                if (fscanf(m, "%lld", &quota) != 1)
                    quota = -1;
                fclose(m);
            }
            snprintf(path, sizeof path, "/sys/fs/cgroup/cpu,cpuacct%s/cpu.cfs_period_us", cg);
            m = fopen(path, "r");
            if (m) {
                if (fscanf(m, "%lld", &period) != 1)
                    period = 0;
                fclose(m);
            }
        }
        if (quota > 0 && period > 0) {
            int c = (int)((quota + period - 1) / period);
            if (!cpus || c < cpus)
                cpus = c;
        }
    }
    fclose(f);
    return cpus;
}

/* The affinity the process had before ito pinned anything: taken at the
 * first call of ito__cpus_usable, during initialization (under its lock),
 * before any activation is pinned; later calls — from pinned kernel
 * threads — see the same. */
static cpu_set_t process_affinity;
static int have_affinity = -1;

void ito__cpus_restore_self(void)
{
    if (have_affinity > 0)
        ito__sys_sched_setaffinity(0, sizeof process_affinity, &process_affinity);
}

static void know_affinity(void)
{
    if (have_affinity < 0)
        have_affinity = ito__sys_sched_getaffinity(0, sizeof process_affinity, &process_affinity) == 0;
}

bool ito__cpus_of_process(cpu_set_t *set)
{
    know_affinity();   /* (at ito's start: read before any is pinned) */
    if (have_affinity > 0)
        *set = process_affinity;
    return have_affinity > 0;
}

int ito__cpus_usable(int *cpus, int max)
{
    know_affinity();
    int n = 0;
    if (have_affinity) {
        for (int c = 0; c < CPU_SETSIZE && n < max; c++)
            if (CPU_ISSET(c, &process_affinity))
                cpus[n++] = c;
    }
    if (n == 0) {
        cpus[0] = -1;
        return 1;
    }
    int quota = cgroup_quota_cpus();
    if (quota > 0 && quota < n)
        n = quota;
    return n;
}

void ito__pin_thread(pid_t tid, int cpu)
{
    if (cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (ito__sys_sched_setaffinity(tid, sizeof set, &set) != 0)
        ITO_WARN_ONCE("could not pin an activation to CPU %d; running unpinned", cpu);
}

void ito__pin_self(int cpu) { ito__pin_thread(0, cpu); }

/* n vprocs, vproc i pinned to cpu_of[i] (-1: not pinned). */
static int make_vprocs(int n, const int *cpu_of)
{
    ito__rt.vprocs = calloc((size_t)n, sizeof *ito__rt.vprocs);
    ito__rt.pviews = calloc((size_t)n, sizeof *ito__rt.pviews);
    if (!ito__rt.vprocs || !ito__rt.pviews)
        return ENOMEM;
    for (int i = 0; i < n; i++) {
        struct ito__vproc *vp = aligned_alloc(ITO_CACHELINE, sizeof *vp);
        if (!vp)
            return ENOMEM;
        memset(vp, 0, sizeof *vp);
        vp->index = i;
        vp->cpu = cpu_of[i];
        atomic_init(&vp->grant_cpu, vp->cpu);   /* the allocator's agent may move it (cpushare/revoke.c) */
        vp->rng = 0x9e3779b9u * (uint32_t)(i + 1);
        vp->stacks = ito__stack_cache_create();
        vp->seen_ticks = calloc((size_t)n, sizeof *vp->seen_ticks);
        vp->seen_since = calloc((size_t)n, sizeof *vp->seen_since);
        if (!vp->stacks || !vp->seen_ticks || !vp->seen_since)
            return ENOMEM;
        atomic_init(&vp->timers.next, UINT64_MAX);
        vp->timers.spill_min = UINT64_MAX;
        ito__spin_init(&vp->timers.lock, ITO__LOCK_TIMERS);
        ito__spin_init(&vp->held_lk, ITO__LOCK_HELD_QUEUE);
        ito__rt.vprocs[i] = vp;
        ito__rt.pviews[i] = &vp->pv;
    }
    for (int i = 0; i < n; i++) {
        ito_policy_vproc_t *pv = &ito__rt.vprocs[i]->pv;
        pv->index = i;
        pv->count = n;
        pv->all = (ito_policy_vproc_t *const *)ito__rt.pviews;
    }
    return 0;
}

int ito__vprocs_create(int n, bool pin)
{
    int cpus[CPU_SETSIZE], cpu_of[ITO__VPROCS_MAX];
    int ncpus = ito__cpus_usable(cpus, CPU_SETSIZE);
    ito__rt.oversubscribed = n > ncpus;
    for (int i = 0; i < n; i++)
        cpu_of[i] = pin ? cpus[i % ncpus] : -1;
    return make_vprocs(n, cpu_of);
}

int ito__vprocs_recreate(struct ito__vproc *const *old, int n)
{
    int cpu_of[ITO__VPROCS_MAX];
    for (int i = 0; i < n; i++)
        cpu_of[i] = old[i]->cpu;
    return make_vprocs(n, cpu_of);
}
