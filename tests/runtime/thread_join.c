/* SPDX-License-Identifier: MIT */
/* Threads: spawn, join, detach, exit, self, yield — results and every
 * documented error (ESRCH, EDEADLK, EINVAL). */
#include <pthread.h>

#include "common.h"

static void *ret_arg(void *a) { return a; }

static void *yield_then_ret(void *a)
{
    for (int i = 0; i < 10; i++)
        ito_yield();
    return a;
}

/* ito_exit from a nested function: the frames above are abandoned. */
static atomic_int after_exit;
#pragma GCC diagnostic ignored "-Winfinite-recursion"
static void __attribute__((noinline)) deep_exit(int depth, void *r)
{
    if (depth == 0)
        ito_exit(r);
    deep_exit(depth - 1, r);
    atomic_fetch_add(&after_exit, 1);   /* never reached */
}

static void *exit_nested(void *a)
{
    ito_yield();
    deep_exit(20, a);
    atomic_fetch_add(&after_exit, 1);
    return NULL;
}

static void *exit_direct(void *a)
{
    ito_exit(a);
}

/* Join itself. */
static void *join_self(void *a)
{
    (void)a;
    return (void *)(intptr_t)ito_join(ito_self(), NULL);
}

/* Block until released, so that another joiner can be queued on us. */
static ito_sem_t gate;
static void *wait_gate(void *a)
{
    OK(ito_sem_wait(&gate));
    return a;
}

static ito_thread_t target;
static ito_sem_t joining;
static int join_target_err;
static void *join_target(void *a)
{
    void *r = NULL;
    OK(ito_sem_post(&joining));
    join_target_err = ito_join(target, &r);
    return r;
}

/* Self: distinct, stable, equal to the spawn handle. */
static ito_thread_t self_seen[64];
static void *record_self(void *a)
{
    int i = (int)(intptr_t)a;
    ito_thread_t s = ito_self();
    CHECK(!ito_thread_equal(s, ITO_THREAD_NULL));
    for (int k = 0; k < 5; k++) {
        ito_yield();
        CHECK(ito_thread_equal(s, ito_self()));
    }
    self_seen[i] = s;
    return NULL;
}

static void *foreign_self(void *a)
{
    (void)a;
    ito_thread_t s = ito_self();
    CHECK(ito_thread_equal(s, ITO_THREAD_NULL));
    CHECK_EQ(ito_vproc_self(), -1);
    ito_yield();   /* sched_yield() for a foreign thread */
    /* A foreign thread cannot join the "null" thread either. */
    CHECK_EQ(ito_join(ITO_THREAD_NULL, NULL), ESRCH);
    return NULL;
}

static void test_results(void)
{
    ito_thread_t t;
    void *r;
    OK(ito_spawn(&t, NULL, ret_arg, (void *)0x1234));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 0x1234);

    /* result may be NULL. */
    OK(ito_spawn(&t, NULL, ret_arg, (void *)1));
    OK(ito_join(t, NULL));

    /* ito_exit's argument reaches the joiner, directly and from deep inside. */
    OK(ito_spawn(&t, NULL, exit_direct, (void *)77));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 77);
    OK(ito_spawn(&t, NULL, exit_nested, (void *)99));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 99);
    CHECK_EQ(atomic_load(&after_exit), 0);

    /* Join a thread that has already exited. */
    OK(ito_spawn(&t, NULL, ret_arg, (void *)3));
    ito_sleep_ns(5000000);
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 3);

    /* Many at once, joined in reverse order. */
    enum { N = 200 };
    ito_thread_t ts[N];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, yield_then_ret, (void *)(intptr_t)i));
    for (int i = N; i-- > 0;) {
        OK(ito_join(ts[i], &r));
        CHECK_EQ((intptr_t)r, i);
    }
}

