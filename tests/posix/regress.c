/* SPDX-License-Identifier: MIT */
/* Defects once found in the POSIX face, kept as cases (each holds on glibc
 * too): a caller's stack freed right after the join; a "for ever" timeout
 * (TIME_T_MAX) that must not expire at once; the smallest caller stack
 * switching; pthread_exit from a C11 thread, which is the C library's, and
 * so are its signal mask, CPU clock, affinity and pthread_kill (libudev and
 * hwloc call them while ito starts); pthread_once with waiters. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <threads.h>

#include "conform.h"

static void *spin_a_little(void *arg)
{
    volatile long x = 0;
    for (long i = 0; i < (long)(intptr_t)arg; i++)
        x += i;
    sched_yield();
    return arg;
}

/* A stack of `size` bytes mapped here, set in a new attribute *a. */
static void *caller_stack(pthread_attr_t *a, size_t size)
{
    void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(stack != MAP_FAILED);
    OK(pthread_attr_init(a));
    OK(pthread_attr_setstack(a, stack, size));
    return stack;
}

/* The thread ends on the caller's stack; once pthread_join returns, the
 * caller may unmap it. */
static void case_caller_stack_freed_after_join(void)
{
    size_t size = 64 * 1024;
    for (int i = 0; i < 2000; i++) {
        pthread_attr_t a;
        void *stack = caller_stack(&a, size);
        pthread_t t;
        void *r;
        OK(pthread_create(&t, &a, spin_a_little, (void *)(intptr_t)(i % 64 * 50)));
        OK(pthread_join(t, &r));
        CHECK_EQ((intptr_t)r, i % 64 * 50);
        CHECK_EQ(munmap(stack, size), 0);
        OK(pthread_attr_destroy(&a));
    }
}

/* PTHREAD_STACK_MIN bytes of the caller's, and a switch on them. */
static void case_smallest_caller_stack(void)
{
    size_t size = PTHREAD_STACK_MIN;
    pthread_attr_t a;
    void *stack = caller_stack(&a, size);
    pthread_t t;
    void *r;
    OK(pthread_create(&t, &a, spin_a_little, (void *)(intptr_t)10));
    OK(pthread_join(t, &r));
    CHECK_EQ((intptr_t)r, 10);
    OK(pthread_attr_destroy(&a));
    CHECK_EQ(munmap(stack, size), 0);
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int ready;
static sem_t s;

static void *signal_later(void *arg)
{
    usleep(20000);
    OK(pthread_mutex_lock(&m));
    ready = 1;
    OK(pthread_cond_signal(&c));
    OK(pthread_mutex_unlock(&m));
    CHECK_EQ(sem_post(&s), 0);
    return NULL;
}

static void case_timeout_for_ever(void)
{
    struct timespec never = { .tv_sec = (time_t)LONG_MAX, .tv_nsec = 0 };
    OK(sem_init(&s, 0, 0));
    pthread_t t;
    OK(pthread_create(&t, NULL, signal_later, NULL));
    OK(pthread_mutex_lock(&m));
    while (!ready)
        OK(pthread_cond_timedwait(&c, &m, &never));
    OK(pthread_mutex_unlock(&m));
    CHECK_EQ(sem_timedwait(&s, &never), 0);
    OK(pthread_mutex_timedlock(&m, &never));
    OK(pthread_mutex_unlock(&m));
    OK(pthread_join(t, NULL));
    OK(sem_destroy(&s));
}

static int c11_thread(void *arg)
{
    pthread_exit(arg);   /* a C11 thread is the C library's own */
    return 1;
}

static void case_pthread_exit_from_c11_thread(void)
{
    thrd_t t;
    CHECK_EQ(thrd_create(&t, c11_thread, (void *)(intptr_t)42), thrd_success);
    int res = -1;
    CHECK_EQ(thrd_join(t, &res), thrd_success);
    CHECK_EQ(res, 42);
}

static int c11_own_calls(void *arg)
{
    /* A kernel thread of the C library's: these are the C library's calls,
     * acting on this kernel thread. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    OK(pthread_sigmask(SIG_BLOCK, &set, &old));
    OK(pthread_sigmask(SIG_SETMASK, &old, NULL));
    clockid_t clock;
    OK(pthread_getcpuclockid(pthread_self(), &clock));
    struct timespec ts;
    CHECK_EQ(clock_gettime(clock, &ts), 0);
    cpu_set_t cpus;
    OK(pthread_getaffinity_np(pthread_self(), sizeof cpus, &cpus));
    OK(pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus));
    OK(pthread_kill(pthread_self(), 0));
    return 7;
}

static void case_c11_thread_calls_are_the_c_librarys(void)
{
    thrd_t t;
    CHECK_EQ(thrd_create(&t, c11_own_calls, NULL), thrd_success);
    int res = -1;
    CHECK_EQ(thrd_join(t, &res), thrd_success);
    CHECK_EQ(res, 7);
}

#define ONCE_CALLERS 16
static pthread_once_t slow_once = PTHREAD_ONCE_INIT;
static atomic_int once_runs;

static void slow_init(void)
{
    struct timespec ts = { 0, 20 * 1000000 };
    nanosleep(&ts, NULL);   /* the others find it running and wait */
    atomic_fetch_add(&once_runs, 1);
}

static void *calls_once(void *arg)
{
    OK(pthread_once(&slow_once, slow_init));
    CHECK_EQ(atomic_load(&once_runs), 1);
    return NULL;
}

static void case_once_with_waiters(void)
{
    pthread_t t[ONCE_CALLERS];
    for (int i = 0; i < ONCE_CALLERS; i++)
        OK(pthread_create(&t[i], NULL, calls_once, NULL));
    for (int i = 0; i < ONCE_CALLERS; i++)
        OK(pthread_join(t[i], NULL));
    CHECK_EQ(atomic_load(&once_runs), 1);
}

int main(void)
{
    RUN_CASE(case_caller_stack_freed_after_join, 60);
    RUN_CASE(case_smallest_caller_stack, 20);
    RUN_CASE(case_timeout_for_ever, 20);
    RUN_CASE(case_pthread_exit_from_c11_thread, 20);
    RUN_CASE(case_c11_thread_calls_are_the_c_librarys, 20);
    RUN_CASE(case_once_with_waiters, 20);
    return 0;
}
