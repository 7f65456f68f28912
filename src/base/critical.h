/*
 * ito's critical sections: where preemption waits.
 *
 * A time slice may end (kernel/preempt.c) between any two instructions of a
 * thread. Most of ito's own code must not be interrupted by a switch: it
 * holds a spinlock, or works on the structures of the vproc it runs on (the
 * policy's queues, the pools, the timers), which another activation may carry
 * by the time the thread resumes. Such code runs inside a critical section:
 *
 *     ito__critical_enter();  ... vp = ito__vproc_self(); ...  ito__critical_exit();
 *
 * The state is one thread-local word of the kernel thread: the nesting depth,
 * plus a PENDING bit that the tick's signal handler sets when it finds the
 * depth above zero. Entering adds one; leaving subtracts one and, when that
 * leaves exactly PENDING (depth zero, a slice ended meanwhile), yields then —
 * the critical section ran to its end and then gave up the vproc, as the seed
 * paper's "recovery" asks (seed 000 §3.3, §4.3). The common path costs an add
 * and a subtract on a thread-local word plus a compare: no atomic
 * read-modify-write, no system call.
 *
 * A context switch happens inside a section (every switch path is one); the
 * switch saves the depth on the leaving context's stack and restores it when
 * that context resumes (sched.c), so depth follows the context, not the
 * kernel thread. A switch also clears PENDING: the vproc has moved on.
 *
 * Rejected: a range of program counters for ito's own code (seed 000 §4.3).
 * It costs nothing, but it cannot tell when the section ends — ito calls the
 * C library, policies written by the application and hooks in the middle of
 * its work — and with a static library ito's code is interleaved with the
 * application's. The word is exact, and the ITO_DEBUG build asserts that
 * every use of a vproc is inside a section.
 */
#ifndef ITO_BASE_CRITICAL_H
#define ITO_BASE_CRITICAL_H

#include <stdint.h>

#include "base/compiler.h"
#include "arch.h"

#define ITO_CRITICAL_PENDING 0x80000000u
#define ITO_CRITICAL_DEPTH 0x7fffffffu

/* A slice ended inside a section that has just ended: yield if it is still
 * safe to (kernel/preempt.c). */
void ito__critical_recover(void);

ITO_INLINE void ito__critical_enter(void) { ito__arch_critical_add(1); }

ITO_INLINE void ito__critical_exit(void)
{
    if (ITO_UNLIKELY(ito__arch_critical_dec() == ITO_CRITICAL_PENDING))
        ito__critical_recover();
}

/* Nesting depth of the calling kernel thread's current context. */
ITO_INLINE uint32_t ito__critical_depth(void) { return ito__arch_critical_get() & ITO_CRITICAL_DEPTH; }

/* After a context switch: the resumed context's own depth, nothing pending. */
ITO_INLINE void ito__critical_restore(uint32_t depth) { ito__arch_critical_set(depth); }

#endif
