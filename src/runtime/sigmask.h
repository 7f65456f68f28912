/* SPDX-License-Identifier: MIT */
/* Each thread's signal mask, carried by the kernel thread that runs it. See
 * sigmask.c. Masks are the kernel's: bit sig - 1 for signal sig (1..64). */
#ifndef ITO_RUNTIME_SIGMASK_H
#define ITO_RUNTIME_SIGMASK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/compiler.h"
#include "runtime/runtime.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

#define ITO__SIGBIT(sig) (1ull << ((sig) - 1))

/* Once, at initialization, on the initializing kernel thread (after the
 * time-slice signal is chosen): the process's mask then is what threads
 * spawned from outside any ito thread start with. */
void ito__sigmask_init(void);

/* The mask of the calling kernel thread, without the reserved signals: what
 * an activation starts with (act->kmask). */
uint64_t ito__sigmask_of_kthread(void);

/* A new activation's kernel thread (born with every signal blocked:
 * base/kthread.h) takes the process's mask, until it runs a thread. */
void ito__sigmask_carrier_start(void);

/* Signals no thread may block: the C library's own two (cancellation and
 * set*id broadcasts) and ito's time-slice signal. */
uint64_t ito__sigmask_reserved(void);

/* Change the running thread's mask (how: SIG_BLOCK, SIG_UNBLOCK or
 * SIG_SETMASK; the reserved signals are left out of `set`); *old (if asked)
 * is the mask before. The calling kernel thread's mask follows at once. */
void ito__sigmask_change(int how, uint64_t set, uint64_t *old);

/* The mask a thread spawned now starts with: the running thread's, or, from
 * outside any ito thread, the process's when ito started. */
extern uint64_t ito__sigmask_process;
static inline uint64_t ito__sigmask_spawned(void)
{
    struct ito__thread *cur = ito__thread_self();
    return cur ? atomic_load_explicit(&cur->sigmask, memory_order_relaxed) : ito__sigmask_process;
}

/* The running thread's mask (a foreign kernel thread's own). */
uint64_t ito__sigmask_self(void);

/* A thread's mask, as another thread may read it (relaxed: it changes only
 * on that thread). */
static inline uint64_t ito__sigmask_of(const struct ito__thread *t)
{
    return atomic_load_explicit(&t->sigmask, memory_order_relaxed);
}

/* Some thread has changed its mask: switches carry masks from then on.
 * Set by ito__sigmasks_begin. */
extern _Atomic bool ito__sigmasks_used;

/* Threads' masks come into use (a thread changes its own, is spawned with
 * one, or the POSIX face starts routing signals): from now on a switch
 * carries them and a vproc that sleeps blocks every signal. Wakes the vprocs
 * asleep with the process's mask, so that they sleep again blocking them. */
void ito__sigmasks_begin(void);

void ito__sigmask_write(struct ito__activation *act, uint64_t mask);

/* A switch to `next` on act's kernel thread, in two halves around the jump,
 * so that no handler runs on a thread that blocks its signal: before it,
 * the kernel thread blocks what next blocks too (adding only: nothing is
 * delivered there); after it, on next's stack, it takes next's mask exactly
 * (a signal next accepts that was kept for the process is handled there, on
 * next). One system call where the masks differ, two where each blocks
 * something the other does not.
 *
 * Relaxed is enough for the flag: a thread that changed its mask set it
 * first, on its own kernel thread, and reached this one only through a run
 * queue, whose pop (acquire) pairs with the push (release) that followed. */
static inline void ito__sigmask_before(struct ito__activation *act, const struct ito__thread *next)
{
    if (ITO_UNLIKELY(atomic_load_explicit(&ito__sigmasks_used, memory_order_relaxed))) {
        uint64_t m = ito__sigmask_of(next);
        if (m & ~act->kmask)
            ito__sigmask_write(act, act->kmask | m);
    }
}

static inline void ito__sigmask_after(struct ito__activation *act, const struct ito__thread *self)
{
    if (ITO_UNLIKELY(atomic_load_explicit(&ito__sigmasks_used, memory_order_relaxed)) && self) {
        uint64_t m = ito__sigmask_of(self);
        if (m != act->kmask)
            ito__sigmask_write(act, m);
    }
}

/* A wait in the kernel that ito's own signals may end with EINTR (the
 * time-slice signal, a poke) notes ito__sigmask_interrupts() before it and
 * compares after: a change means one of ito's ended it, not the program's
 * handler, and it waits again. Each of ito's handlers counts itself with
 * ito__sigmask_interrupted(). A wait that moved to another kernel thread
 * meanwhile (it did not wait where it looked) also reads as a change. */
static inline uint64_t ito__sigmask_interrupts(void)
{
    struct ito__activation *a = ito__arch_activation();
    return a ? (uint64_t)(uintptr_t)a << 32 ^ atomic_load_explicit(&a->interrupts, memory_order_relaxed) : 0;
}

static inline void ito__sigmask_interrupted(void)
{
    struct ito__activation *a = ito__arch_activation();
    if (a)
        atomic_fetch_add_explicit(&a->interrupts, 1, memory_order_relaxed);
}

/* A vproc with nothing to run is about to sleep: its kernel thread blocks
 * every signal a thread may block, so that a signal for the process goes to
 * a kernel thread that runs a thread accepting it (or is kept for one), not
 * to a scheduler context that runs no thread. */
void ito__sigmask_block_all(struct ito__activation *act);
static inline void ito__sigmask_idle(struct ito__activation *act)
{
    if (ITO_UNLIKELY(atomic_load_explicit(&ito__sigmasks_used, memory_order_relaxed)))
        ito__sigmask_block_all(act);
}

#endif
