/* SPDX-License-Identifier: MIT */
/*
 * pthread_once on a pthread_once_t (an int, PTHREAD_ONCE_INIT = 0): too small
 * for ito's once object, so the word holds the state — 0 not run, 1 running,
 * 2 done — and the rare callers that find it running wait on one condition
 * shared by all once objects. The runner publishes 2 with a release store
 * (pairs with the acquire load of every later caller) before it takes the
 * shared mutex to broadcast, and waiters look at the word under that mutex,
 * so none misses the broadcast.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include <ito.h>

#include "posix/posix.h"

enum { ONCE_NEW = 0, ONCE_RUNNING = 1, ONCE_DONE = 2 };

static ito_mutex_t waiting_lock = ITO_MUTEX_INIT;
static ito_cond_t waiting = ITO_COND_INIT;

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
        atomic_store_explicit(w, ONCE_DONE, memory_order_release);
        ito_mutex_lock(&waiting_lock);
        ito_cond_broadcast(&waiting);
        ito_mutex_unlock(&waiting_lock);
        return 0;
    }
    ito_mutex_lock(&waiting_lock);
    while (atomic_load_explicit(w, memory_order_acquire) != ONCE_DONE)
        ito_cond_wait(&waiting, &waiting_lock);
    ito_mutex_unlock(&waiting_lock);
    return 0;
}
