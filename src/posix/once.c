/* SPDX-License-Identifier: MIT */
/*
 * pthread_once on a pthread_once_t (an int, PTHREAD_ONCE_INIT = 0): too small
 * for ito's once object, so the word holds the state — 0 not run, 1 running,
 * 3 running with waiters, 2 done (glibc's value for done, too) — and the rare
 * callers that find it running wait on one condition shared by all once
 * objects. A waiter marks the word (1 -> 3) before it waits, under the
 * shared mutex; the runner swaps in 2 (acq_rel: releases what the routine
 * did to every later caller's acquire load) and, only if it finds 3, takes
 * the mutex to broadcast: a waiter looks at the word under that mutex, so
 * none misses the broadcast. An uncontended once touches nothing of ito's
 * but the word: libraries that ito itself uses while it starts (hwloc,
 * libudev) call pthread_once then, and an ito mutex there would start ito
 * again from inside its own start.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include <ito.h>

#include "posix/posix.h"

enum { ONCE_NEW = 0, ONCE_RUNNING = 1, ONCE_DONE = 2, ONCE_WAITED = 3 };

static ito_mutex_t waiting_lock = ITO_MUTEX_INIT;
static ito_cond_t waiting = ITO_COND_INIT;

void ito__posix_once_forked(void)
{
    /* Waiters of the parent's, and a lock one may have held. */
    ito_mutex_init(&waiting_lock);
    ito_cond_init(&waiting);
}

ITO_POSIX_API int pthread_once(pthread_once_t *once, void (*fn)(void))
{
    if (!once || !fn)
        return EINVAL;
    ito__posix_ensure();   /* before the waiting lock can start ito by itself */
    _Atomic int *w = (_Atomic int *)once;
    int s = atomic_load_explicit(w, memory_order_acquire);
    if (s == ONCE_DONE)
        return 0;
    if (s == ONCE_NEW && atomic_compare_exchange_strong_explicit(w, &s, ONCE_RUNNING, memory_order_acquire,
                                                                 memory_order_acquire)) {
        fn();
        if (atomic_exchange_explicit(w, ONCE_DONE, memory_order_acq_rel) == ONCE_WAITED) {
            ito_mutex_lock(&waiting_lock);
            ito_cond_broadcast(&waiting);
            ito_mutex_unlock(&waiting_lock);
        }
        return 0;
    }
    ito_mutex_lock(&waiting_lock);
    for (;;) {
        s = atomic_load_explicit(w, memory_order_acquire);
        if (s == ONCE_DONE)
            break;
        if (s == ONCE_RUNNING &&
            !atomic_compare_exchange_strong_explicit(w, &s, ONCE_WAITED, memory_order_acquire, memory_order_acquire))
            continue;   /* done meanwhile (or marked by another waiter): look again */
        ito_cond_wait(&waiting, &waiting_lock);
    }
    ito_mutex_unlock(&waiting_lock);
    return 0;
}
