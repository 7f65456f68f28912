/* SPDX-License-Identifier: MIT */
/* ito_suspend, ito_resume and ito_set_entry: suspending oneself and a
 * blocked thread; restarting a suspended thread with a new entry; and the
 * EINVAL/EBUSY/ESRCH cases. Suspending ready and running threads of other
 * vprocs: suspend_running.c. */
#include "common.h"

static void *ret_arg(void *a) { return a; }

/* ---- suspend oneself, resumed by another thread ---- */

static atomic_int self_phase;
static void *suspend_self(void *a)
{
    atomic_store(&self_phase, 1);
    int e = ito_suspend(ito_self());
    atomic_store(&self_phase, 2);
    return (void *)(intptr_t)e;
}

static ito_thread_t resume_target;
static void *resumer(void *a)
{
    WAIT_UNTIL(atomic_load(&self_phase) == 1, 30);
    /* It may not have stopped yet: resuming too early must not lose the
     * resume, so keep resuming until it has gone past its suspension. */
    while (atomic_load(&self_phase) != 2) {
        OK(ito_resume(resume_target));
        ito_sleep_ns(1000000);
    }
    return NULL;
}

static void test_suspend_self(void)
{
    ito_thread_t t, r;
    OK(ito_spawn(&t, NULL, suspend_self, NULL));
    /* Without anyone resuming it, it stays suspended. */
    WAIT_UNTIL(atomic_load(&self_phase) == 1, 30);
    ito_sleep_ns(20000000);
    CHECK_EQ(atomic_load(&self_phase), 1);
    resume_target = t;
    OK(ito_spawn(&r, NULL, resumer, NULL));
    void *res;
    OK(ito_join(t, &res));
    CHECK_EQ((intptr_t)res, 0);
    CHECK_EQ(atomic_load(&self_phase), 2);
    OK(ito_join(r, NULL));
}

/* ---- a blocked thread stays blocked, then stops instead of running ---- */

static ito_sem_t sem;
static atomic_int got_unit;
static void *sem_waiter(void *a)
{
    OK(ito_sem_wait(&sem));
    atomic_store(&got_unit, 1);
    return a;
}

static void *new_entry(void *a) { return (void *)((intptr_t)a + 1000); }

static void test_suspend_blocked(void)
{
    OK(ito_sem_init(&sem, 0));
    atomic_store(&got_unit, 0);
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, sem_waiter, (void *)1));
    ito_sleep_ns(10000000);   /* let it block (not required for correctness) */
    OK(ito_suspend(t));
    /* Asked to stop but still blocked in its wait: set_entry is EBUSY. */
    int e = ito_set_entry(t, new_entry, (void *)1);
    CHECK(e == EBUSY || e == 0);   /* 0 only if it had not started waiting */
    if (e == 0) {
        /* It never got to wait: it restarts in new_entry once resumed. */
        OK(ito_resume(t));
        void *r;
        OK(ito_join(t, &r));
        CHECK_EQ((intptr_t)r, 1001);
        OK(ito_sem_destroy(&sem));
        return;
    }
    OK(ito_sem_post(&sem));   /* ends the wait: it must stop, not run */
    ito_sleep_ns(20000000);
    CHECK_EQ(atomic_load(&got_unit), 0);
    /* Once it has stopped, set_entry works (poll: it stops asynchronously). */
    uint64_t end = ito_now_ns() + 30000000000ull;
    while ((e = ito_set_entry(t, new_entry, (void *)2)) == EBUSY) {
        CHECK(ito_now_ns() < end);
        ito_sleep_ns(1000000);
    }
    OK(e);
    CHECK_EQ(atomic_load(&got_unit), 0);
    OK(ito_resume(t));
    void *r;
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 1002);   /* the new entry ran; the old one never finished */
    CHECK_EQ(atomic_load(&got_unit), 0);
    /* The unit it was handed is gone with its old computation. */
    CHECK_EQ(ito_sem_trywait(&sem), EAGAIN);

    /* Suspended while blocked, then resumed after the wait ended: it goes on. */
    atomic_store(&got_unit, 0);
    OK(ito_spawn(&t, NULL, sem_waiter, (void *)3));
    ito_sleep_ns(5000000);
    OK(ito_suspend(t));
    OK(ito_sem_post(&sem));
    ito_sleep_ns(10000000);
    CHECK_EQ(atomic_load(&got_unit), 0);
    OK(ito_resume(t));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 3);
    CHECK_EQ(atomic_load(&got_unit), 1);

    /* Suspended while blocked and resumed before the wait ends: nothing
     * visible happens; the wait ends normally. */
    atomic_store(&got_unit, 0);
    OK(ito_spawn(&t, NULL, sem_waiter, (void *)4));
    ito_sleep_ns(5000000);
    OK(ito_suspend(t));
    OK(ito_resume(t));
    OK(ito_sem_post(&sem));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 4);
    CHECK_EQ(atomic_load(&got_unit), 1);
    OK(ito_sem_destroy(&sem));
}

