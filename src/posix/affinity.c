/* SPDX-License-Identifier: MIT */
/*
 * CPU affinity of POSIX threads on ito.
 *
 * An ito thread runs on whichever vproc the policy gives it, and each
 * vproc's carrier is pinned to one CPU: the kernel's affinity of the carrier
 * says nothing about the thread (it would report one CPU), and changing it
 * would move a vproc. So the calls that name a thread's CPUs are ito's:
 * pthread_setaffinity_np and pthread_getaffinity_np on an ito thread,
 * sched_setaffinity and sched_getaffinity on the caller (0, or its kernel
 * thread's ID) and on the initial thread (the process's ID), the affinity
 * that pthread_getattr_np reports, and the affinity attribute of
 * pthread_create. A new thread starts with its attribute's set, or else its
 * creator's, as Linux gives a new thread its creator's affinity.
 *
 * A thread's set is kept within the CPUs the process could use when ito
 * started, and reported so (the kernel reports a task's set within the CPUs
 * online). The scheduler holds the thread to vprocs pinned to CPUs of its
 * set (runtime/affinity.c); while none of those has a processor (ITO_VPROCS
 * made none there, or the allocator took them) it runs on others, said once
 * (runtime/affinity.c). A set with every CPU of the process is no
 * restriction. Without pinned vprocs (ITO_PIN=0) a restriction cannot be
 * kept: ENOSYS, said once.
 *
 * Errors are the kernel's: EINVAL for a set with none of the process's CPUs
 * and (get) for a buffer smaller than the kernel's set or not a multiple of
 * a long, EFAULT for a NULL set, ESRCH for a thread that is gone. On a
 * kernel thread of the C library's own, each call is the C library's; the
 * ID of another of ito's kernel threads (a gettid() from some other thread)
 * names no thread: ENOSYS, said once.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/libc.h"
#include "posix/posix.h"
#include "runtime/affinity.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

_Static_assert(CPU_SETSIZE == ITO__CPUS_MAX, "a cpu_set_t holds the CPUs a thread's set may name");

static void process_cpus(cpu_set_t *p)
{
    if (!ito__cpus_of_process(p)) {
        CPU_ZERO(p);
        long n = sysconf(_SC_NPROCESSORS_CONF);
        for (long c = 0; c < n && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, p);
    }
}

/* The CPUs of set (size bytes) that the process may use, into *out; their
 * number. *all: every CPU of the process. */
static int within_process(const cpu_set_t *set, size_t size, cpu_set_t *out, bool *all)
{
    cpu_set_t p;
    process_cpus(&p);
    CPU_ZERO(out);
    size_t bits = size * 8 < CPU_SETSIZE ? size * 8 : CPU_SETSIZE;
    for (size_t c = 0; c < bits; c++)
        if (CPU_ISSET_S(c, size, set) && CPU_ISSET(c, &p))
            CPU_SET(c, out);
    *all = CPU_EQUAL(out, &p);
    return CPU_COUNT(out);
}

/* s into pt's buffer that is not `in_use`, which it returns (under the ito
 * thread's lock, or before the thread exists): a vproc that reads the set
 * in use meanwhile never sees one half written. */
static const struct ito__cpus *store(struct ito__pthread *pt, const struct ito__cpus *in_use, const cpu_set_t *s)
{
    struct ito__cpus *buf = &pt->cpus[in_use == &pt->cpus[0]];
    for (int i = 0; i < ITO__CPUS_MAX / 64; i++) {
        uint64_t w = 0;
        for (int b = 0; b < 64; b++)
            if (CPU_ISSET(i * 64 + b, s))
                w |= (uint64_t)1 << b;
        atomic_store_explicit(&buf->w[i], w, memory_order_relaxed);
    }
    return buf;
}

static int set_cpus(struct ito__pthread *pt, size_t size, const cpu_set_t *set, const char *what)
{
    if (!set)
        return EFAULT;
    cpu_set_t eff;
    bool all;
    if (within_process(set, size, &eff, &all) == 0)
        return EINVAL;
    if (!all && !ito__affinity_supported())
        return ITO__POSIX_UNSUPPORTED(what, "ito's vprocs are not pinned to CPUs (ITO_PIN=0), so no "
                                            "thread can be held to some");
    struct ito__thread *t = ito__thread_lock_handle(pt->id);
    if (!t)
        return ESRCH;
    ito__thread_set_cpus(t, all ? NULL : store(pt, ito__thread_cpus(t), &eff));   /* (release: the words) */
    ito__spin_unlock(&t->lk);
    ito__affinity_kick(t);
    if (pt == ito__pthread_self())
        ito__affinity_move_self();   /* at once, not at its next switch */
    return 0;
}

static int get_cpus(struct ito__pthread *pt, size_t size, cpu_set_t *set)
{
    if (!set)
        return EFAULT;
    /* The kernel's checks of the buffer (its size), on the carrier. */
    if (ito__sys_sched_getaffinity(0, size, set) != 0)
        return errno;
    cpu_set_t m;
    process_cpus(&m);
    struct ito__thread *t = ito__thread_lock_handle(pt->id);
    if (!t)
        return ESRCH;
    const struct ito__cpus *now = ito__thread_cpus(t);
    if (now)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (!ito__cpus_has(now, c))
                CPU_CLR(c, &m);
    ito__spin_unlock(&t->lk);
    memset(set, 0, size);
    size_t bits = size * 8 < CPU_SETSIZE ? size * 8 : CPU_SETSIZE;
    for (size_t c = 0; c < bits; c++)
        if (CPU_ISSET(c, &m))
            CPU_SET_S(c, size, set);
    return 0;
}

