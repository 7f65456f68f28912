/* SPDX-License-Identifier: MIT */
/* Inline joins (src/runtime/inline.c): a thread that joins a child that has not
 * started runs it on its own stack when it fits there. main has a large
 * stack, so its joins of fresh children go inline. The child must remain a
 * full thread: its own identity, errno and keys; it may block, migrate, call
 * ito_exit from deep inside, spawn and join inline children of its own, be
 * suspended and restarted elsewhere with ito_set_entry; and the joiner may be
 * suspended while it waits. */
#include "common.h"

#include <unistd.h>

static ito_thread_t child_self;
static int key_seen;
static ito_key_t key;

static void dtor(void *v)
{
    /* Destructors run as the exiting thread. */
    CHECK(ito_thread_equal(ito_self(), child_self));
    key_seen = (int)(intptr_t)v;
}

/* errno through a call the compiler cannot fold into its caller, so that its
 * address is computed anew after every switch (see ito.h on errno). */
static __attribute__((noinline)) int get_errno(void) { return errno; }
static __attribute__((noinline)) void set_errno(int e) { errno = e; }

static void *identity(void *arg)
{
    child_self = ito_self();
    set_errno(77);
    OK(ito_setspecific(key, (void *)(intptr_t)5));
    ito_yield();
    CHECK_EQ(get_errno(), 77);
    return (void *)((intptr_t)arg + 1);
}

static void test_identity(void)
{
    ito_thread_t t;
    void *r;
    OK(ito_key_create(&key, dtor));
    set_errno(33);
    OK(ito_spawn(&t, NULL, identity, (void *)41));
    OK(ito_join(t, &r));
    CHECK_EQ(get_errno(), 33);
    CHECK_EQ((intptr_t)r, 42);
    CHECK(ito_thread_equal(child_self, t));
    CHECK(!ito_thread_equal(ito_self(), t));
    CHECK_EQ(key_seen, 5);
    CHECK_EQ(ito_join(t, NULL), ESRCH);
}

/* --- the child blocks, so the joiner's stack is parked as the child's context */
static ito_sem_t sem;

static void *poster(void *arg)
{
    ito_sleep_ns(1000000);
    OK(ito_sem_post(&sem));
    return NULL;
}

static void *blocker(void *arg)
{
    OK(ito_sem_wait(&sem));
    for (int i = 0; i < 100; i++)
        ito_yield();
    return arg;
}

static void test_blocking(void)
{
    OK(ito_sem_init(&sem, 0));
    ito_thread_t p, t;
    void *r;
    OK(ito_spawn(&p, NULL, poster, NULL));
    OK(ito_spawn(&t, NULL, blocker, (void *)7));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 7);
    OK(ito_join(p, NULL));
}

/* --- ito_exit from deep inside */
/* Recursion that ends in ito_exit: it never returns (the compiler says so). */
#pragma GCC diagnostic ignored "-Winfinite-recursion"
static int deep(int n)
{
    if (n == 0)
        ito_exit((void *)99);
    return deep(n - 1) + 1;
}

static void *exiter(void *arg) { return (void *)(intptr_t)deep((int)(intptr_t)arg); }

static void test_exit(void)
{
    for (int i = 0; i < 1000; i++) {
        ito_thread_t t;
        void *r;
        volatile int canary = 12345;
        OK(ito_spawn(&t, NULL, exiter, (void *)(intptr_t)(i % 50)));
        OK(ito_join(t, &r));
        CHECK_EQ((intptr_t)r, 99);
        CHECK_EQ(canary, 12345);
    }
}

/* --- nested inline joins */
static void *fib(void *arg)
{
    intptr_t n = (intptr_t)arg;
    if (n < 2)
        return arg;
    ito_thread_t a, b;
    void *ra, *rb;
    OK(ito_spawn(&a, NULL, fib, (void *)(n - 1)));
    OK(ito_spawn(&b, NULL, fib, (void *)(n - 2)));
    OK(ito_join(b, &rb));
    OK(ito_join(a, &ra));
    return (void *)((intptr_t)ra + (intptr_t)rb);
}

static void test_nested(void)
{
    ito_thread_t t;
    void *r;
    OK(ito_spawn(&t, NULL, fib, (void *)20));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 6765);
}

/* --- the inlined child is suspended and restarted elsewhere */
static ito_sem_t started, go;
static ito_thread_t victim;

static void *second_life(void *arg) { return (void *)((intptr_t)arg * 2); }

