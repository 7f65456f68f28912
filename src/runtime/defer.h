/* SPDX-License-Identifier: MIT */
/* Work a signal handler leaves for the scheduler (see defer.c). */
#ifndef ITO_RUNTIME_DEFER_H
#define ITO_RUNTIME_DEFER_H

#include <stdatomic.h>
#include <stdbool.h>

#include "base/compiler.h"

/* Async-signal-safe: have fn(arg) called soon by the scheduler, outside any
 * lock; meanwhile no code of the program runs on the interrupted ito thread.
 * False if ITO__DEFER_SLOTS calls are waiting already. */
#define ITO__DEFER_SLOTS 256
bool ito__defer(void (*fn)(void *), void *arg);

/* Set while calls wait: the run loop's cue (sched.c). */
extern _Atomic bool ito__deferred_pending;
/* Run the calls that wait (any context that holds no lock of ito's). */
void ito__deferred_run(void);
/* Run the calls that wait, and return only once no other kernel thread is
 * still running one it took: before the object a call names goes away. */
void ito__deferred_flush(void);

/* The run loop's look, at every pick. */
static inline void ito__deferred_poll(void)
{
    if (ITO_UNLIKELY(atomic_load_explicit(&ito__deferred_pending, memory_order_relaxed)))
        ito__deferred_run();
}

#endif
