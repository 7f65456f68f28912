/* SPDX-License-Identifier: MIT */
/*
 * Scheduling: yielding, and POSIX scheduling policies and priorities mapped
 * onto ito's priorities (0..ITO_PRIO_MAX, which the prio policies order
 * by; ws, fifo and affinity keep them for ito_get_priority only).
 * SCHED_OTHER, SCHED_BATCH and SCHED_IDLE (priority 0) run at ito's default;
 * SCHED_FIFO and SCHED_RR priorities 1..99 map in order onto the priorities
 * above it. Unlike on kernel threads, no privilege is needed: the priorities
 * order the program's own threads only.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include <ito.h>

#include "posix/posix.h"

static int concurrency;   /* pthread_setconcurrency's hint: ito decides the level itself */

/* ito's priority for a POSIX scheduling policy and priority: the normal
 * policies at ito's default, the real-time ones above it, in order. */
int ito__posix_priority(int policy, int prio)
{
    if (policy != SCHED_FIFO && policy != SCHED_RR)
        return ITO_PRIO_DEFAULT;
    int span = ITO_PRIO_MAX - ITO_PRIO_DEFAULT;   /* 1..99 onto DEFAULT+1..MAX */
    return ITO_PRIO_DEFAULT + 1 + (prio - 1) * (span - 1) / 98;
}

int ito__posix_check_sched(int policy, const struct sched_param *p)
{
    int lo = sched_get_priority_min(policy), hi = sched_get_priority_max(policy);
    if (lo < 0 || hi < 0 || !p || p->sched_priority < lo || p->sched_priority > hi)
        return EINVAL;
    return 0;
}

ITO_POSIX_API int sched_yield(void)
{
    ito_yield();
    ito__posix_signals_check();
    return 0;
}

/* glibc's header redirects pthread_yield to sched_yield; programs built
 * before that still call it by its own name. */
ITO_POSIX_API int ito__pthread_yield(void) __asm__("pthread_yield");
ITO_POSIX_API int ito__pthread_yield(void) { return sched_yield(); }

ITO_POSIX_API int pthread_getconcurrency(void) { return concurrency; }

ITO_POSIX_API int pthread_setconcurrency(int level)
{
    if (level < 0)
        return EINVAL;
    concurrency = level;
    return 0;
}

/* --------------------------------------------------------- scheduling */

ITO_POSIX_API int pthread_getschedparam(pthread_t th, int *policy, struct sched_param *param)
{
    struct ito__pthread *pt = ito__pthread_of(th);
    if (!pt)
        return ESRCH;
    if (!policy || !param)
        return EINVAL;
    *policy = pt->sched_policy;
    param->sched_priority = pt->sched_priority;
    return 0;
}

ITO_POSIX_API int pthread_setschedparam(pthread_t th, int policy, const struct sched_param *param)
{
    struct ito__pthread *pt = ito__pthread_of(th);
    if (!pt)
        return ESRCH;
    if (ito__posix_check_sched(policy, param))
        return EINVAL;
    ito__posix_start();
    int e = ito_set_priority(pt->id, ito__posix_priority(policy, param->sched_priority));
    if (e)
        return e == ESRCH ? ESRCH : EINVAL;
    pt->sched_policy = policy;
    pt->sched_priority = param->sched_priority;
    return 0;
}

ITO_POSIX_API int pthread_setschedprio(pthread_t th, int prio)
{
    struct ito__pthread *pt = ito__pthread_of(th);
    if (!pt)
        return ESRCH;
    struct sched_param p = { .sched_priority = prio };
    return pthread_setschedparam(th, pt->sched_policy, &p);
}