static void *first_life(void *arg)
{
    OK(ito_sem_post(&started));
    OK(ito_sem_wait(&go));
    return (void *)1;   /* never reached: restarted before it runs again */
}

static void *restarter(void *arg)
{
    OK(ito_sem_wait(&started));
    OK(ito_suspend(victim));   /* blocked in sem_wait: stops when woken */
    OK(ito_sem_post(&go));
    int e;
    while ((e = ito_set_entry(victim, second_life, (void *)21)) == EBUSY)
        ito_yield();
    OK(e);
    OK(ito_resume(victim));
    return NULL;
}

static void test_restart(void)
{
    OK(ito_sem_init(&started, 0));
    OK(ito_sem_init(&go, 0));
    ito_thread_t h;
    void *r;
    OK(ito_spawn(&victim, NULL, first_life, NULL));
    OK(ito_spawn(&h, NULL, restarter, NULL));
    OK(ito_join(victim, &r));
    CHECK_EQ((intptr_t)r, 42);
    OK(ito_join(h, NULL));
}

/* --- the joiner is suspended while it waits for its (inlined) child */
static _Atomic int phase;
static ito_thread_t joiner;

static void *slow_child(void *arg)
{
    while (atomic_load(&phase) < 2)   /* finish only once the joiner is suspended */
        ito_yield();
    return arg;
}

static void *suspender(void *arg)
{
    while (atomic_load(&phase) < 1)
        ito_yield();
    OK(ito_suspend(joiner));          /* it waits in ito_join: stops when woken */
    atomic_store(&phase, 2);
    ito_sleep_ns(5000000);
    CHECK_EQ(atomic_load(&phase), 2);   /* the child has exited, the joiner not resumed */
    OK(ito_resume(joiner));
    return NULL;
}

static void *joiner_fn(void *arg)
{
    ito_thread_t c;
    void *r;
    OK(ito_spawn(&c, NULL, slow_child, (void *)5));
    atomic_store(&phase, 1);
    OK(ito_join(c, &r));
    atomic_store(&phase, 3);
    return r;
}

static void test_joiner_suspended(void)
{
    /* Once with the joiner on a small stack (child on its own) and once as
     * main (child inline). */
    ito_thread_t s;
    void *r;
    atomic_store(&phase, 0);
    OK(ito_spawn(&s, NULL, suspender, NULL));
    OK(ito_spawn(&joiner, NULL, joiner_fn, NULL));
    OK(ito_join(joiner, &r));
    CHECK_EQ((intptr_t)r, 5);
    CHECK_EQ(atomic_load(&phase), 3);
    OK(ito_join(s, NULL));

    atomic_store(&phase, 0);
    joiner = ito_self();
    OK(ito_spawn(&s, NULL, suspender, NULL));
    r = joiner_fn(NULL);
    CHECK_EQ((intptr_t)r, 5);
    OK(ito_join(s, NULL));
}

/* --- many inline joins whose children block, yield or sleep at random */
static ito_mutex_t mu = ITO_MUTEX_INIT;
static long total;

static void *random_child(void *arg)
{
    uint64_t s = (uint64_t)(intptr_t)arg;
    switch (test_rand(&s) % 4) {
    case 0: ito_yield(); break;
    case 1: ito_sleep_ns(1000); break;
    case 2: OK(ito_mutex_lock(&mu)); ito_yield(); OK(ito_mutex_unlock(&mu)); break;
    default: break;
    }
    OK(ito_mutex_lock(&mu));
    total++;
    OK(ito_mutex_unlock(&mu));
    return NULL;
}

static void *background(void *arg)
{
    for (long i = 0; i < (long)(intptr_t)arg; i++) {
        OK(ito_mutex_lock(&mu));
        total++;
        OK(ito_mutex_unlock(&mu));
        ito_yield();
    }
    return NULL;
}

static void test_stress(void)
{
    long n = test_scaled(100000);
    ito_thread_t b;
    OK(ito_spawn(&b, NULL, background, (void *)(intptr_t)n));
    for (long i = 0; i < n; i++) {
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, random_child, (void *)(intptr_t)(i + 1)));
        OK(ito_join(t, NULL));
    }
    OK(ito_join(b, NULL));
    CHECK_EQ(total, 2 * n);
}

int main(void)
{
    test_identity();
    test_blocking();
    test_exit();
    test_nested();
    test_restart();
    test_joiner_suspended();
    test_stress();
    return 0;
}
