/* SPDX-License-Identifier: MIT */
/*
 * pthread_once on a pthread_once_t (an int, PTHREAD_ONCE_INIT = 0): too small
 * for ito's once object, so the word holds the state — 0 not run, 1 running,
 * 3 running with waiters (both with the fork epoch above), 2 done (glibc's
 * value for done, too) — and the rare
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
#include <stdbool.h>

#include <ito.h>

#include "posix/posix.h"
#include "runtime/thread.h"

enum { ONCE_NEW = 0, ONCE_DONE = 2 };

/* Running (1) and running with waiters (3) carry the fork epoch they were
 * set in, in the bits above (runtime/fork.c): in the child of a fork, a
 * once that a thread of the parent's was running is not run by anyone, and
 * is taken as new, as glibc does. */
static int running(void) { return (int)((ito__fork_epoch & 0x1fffffffu) << 2 | 1u); }
static int waited(void) { return (int)((ito__fork_epoch & 0x1fffffffu) << 2 | 3u); }
static bool is_new(int s) { return s == ONCE_NEW || (s != ONCE_DONE && (s | 2) != waited()); }

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
    for (;;) {
        int s = atomic_load_explicit(w, memory_order_acquire);
        if (s == ONCE_DONE)
            return 0;
        if (is_new(s)) {
            if (!atomic_compare_exchange_strong_explicit(w, &s, running(), memory_order_acquire,
                                                         memory_order_acquire))
                continue;   /* another caller took it, or it changed: look again */
            fn();
            if (atomic_exchange_explicit(w, ONCE_DONE, memory_order_acq_rel) == waited()) {
                ito_mutex_lock(&waiting_lock);
                ito_cond_broadcast(&waiting);
                ito_mutex_unlock(&waiting_lock);
            }
            return 0;
        }
        ito_mutex_lock(&waiting_lock);
        for (;;) {
            s = atomic_load_explicit(w, memory_order_acquire);
            if (s == ONCE_DONE || is_new(s))
                break;
            if (s == running() &&
                !atomic_compare_exchange_strong_explicit(w, &s, waited(), memory_order_acquire, memory_order_acquire))
                continue;   /* done meanwhile (or marked by another waiter): look again */
            ito_cond_wait(&waiting, &waiting_lock);
        }
        ito_mutex_unlock(&waiting_lock);
    }
}
