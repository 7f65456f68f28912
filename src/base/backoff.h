/* SPDX-License-Identifier: MIT */
/* Waiting for another kernel thread to finish a step of a few instructions,
 * which takes longer only when the kernel preempted that thread right there:
 * spin a while (a pause per round), then give the CPU up at every round so
 * that the preempted thread can finish. One bound for every such wait in
 * ito: 1,024 pauses are a few microseconds, far beyond any step's length. */
#ifndef ITO_BASE_BACKOFF_H
#define ITO_BASE_BACKOFF_H

#include <sched.h>

#include "base/libc.h"
#include "base/compiler.h"
#include "arch.h"

#define ITO__BACKOFF_SPINS 1024u

/* One round of the wait; *spins starts at 0. */
ITO_INLINE void ito__backoff(unsigned *spins)
{
    if (*spins < ITO__BACKOFF_SPINS) {
        ++*spins;
        ito__cpu_relax();
    } else {
        ito__libc_sched_yield();
    }
}

#endif
