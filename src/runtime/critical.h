/* SPDX-License-Identifier: MIT */
/*
 * ito's critical sections: where preemption waits.
 *
 * A time slice may end (upcall/preempt.c) between any two instructions of a
 * thread. Most of ito's own code must not be interrupted by a switch: it
 * holds a spinlock, or works on the structures of the vproc it runs on (the
 * policy's queues, the pools, the timers), which another activation may carry
 * by the time the thread resumes. Such code runs inside a critical section:
 *
 *     ito__critical_enter();  ... vp = ito__vproc_self(); ...  ito__critical_exit();
 *
 * The state is one thread-local word of the kernel thread: the nesting
 * depth, plus an ATTENTION bit that two others set:
 *   - the tick's signal handler (upcall/preempt.c), when a slice ends while
 *     the depth is above zero: the section runs to its end, and leaving it
 *     at depth zero yields — the "recovery" of [SA §3.3, §4.3];
 *   - the monitor (runtime/carrier.c), when it takes the vproc of a kernel
 *     thread asleep in a call that nobody bracketed: that kernel thread may
 *     wake at any moment and must not touch the vproc again, so the next
 *     section it enters — ito's next use of a vproc — first gives up its
 *     thread and parks.
 * Entering adds one and branches on the sign of the result (the same
 * instruction's flags); leaving subtracts one and compares with ATTENTION.
 * The common path costs an add and a subtract on a thread-local word and two
 * predicted branches: no atomic read-modify-write, no system call.
 *
 * A context switch happens inside a section (every switch path is one); the
 * switch saves the depth on the leaving context's stack and restores it when
 * that context resumes (sched.c), so depth follows the context, not the
 * kernel thread. A switch also clears ATTENTION: the vproc has moved on.
 * A thread leaves RUNNING (to block, yield, suspend or exit) only inside a
 * section that lasts until its switch, so the outermost entry always finds
 * its thread RUNNING and free to move to another kernel thread.
 *
 * Rejected: a range of program counters for ito's own code ([SA §4.3]).
 * It costs nothing, but it cannot tell when the section ends — ito calls the
 * C library, policies written by the application and hooks in the middle of
 * its work — and with a static library ito's code is interleaved with the
 * application's. The word is exact, and the ITO_DEBUG build asserts that
 * every use of a vproc is inside a section.
 */
#ifndef ITO_RUNTIME_CRITICAL_H
#define ITO_RUNTIME_CRITICAL_H

#include <stdint.h>

#include "base/compiler.h"
#include "arch.h"

#define ITO__CRITICAL_ATTENTION 0x80000000u
#define ITO__CRITICAL_DEPTH 0x7fffffffu

/* The slow paths (runtime/critical.c): a section begins with ATTENTION set
 * (the vproc may have been taken: give it up first), or the outermost one
 * ends with it (a slice ended inside: yield now). */
void ito__critical_attention(void);
void ito__critical_recover(void);

ITO_INLINE void ito__critical_enter(void)
{
    if (ITO_UNLIKELY(ito__arch_critical_inc()))
        ito__critical_attention();
}

#ifdef ITO_TSAN
void __tsan_release(void *addr);
extern __thread uint32_t ito__tls_critical;
#endif

/* The monitor that takes the vproc of this kernel thread once it sleeps
 * outside any section synchronizes with the section's end through the kernel
 * (runtime/carrier.c), which ThreadSanitizer cannot see: name it there. Called
 * still inside the section, so the address is this kernel thread's. */
ITO_INLINE void ito__critical_tsan_release(void)
{
#ifdef ITO_TSAN
    __tsan_release(&ito__tls_critical);
#endif
}

ITO_INLINE void ito__critical_exit(void)
{
    ito__critical_tsan_release();
    if (ITO_UNLIKELY(ito__arch_critical_dec() == ITO__CRITICAL_ATTENTION))
        ito__critical_recover();
}

/* A safe point outside every section, for code just back from a call that
 * may have slept in the kernel outside any section — the C library's
 * blocking calls, which the POSIX face makes for its threads while the rings
 * are off. If the monitor took this kernel thread's vproc meanwhile (the
 * ATTENTION bit at depth zero: runtime/carrier.c), the thread is given up
 * here, as the next section's entry would do (critical.c), and returns on
 * another activation; a mark from a steal called off is cleared. Without it
 * the kernel thread runs the thread on without a vproc until its next call
 * into ito or its next tick outside the C library, and a thread that does
 * nothing but such calls reaches neither: kernel threads beyond the vprocs
 * ran for seconds, and the threads of the vprocs they starved never ran
 * (tests/posix/io_poll.c, epoll_wait_ignores_other_threads, rings off).
 *
 * The common path is one load of the thread-local word. The monitor's OR of
 * the bit is ordered before that load by the kernel (the carrier slept
 * through it: step 4 of ito__carrier_steal), as for a section's entry; the
 * entry's slow path then reads the decision with ito__carrier_lost's
 * acquire load of kstate, which pairs with the monitor's acq_rel CAS that
 * gave the vproc to a spare. A foreign kernel thread's word is never
 * marked. May switch threads; errno is the caller's to keep. */
ITO_INLINE void ito__critical_point(void)
{
    if (ITO_UNLIKELY(ito__arch_critical_get() == ITO__CRITICAL_ATTENTION)) {
        ito__critical_enter();
        ito__critical_exit();
    }
}

/* Nesting depth of the calling kernel thread's current context. */
ITO_INLINE uint32_t ito__critical_depth(void) { return ito__arch_critical_get() & ITO__CRITICAL_DEPTH; }

/* At the entry of a call that may switch, or of ito_spawn: the caller must
 * be outside every section. Only code that runs inside one gets there with
 * one open — a signal handler that interrupted its thread inside ito, an
 * event hook, a policy's callback, a call inside a blocking bracket — and
 * going on would switch a thread that is half switched already, or wait for
 * ever on a lock the interrupted code holds: abort, naming the caller's
 * mistake (ito__critical_reentered, which the scheduler calls too when a
 * switch is asked for in a hook or a bracket). */
ITO_COLD _Noreturn void ito__critical_reentered(void);
ITO_INLINE void ito__critical_none(void)
{
    if (ITO_UNLIKELY(ito__critical_depth()))
        ito__critical_reentered();
}

/* ito__critical_none and ito__critical_enter at once, in one instruction on
 * the word (the yield path's: no second load). */
ITO_INLINE void ito__critical_enter_outermost(void)
{
    uint32_t was = ito__arch_critical_xinc();
    if (ITO_UNLIKELY(was)) {
        if (was & ITO__CRITICAL_DEPTH)
            ito__critical_reentered();
        ito__critical_attention();
    }
}

/* After a context switch: the resumed context's own depth, no attention. */
ITO_INLINE void ito__critical_restore(uint32_t depth)
{
    ito__critical_tsan_release();
    ito__arch_critical_set(depth);
}

#endif