int ito__posix_affinity_at_create(struct ito__pthread *pt, const pthread_attr_t *attr,
                                  const struct ito__cpus **cpus)
{
    *cpus = NULL;
    cpu_set_t set, eff;
    /* An attribute without a set reads as every bit set (glibc); a set of
     * every CPU there can be is no restriction either way, so both mean:
     * the creator's. */
    bool given = attr && pthread_attr_getaffinity_np(attr, sizeof set, &set) == 0 && CPU_COUNT(&set) != CPU_SETSIZE;
    if (given) {
        bool all;
        if (within_process(&set, sizeof set, &eff, &all) == 0)
            return EINVAL;
        if (all)
            return 0;
        if (!ito__affinity_supported())
            return ITO__POSIX_UNSUPPORTED("pthread_attr_setaffinity_np", "ito's vprocs are not pinned to "
                                          "CPUs (ITO_PIN=0), so no thread can be held to some");
        *cpus = store(pt, NULL, &eff);
        return 0;
    }
    struct ito__pthread *self = ito__pthread_self();
    struct ito__thread *me = ito__thread_self();
    if (!self || !me || !ito__thread_cpus(me))
        return 0;   /* (the common case: no lock taken) */
    struct ito__thread *t = ito__thread_lock_handle(self->id);
    if (t) {
        const struct ito__cpus *mine = ito__thread_cpus(t);
        if (mine) {
            struct ito__cpus *buf = &pt->cpus[0];
            for (int i = 0; i < ITO__CPUS_MAX / 64; i++)
                atomic_store_explicit(&buf->w[i], atomic_load_explicit(&mine->w[i], memory_order_relaxed),
                                      memory_order_relaxed);
            *cpus = buf;
        }
        ito__spin_unlock(&t->lk);
    }
    return 0;
}

/* ------------------------------------------------------------ the calls */

ITO_POSIX_API int pthread_setaffinity_np(pthread_t th, size_t size, const cpu_set_t *set)
{
    if (!ito__pthread_ours(th))
        return ITO__POSIX_LIBC(pthread_setaffinity_np, "GLIBC_2.3.4")(th, size, set);
    return set_cpus(ito__pthread_of(th), size, set, "pthread_setaffinity_np");
}

ITO_POSIX_API int pthread_getaffinity_np(pthread_t th, size_t size, cpu_set_t *set)
{
    if (!ito__pthread_ours(th))
        return ITO__POSIX_LIBC(pthread_getaffinity_np, "GLIBC_2.3.4")(th, size, set);
    return get_cpus(ito__pthread_of(th), size, set);
}

/* What a process or thread ID names: the caller for 0 or its kernel
 * thread's ID, the initial thread for the process's ID (once ito has adopted
 * it), NULL for a kernel thread ito did not create (the kernel's business).
 * Another of ito's kernel threads names no thread (what runs on it changes
 * at every switch: an ID from gettid() goes stale): *refused. */
static struct ito__pthread *named(pid_t pid, bool *refused)
{
    *refused = false;
    if (!__atomic_load_n(&ito__posix_started, __ATOMIC_ACQUIRE))
        return NULL;
    if (pid == getpid())
        return ito__pthread_main();
    struct ito__pthread *self = ito__pthread_self();
    bool ito_thread = self && ito__thread_self();
    if (pid == 0 || (ito_thread && pid == (pid_t)syscall(SYS_gettid)))
        return ito_thread ? self : NULL;
    *refused = ito__activation_tid_known(pid);
    return NULL;
}

static int refuse(const char *what)
{
    errno = ITO__POSIX_UNSUPPORTED(what, "the ID names one of ito's kernel threads, which carry ito threads by "
                                         "turns (an ID from gettid() names no ito thread for long); name the "
                                         "thread with pthread_setaffinity_np or pthread_getaffinity_np");
    return -1;
}

ITO_POSIX_API int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
    bool refused;
    struct ito__pthread *pt = named(pid, &refused);
    if (refused)
        return refuse("sched_setaffinity");
    if (!pt)
        return ITO__POSIX_LIBC(sched_setaffinity, "GLIBC_2.3.4")(pid, size, set);
    int e = set_cpus(pt, size, set, "sched_setaffinity");
    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}

ITO_POSIX_API int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
    bool refused;
    struct ito__pthread *pt = named(pid, &refused);
    if (refused)
        return refuse("sched_getaffinity");
    if (!pt)
        return ITO__POSIX_LIBC(sched_getaffinity, "GLIBC_2.3.4")(pid, size, set);
    int e = get_cpus(pt, size, set);
    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}

/* For pthread_getattr_np: th's set into attr. */
int ito__posix_affinity_attr(pthread_t th, pthread_attr_t *attr)
{
    cpu_set_t set;
    int e = get_cpus(ito__pthread_of(th), sizeof set, &set);
    if (e == ESRCH)
        return 0;   /* ended (its descriptor is gone): what it had does not matter */
    return e ? e : pthread_attr_setaffinity_np(attr, sizeof set, &set);
}