/* ---- set_entry ---- */

static atomic_int old_finished;
static void *suspend_midway(void *a)
{
    volatile char frame[1024];
    frame[0] = 1;
    OK(ito_suspend(ito_self()));
    atomic_store(&old_finished, 1);   /* must never run after set_entry */
    return (void *)(intptr_t)frame[0];
}

static void *restarted(void *a)
{
    /* A fresh start: may block and switch like any thread. */
    ito_sleep_ns(1000);
    ito_yield();
    return (void *)((intptr_t)a * 3);
}

static void test_set_entry(void)
{
    /* A thread that suspended itself in the middle of its work restarts from
     * the new entry. */
    for (int round = 0; round < 20; round++) {
        atomic_store(&old_finished, 0);
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, suspend_midway, NULL));
        int e;
        uint64_t end = ito_now_ns() + 30000000000ull;
        /* Until it has suspended itself: EINVAL (not suspended, not asked),
         * then EBUSY for the few instructions of its switch out (it has
         * asked, and is not stopped yet: ito.h). */
        while ((e = ito_set_entry(t, restarted, (void *)(intptr_t)(round + 1))) != 0) {
            CHECK(e == EINVAL || e == EBUSY);
            CHECK(ito_now_ns() < end);
            ito_yield();
        }
        /* Set again: the last entry wins. */
        OK(ito_set_entry(t, restarted, (void *)(intptr_t)(round + 2)));
        OK(ito_resume(t));
        void *r;
        OK(ito_join(t, &r));
        CHECK_EQ((intptr_t)r, 3 * (round + 2));
        CHECK_EQ(atomic_load(&old_finished), 0);
    }

    /* A restarted thread can be suspended and restarted again. */
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, suspend_midway, NULL));
    WAIT_UNTIL(ito_set_entry(t, suspend_midway, NULL) == 0, 30);
    OK(ito_resume(t));
    WAIT_UNTIL(ito_set_entry(t, restarted, (void *)9) == 0, 30);
    OK(ito_resume(t));
    void *r;
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 27);
}

static void test_set_entry_never_ran(void)
{
    /* A thread suspended before it ever ran starts in the new entry. It is
     * spawned on main's vproc, which main does not leave: it is ready, in a
     * queue, and ito_suspend returns at once. The header lists EBUSY only for
     * a thread "still running, or still blocked in a wait"; this one is
     * neither, so set_entry must accept it. */
    ito_attr_t a;
    OK(ito_attr_init(&a));
    OK(ito_attr_set_vproc(&a, ito_vproc_self()));
    for (int round = 0; round < 20; round++) {
        atomic_store(&old_finished, 0);
        ito_thread_t t;
        OK(ito_spawn(&t, &a, suspend_midway, NULL));
        OK(ito_suspend(t));
        int e = ito_set_entry(t, restarted, (void *)5);
        OK(e);
        OK(ito_resume(t));
        void *r;
        OK(ito_join(t, &r));
        CHECK_EQ((intptr_t)r, 15);
        CHECK_EQ(atomic_load(&old_finished), 0);
    }
}

