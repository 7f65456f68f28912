/* SPDX-License-Identifier: MIT */
/*
 * What the POSIX face does not do yet, said loudly.
 *
 * Moving one thread to a set of CPUs has a meaning on ito threads that
 * needs work of its own (a policy that keeps a thread on the vprocs of those
 * CPUs). The C library's version would act on the kernel thread that
 * happens to carry the caller — silently wrong — so it fails with ENOSYS
 * and says so once on stderr (ITO__POSIX_UNSUPPORTED, posix.h). What needs
 * no work is done: a thread's CPU set is the process's. On a kernel thread
 * of the C library's own (ito's dependencies call some of these while ito
 * starts) each is the C library's.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>

#include "base/libc.h"
#include "posix/posix.h"
#include "runtime/vproc.h"

ITO_POSIX_API int pthread_getaffinity_np(pthread_t th, size_t size, cpu_set_t *set)
{
    if (!ito__pthread_ours(th))
        return ITO__POSIX_LIBC(pthread_getaffinity_np, "GLIBC_2.3.4")(th, size, set);
    /* An ito thread may run on any of the process's CPUs. */
    return sched_getaffinity(0, size, set) == 0 ? 0 : errno;
}

ITO_POSIX_API int pthread_setaffinity_np(pthread_t th, size_t size, const cpu_set_t *set)
{
    if (!ito__pthread_ours(th))
        return ITO__POSIX_LIBC(pthread_setaffinity_np, "GLIBC_2.3.4")(th, size, set);
    return ITO__POSIX_UNSUPPORTED("pthread_setaffinity_np", "an ito thread cannot be bound to CPUs yet");
}
