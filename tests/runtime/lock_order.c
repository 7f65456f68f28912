/* SPDX-License-Identifier: MIT */
/* The lock order (src/runtime/lockorder.c) is checked at every acquisition
 * in ITO_DEBUG builds: locks taken outer first pass; a lock taken inside one
 * that is not strictly outer to it aborts, naming both (each case in a child
 * process); two locks of one kind are never held at once; a release of a
 * lock not held aborts. The real locks of a running program keep the order
 * (every other test runs with the check on). */
#include <signal.h>

#include "common.h"
#include "runtime/spinlock.h"

#ifdef ITO_DEBUG
static ito__spinlock thread_lock = ITO__SPINLOCK_INITIALIZER(ITO__LOCK_THREAD);
static ito__spinlock timer_lock = ITO__SPINLOCK_INITIALIZER(ITO__LOCK_TIMERS);
static ito__spinlock policy_lock = ITO__SPINLOCK_INITIALIZER(ITO__LOCK_POLICY_QUEUE);
static ito__spinlock object_lock;   /* zeroed: a sync object's lock */
static ito__spinlock other_object_lock;

static void case_inner_then_outer(void)
{
    ito__spin_lock(&timer_lock);
    ito__spin_lock(&thread_lock);
}

static void case_same_kind(void)
{
    ito__spin_lock(&object_lock);
    ito__spin_lock(&other_object_lock);
}

static void case_unlock_unheld(void)
{
    ito__spin_unlock(&policy_lock);
}

static const struct test_abort_case cases[] = {
    { "inner_then_outer", case_inner_then_outer, "taken while holding a timer heap's lock" },
    { "same_kind", case_same_kind, "a sync object's lock" },
    { "unlock_unheld", case_unlock_unheld, "does not hold it" },
};

int main(int argc, char **argv)
{
    enum { NCASES = sizeof cases / sizeof cases[0] };
    int st = test_abort_cases(argc, argv, cases, NCASES, "lock order");
    if (argc == 2 || st != 0)
        return st;
    /* Outer first, every kind in a row, and trylock: no abort. */
    ito__spin_lock(&object_lock);
    ito__spin_lock(&thread_lock);
    CHECK(ito__spin_trylock(&timer_lock));
    ito__spin_lock(&policy_lock);
    ito__spin_unlock(&policy_lock);
    ito__spin_unlock(&timer_lock);
    ito__spin_unlock(&thread_lock);
    ito__spin_unlock(&object_lock);
    printf("lock_order: %d misuses aborted with both locks named; the right order passes\n", NCASES);
    return 0;
}
#else
int main(void)
{
    printf("lock_order: not an ITO_DEBUG build: the order is not checked here\n");
    return 0;
}
#endif