/* ---- errors ---- */

static void *set_entry_self(void *a)
{
    return (void *)(intptr_t)ito_set_entry(ito_self(), ret_arg, NULL);
}

static ito_sem_t hold;
static void *hold_fn(void *a)
{
    OK(ito_sem_wait(&hold));
    return a;
}

static atomic_int exiting;
static void *flag_and_exit(void *a)
{
    atomic_store(&exiting, 1);
    return a;
}

static void test_errors(void)
{
    ito_thread_t forged = TEST_FORGED_THREAD;
    CHECK_EQ(ito_suspend(forged), ESRCH);
    CHECK_EQ(ito_resume(forged), ESRCH);
    CHECK_EQ(ito_set_entry(forged, ret_arg, NULL), ESRCH);
    CHECK_EQ(ito_suspend(ITO_THREAD_NULL), ESRCH);
    CHECK_EQ(ito_resume(ITO_THREAD_NULL), ESRCH);
    CHECK_EQ(ito_set_entry(ITO_THREAD_NULL, ret_arg, NULL), ESRCH);

    /* Joined: stale. */
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, ret_arg, NULL));
    OK(ito_join(t, NULL));
    CHECK_EQ(ito_suspend(t), ESRCH);
    CHECK_EQ(ito_resume(t), ESRCH);
    CHECK_EQ(ito_set_entry(t, ret_arg, NULL), ESRCH);

    /* Exited but not joined yet: suspend gives ESRCH. */
    atomic_store(&exiting, 0);
    OK(ito_spawn(&t, NULL, flag_and_exit, NULL));
    WAIT_UNTIL(atomic_load(&exiting), 30);
    int e;
    uint64_t end = ito_now_ns() + 30000000000ull;
    while ((e = ito_suspend(t)) != ESRCH) {
        /* Caught between the flag and its exit: let it go on. */
        OK(e);
        OK(ito_resume(t));
        CHECK(ito_now_ns() < end);
        ito_sleep_ns(1000000);
    }
    /* The header does not say what resume and set_entry give for an exited
     * (not yet joined) thread: "0 also if t is not suspended" or ESRCH, and
     * "EINVAL if t is not suspended" or ESRCH. Accept either. */
    e = ito_resume(t);
    CHECK(e == 0 || e == ESRCH);
    e = ito_set_entry(t, ret_arg, NULL);
    CHECK(e == EINVAL || e == ESRCH);
    OK(ito_join(t, NULL));

    /* set_entry on oneself, with a NULL entry, on a thread that is neither
     * suspended nor asked to be. */
    OK(ito_spawn(&t, NULL, set_entry_self, NULL));
    void *r;
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, EINVAL);
    CHECK_EQ(ito_set_entry(ito_self(), ret_arg, NULL), EINVAL);

    OK(ito_sem_init(&hold, 0));
    OK(ito_spawn(&t, NULL, hold_fn, (void *)6));
    CHECK_EQ(ito_set_entry(t, ret_arg, NULL), EINVAL);   /* ready or blocked, not asked */
    ito_sleep_ns(5000000);
    CHECK_EQ(ito_set_entry(t, ret_arg, NULL), EINVAL);   /* blocked, not asked */
    CHECK_EQ(ito_set_entry(t, NULL, NULL), EINVAL);
    OK(ito_suspend(t));
    CHECK_EQ(ito_set_entry(t, ret_arg, NULL), EBUSY);    /* asked, still blocked */
    CHECK_EQ(ito_set_entry(t, NULL, NULL), EINVAL);
    OK(ito_resume(t));
    CHECK_EQ(ito_set_entry(t, ret_arg, NULL), EINVAL);   /* no longer asked */
    OK(ito_sem_post(&hold));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 6);
    OK(ito_sem_destroy(&hold));
}

int main(void)
{
    test_errors();
    test_suspend_self();
    test_suspend_blocked();
    test_set_entry();
    test_set_entry_never_ran();
    return 0;
}
