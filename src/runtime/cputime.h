/* SPDX-License-Identifier: MIT */
/* Each thread's CPU time, counted at switches once asked for. See cputime.c. */
#ifndef ITO_RUNTIME_CPUTIME_H
#define ITO_RUNTIME_CPUTIME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/compiler.h"

struct ito__activation;
struct ito__thread;

/* Whether some thread is watched (set once, never cleared). */
extern _Atomic bool ito__cputime_on;

/* Count t's CPU time from now on (idempotent); if t is the caller, from this
 * moment, else from its next slice. */
void ito__cputime_watch(struct ito__thread *t);
/* t's CPU time so far, in ns (counted since it is watched). */
uint64_t ito__cputime_of(struct ito__thread *t);
/* At a switch on act (inside its critical section), from cur to next (NULL:
 * the scheduler context). */
void ito__cputime_switch(struct ito__activation *act, struct ito__thread *cur, struct ito__thread *next);

/* The switch's check: one load until a thread is watched. */
ITO_INLINE void ito__cputime_at_switch(struct ito__activation *act, struct ito__thread *cur, struct ito__thread *next)
{
    if (ITO_UNLIKELY(atomic_load_explicit(&ito__cputime_on, memory_order_relaxed)))
        ito__cputime_switch(act, cur, next);
}

#endif
