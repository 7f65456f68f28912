/* SPDX-License-Identifier: MIT */
/*
 * The POSIX face in the child of fork().
 *
 * glibc's fork makes the child's C library single-threaded and runs the
 * child handlers; ito's rebuilds the runtime (runtime/fork.c) and, before the
 * child's thread gets its new activation, calls this layer through
 * ito__hooks.posix_forked. What the POSIX face shares between threads and a
 * kernel thread the fork left behind may have held or been changing is reset
 * here: the pool of thread objects, the defaults' lock, pthread_once's
 * waiters, the list of pending cancellation requests and its deliverer (a
 * thread of the parent's), the signal router (a kernel thread of the
 * parent's, with an eventfd shared with it), dlopen's lock; and the child's
 * thread's own exit lock, which a joiner of the parent's may have held.
 *
 * glibc also lists the forking thread's descriptor as its one running
 * thread. With libito-pthread that descriptor is the ito thread's own (the
 * thread pointer moves with the thread: tcb.c), which glibc never made and
 * must not count as a thread's cached stack at the next fork: it is taken
 * out again (ito__tcb_forked).
 *
 * When the child first calls ito its runtime resumes (api/init.c); the
 * router starts again then if masks are in use.
 */
#include "posix/posix.h"
#include "posix/tcb.h"
#include "runtime/hooks.h"

static void forked(void)
{
    ito__posix_threads_forked();
    ito__posix_cancel_forked();
    ito__posix_once_forked();
    ito__posix_sigroute_forked();
    ito__posix_dlopen_forked();
}

static void resumed(void)
{
    if (__atomic_load_n(&ito__posix_masks_used, __ATOMIC_RELAXED))
        ito__posix_sigroute_start();
}

void ito__posix_fork_init(void)
{
    ito__hooks.posix_forked = forked;
    ito__hooks.posix_resumed = resumed;
}
