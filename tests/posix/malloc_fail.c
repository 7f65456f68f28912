/* SPDX-License-Identifier: MIT */
/* POSIX conformance: threads go on while every allocation fails
 * (tests/malloc_fail.h), where the standard leaves no room for an error.
 *
 *   robust_held   a thread takes 12 robust mutexes, the last 4 while memory
 *                 is short (a lock may not fail with ENOMEM; it may wait:
 *                 the run lets memory come back after 50 ms), and ends
 *                 holding them all: each next owner gets EOWNERDEAD.
 *   create_dlopen after a library with thread-local variables was loaded
 *                 with dlopen and a thread has ended (its resources cached
 *                 for the next one), pthread_create with memory short: 0 or
 *                 EAGAIN, never an abort; with memory back, a thread is
 *                 created and sees the library's initial values.
 *
 * Left out because glibc deviates from POSIX: none known. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdatomic.h>

#include "conform.h"
#include "tls_lib.h"
#include "../malloc_fail.h"

enum { ROBUST = 12, ROBUST_SHORT = 4 };

static pthread_mutex_t robust[ROBUST];
static _Atomic int robust_taken;

static void *take_all(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROBUST; i++) {
        if (i == ROBUST - ROBUST_SHORT)
            malloc_fail(true);
        OK(pthread_mutex_lock(&robust[i]));
        atomic_fetch_add(&robust_taken, 1);
    }
    return NULL;   /* holding them all */
}

static void robust_held(void)
{
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST));
    for (int i = 0; i < ROBUST; i++)
        OK(pthread_mutex_init(&robust[i], &a));
    pthread_t t;
    OK(pthread_create(&t, NULL, take_all, NULL));
    while (!atomic_load(&malloc_fail_on))
        sched_yield();
    struct timespec short_while = { 0, 50000000 };
    nanosleep(&short_while, NULL);
    malloc_fail(false);
    OK(pthread_join(t, NULL));
    CHECK_EQ(atomic_load(&robust_taken), ROBUST);
    for (int i = 0; i < ROBUST; i++) {
        FAILS(pthread_mutex_lock(&robust[i]), EOWNERDEAD);
        OK(pthread_mutex_consistent(&robust[i]));
        OK(pthread_mutex_unlock(&robust[i]));
        OK(pthread_mutex_destroy(&robust[i]));
    }
    OK(pthread_mutexattr_destroy(&a));
}

static long (*tls_get)(int model);
static void (*tls_set)(int model, long v);

static void *use_tls(void *arg)
{
    (void)arg;
    CHECK_EQ(tls_get(0), 1000);   /* the initial values, whatever the thread before left */
    CHECK_EQ(tls_get(1), 1001);
    tls_set(0, 7);
    tls_set(1, 8);
    return NULL;
}

static void create_dlopen(void)
{
    struct tls_lib l = tls_lib_load();
    tls_get = l.get;
    tls_set = l.set;
    pthread_t t;
    OK(pthread_create(&t, NULL, use_tls, NULL));   /* (ended: its resources cached) */
    OK(pthread_join(t, NULL));
    malloc_fail(true);
    int e = pthread_create(&t, NULL, use_tls, NULL);
    malloc_fail(false);
    CHECK(e == 0 || e == EAGAIN);
    if (e == 0)
        OK(pthread_join(t, NULL));
    OK(pthread_create(&t, NULL, use_tls, NULL));
    OK(pthread_join(t, NULL));
    printf("create_dlopen: pthread_create with memory short gave %s\n", e ? "EAGAIN" : "0");
}

int main(void)
{
    RUN_CASE(robust_held, 30);
    RUN_CASE(create_dlopen, 30);
    printf("malloc_fail: ok\n");
    return 0;
}