static void test_join_errors(void)
{
    void *r = (void *)1;
    /* Forged and null handles. */
    CHECK_EQ(ito_join(TEST_FORGED_THREAD, &r), ESRCH);
    CHECK_EQ(ito_join(ITO_THREAD_NULL, &r), ESRCH);
    CHECK_EQ(ito_join((ito_thread_t){ UINT64_MAX }, &r), ESRCH);
    CHECK_EQ((intptr_t)r, 1);   /* untouched on error */

    /* A handle already joined is stale, even after its descriptor is reused. */
    ito_thread_t t, u;
    OK(ito_spawn(&t, NULL, ret_arg, NULL));
    OK(ito_join(t, NULL));
    CHECK_EQ(ito_join(t, NULL), ESRCH);
    for (int i = 0; i < 100; i++) {
        OK(ito_spawn(&u, NULL, ret_arg, NULL));
        CHECK(!ito_thread_equal(u, t));
        CHECK_EQ(ito_join(t, NULL), ESRCH);
        OK(ito_join(u, NULL));
    }

    /* EDEADLK: joining oneself, from a thread and from main. */
    OK(ito_spawn(&t, NULL, join_self, NULL));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, EDEADLK);
    CHECK_EQ(ito_join(ito_self(), NULL), EDEADLK);

    /* EINVAL: a second joiner (or a detach) while the first joiner waits.
     * Whether j has claimed the join yet cannot be observed without trying;
     * the probe is a detach, which succeeds only if j has not, and then j's
     * join must fail instead: then try again, waiting longer. */
    OK(ito_sem_init(&gate, 0));
    OK(ito_sem_init(&joining, 0));
    bool done = false;
    for (int attempt = 1; attempt <= 20 && !done; attempt++) {
        OK(ito_spawn(&target, NULL, wait_gate, (void *)42));
        ito_thread_t j;
        OK(ito_spawn(&j, NULL, join_target, NULL));
        OK(ito_sem_wait(&joining));
        ito_sleep_ns(5000000ull * attempt);
        int e = ito_detach(target);
        if (e == EINVAL) {
            CHECK_EQ(ito_join(target, NULL), EINVAL);
            CHECK_EQ(ito_detach(target), EINVAL);
            OK(ito_sem_post(&gate));
            OK(ito_join(j, &r));
            CHECK_EQ((intptr_t)r, 42);
            CHECK_EQ(join_target_err, 0);
            CHECK_EQ(ito_join(target, NULL), ESRCH);
            done = true;
        } else {
            CHECK_EQ(e, 0);   /* j had not claimed it yet: now it is detached */
            OK(ito_sem_post(&gate));
            OK(ito_join(j, NULL));
            CHECK(join_target_err == EINVAL || join_target_err == ESRCH);
        }
    }
    CHECK(done);

    /* EINVAL: a detached thread (while it lives). */
    OK(ito_spawn(&t, NULL, wait_gate, NULL));
    OK(ito_detach(t));
    CHECK_EQ(ito_join(t, NULL), EINVAL);
    CHECK_EQ(ito_detach(t), EINVAL);
    OK(ito_sem_post(&gate));
    WAIT_UNTIL(ito_join(t, NULL) == ESRCH, 30);

    /* EINVAL: a future. */
    ito_future_t f;
    OK(ito_future_spawn(&f, NULL, ret_arg, (void *)8));
    ito_thread_t as_thread = { f.id };
    CHECK_EQ(ito_join(as_thread, NULL), EINVAL);
    CHECK_EQ(ito_detach(as_thread), EINVAL);
    OK(ito_future_touch(f, &r));
    CHECK_EQ((intptr_t)r, 8);
    CHECK_EQ(ito_join(as_thread, NULL), EINVAL);
    OK(ito_future_destroy(f));
    CHECK_EQ(ito_join(as_thread, NULL), ESRCH);
    OK(ito_sem_destroy(&gate));
    OK(ito_sem_destroy(&joining));
}

static atomic_int detached_ran;
static void *count_detached(void *a)
{
    ito_yield();
    atomic_fetch_add(&detached_ran, 1);
    return a;
}

