/* SPDX-License-Identifier: MIT */
/*
 * Work a signal handler leaves for the scheduler.
 *
 * Problem. A signal handler runs on some kernel thread at any instruction,
 * also inside one of ito's critical sections, where the interrupted code
 * may hold a spinlock: a synchronization object's, a run queue's, a ring's.
 * A handler that called into ito there — sem_post, which POSIX makes
 * async-signal-safe (posix/sem.c) — could spin for ever on a lock its own
 * kernel thread holds.
 *
 * Approach. Inside a critical section the handler does not call into ito:
 * it leaves the call, a function and its argument, in a pool that takes no
 * lock (ito__defer), and makes a pick come soon. Every pick (sched.c) loads
 * one flag, and when it is set runs what was left, in the scheduler and
 * outside any lock. A pick comes soon because:
 *   - on an ito thread's kernel thread the running thread's slice ends when
 *     its section does, as a time slice's would (runtime/critical.h): the
 *     interrupted thread runs none of the program's code before the call is
 *     made;
 *   - from any other kernel thread (a parked spare; one ito did not
 *     create), a vproc asleep is woken (its eventfd or futex: system calls,
 *     which a handler may make; the Dekker pair is the one of any
 *     placement, idle.c: the flag stored, then the sleepers looked at), and
 *     a busy one is asked to give way, as a policy asks (its carrier is
 *     poked).
 *
 * The pool is ITO__DEFER_SLOTS slots and two bitmaps: free slots, claimed
 * with a CAS; filled ones, published with an atomic OR (release) after the
 * slot is written, taken whole with an exchange (acquire). A slot is freed
 * (release) only after it is read, so a handler that claims it next (its
 * CAS acquires) never writes a slot still being read.
 */
#include "runtime/defer.h"

#include <stdint.h>

#include "arch.h"
#include "base/libc.h"
#include "runtime/critical.h"
#include "runtime/runtime.h"
#include "runtime/sched.h"
#include "runtime/vproc.h"

#define WORDS (ITO__DEFER_SLOTS / 64)

static struct {
    void (*fn)(void *);
    void *arg;
} slots[ITO__DEFER_SLOTS];
static _Atomic uint64_t free_bits[WORDS] = { [0 ... WORDS - 1] = ~0ull };
static _Atomic uint64_t filled_bits[WORDS];
_Atomic bool ito__deferred_pending;
/* Kernel threads running calls they took (for ito__deferred_flush). */
static _Atomic unsigned running;

static int claim(void)
{
    for (int w = 0; w < WORDS; w++) {
        uint64_t f = atomic_load_explicit(&free_bits[w], memory_order_relaxed);
        while (f) {
            uint64_t bit = f & -f;
            /* Acquire pairs with the release OR that freed the slot. */
            if (atomic_compare_exchange_weak_explicit(&free_bits[w], &f, f & ~bit, memory_order_acquire,
                                                      memory_order_relaxed))
                return w * 64 + __builtin_ctzll(bit);
        }
    }
    return -1;
}

bool ito__defer(void (*fn)(void *), void *arg)
{
    int i = claim();
    if (i < 0)
        return false;
    slots[i].fn = fn;
    slots[i].arg = arg;
    /* Release: the slot's contents before its bit (ito__deferred_run). */
    atomic_fetch_or_explicit(&filled_bits[i / 64], 1ull << (i % 64), memory_order_release);
    atomic_store_explicit(&ito__deferred_pending, true, memory_order_release);
    struct ito__activation *a = ito__arch_activation();
    if (a && a->vp && ito__critical_depth() > 0) {
        /* A carrier, inside a section: its thread's slice ends with the
         * section (critical.c), and the pick that follows runs the call; its
         * scheduler context (no thread) picks next anyway. */
        if (ito__thread_self()) {
            a->slice_pending = true;
            ito__arch_critical_or(ITO__CRITICAL_ATTENTION);
        }
        return true;
    }
    /* Another kernel thread (a parked spare, one ito did not create): a
     * vproc asleep wakes, and a busy one is asked to give way (its carrier
     * is poked, as for a policy's request). */
    ito__fence_light();   /* the flag, then the sleepers (idle.c) */
    ito__wake_one();
    for (int k = 0; k < ito__rt.nvprocs; k++) {
        if (atomic_load_explicit(&ito__rt.vprocs[k]->run_state, memory_order_relaxed) == ITO__VP_BUSY) {
            ito_policy_preempt(k);
            break;
        }
    }
    return true;
}

void ito__deferred_run(void)
{
    /* Counted before the flag is taken, both seq_cst: a flusher that finds
     * the flag taken then sees this kernel thread running. */
    atomic_fetch_add_explicit(&running, 1, memory_order_seq_cst);
    /* Also acquire: pairs with the release store in ito__defer, so a slot
     * filled before that store is seen below, or the flag is set again for
     * the next pick. */
    if (atomic_exchange_explicit(&ito__deferred_pending, false, memory_order_seq_cst)) {
        for (int w = 0; w < WORDS; w++) {
            /* Acquire pairs with the release OR in ito__defer. */
            uint64_t bits = atomic_exchange_explicit(&filled_bits[w], 0, memory_order_acquire);
            while (bits) {
                int i = w * 64 + __builtin_ctzll(bits);
                bits &= bits - 1;
                void (*fn)(void *) = slots[i].fn;
                void *arg = slots[i].arg;
                atomic_fetch_or_explicit(&free_bits[w], 1ull << (i % 64), memory_order_release);
                fn(arg);
            }
        }
    }
    /* Release: what the calls did, before a flusher sees none running. */
    atomic_fetch_sub_explicit(&running, 1, memory_order_release);
}

void ito__deferred_flush(void)
{
    /* seq_cst, as the exchange in ito__deferred_run: a flag found clear was
     * taken by a kernel thread whose count is then seen below. */
    if (atomic_load_explicit(&ito__deferred_pending, memory_order_seq_cst))
        ito__deferred_run();
    /* seq_cst: after the look at the flag; acquire pairs with the release
     * decrement. */
    while (atomic_load_explicit(&running, memory_order_seq_cst))
        ito__libc_sched_yield();
}