static void test_detach(void)
{
    CHECK_EQ(ito_detach(TEST_FORGED_THREAD), ESRCH);
    CHECK_EQ(ito_detach(ITO_THREAD_NULL), ESRCH);

    /* Detach before and after exit; either way the handle becomes stale. */
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, count_detached, NULL));
    OK(ito_detach(t));
    WAIT_UNTIL(atomic_load(&detached_ran) == 1, 30);
    WAIT_UNTIL(ito_join(t, NULL) == ESRCH, 30);
    CHECK_EQ(ito_detach(t), ESRCH);

    OK(ito_spawn(&t, NULL, count_detached, NULL));
    WAIT_UNTIL(atomic_load(&detached_ran) == 2, 30);
    ito_sleep_ns(2000000);
    OK(ito_detach(t));   /* exited, not joined: detach frees it */
    CHECK_EQ(ito_join(t, NULL), ESRCH);
    CHECK_EQ(ito_detach(t), ESRCH);

    /* Joined: detach gives ESRCH. */
    OK(ito_spawn(&t, NULL, ret_arg, NULL));
    OK(ito_join(t, NULL));
    CHECK_EQ(ito_detach(t), ESRCH);

    /* Many detached threads all run. */
    int n = (int)test_scaled(2000);
    for (int i = 0; i < n; i++) {
        OK(ito_spawn(&t, NULL, count_detached, NULL));
        OK(ito_detach(t));
    }
    WAIT_UNTIL(atomic_load(&detached_ran) == 2 + n, 60);
}

static void test_self(void)
{
    ito_thread_t m = ito_self();
    CHECK(!ito_thread_equal(m, ITO_THREAD_NULL));
    CHECK(ito_thread_equal(m, ito_self()));
    CHECK(ito_thread_equal(ITO_THREAD_NULL, (ito_thread_t){ 0 }));

    enum { N = 64 };
    ito_thread_t ts[N];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, record_self, (void *)(intptr_t)i));
    for (int i = 0; i < N; i++)
        OK(ito_join(ts[i], NULL));
    for (int i = 0; i < N; i++) {
        CHECK(ito_thread_equal(self_seen[i], ts[i]));
        CHECK(!ito_thread_equal(self_seen[i], m));
        for (int k = 0; k < i; k++)
            CHECK(!ito_thread_equal(self_seen[i], self_seen[k]));
    }

    pthread_t p;
    CHECK_EQ(pthread_create(&p, NULL, foreign_self, NULL), 0);
    CHECK_EQ(pthread_join(p, NULL), 0);
}

/* Yield lets the other threads run: a group of threads that do nothing but
 * count and yield, all preferring vproc 0, every one of them keeps making
 * progress while main yields too. */
enum { NYIELDERS = 4 };
static atomic_long turns[NYIELDERS];
static atomic_int stop_yielders;
static void *yielder(void *a)
{
    int i = (int)(intptr_t)a;
    while (!atomic_load(&stop_yielders)) {
        atomic_fetch_add(&turns[i], 1);
        ito_yield();
    }
    return NULL;
}

static bool all_turned(long k)
{
    for (int i = 0; i < NYIELDERS; i++)
        if (atomic_load(&turns[i]) < k)
            return false;
    return true;
}

static void test_yield(void)
{
    ito_attr_t a;
    OK(ito_attr_init(&a));
    OK(ito_attr_set_vproc(&a, 0));
    ito_thread_t ts[NYIELDERS];
    for (int i = 0; i < NYIELDERS; i++)
        OK(ito_spawn(&ts[i], &a, yielder, (void *)(intptr_t)i));
    long k = test_scaled(2000);
    uint64_t end = ito_now_ns() + 60000000000ull;
    while (!all_turned(k)) {
        CHECK(ito_now_ns() < end);
        ito_yield();
    }
    atomic_store(&stop_yielders, 1);
    for (int i = 0; i < NYIELDERS; i++)
        OK(ito_join(ts[i], NULL));
}

int main(void)
{
    test_results();
    test_join_errors();
    test_detach();
    test_self();
    test_yield();
    return 0;
}
