/* SPDX-License-Identifier: MIT */
/* pthread_exit called from main while other threads still run.
 *
 * "The process shall exit with an exit status of 0 after the last thread has
 * been terminated. The behavior shall be as if the implementation called
 * exit() with a zero argument at thread termination time." (pthread_exit)
 *
 * main pushes a cleanup handler, sets a thread-specific value, starts the
 * workers and a last thread, and calls pthread_exit: its cleanup handler and
 * destructor run as for any thread. The workers start counting only after
 * main's destructor has run, so all their work happens once main is gone.
 * The last thread joins them and checks the count. When it ends, the
 * implicit exit(0) runs the atexit handler, which checks that the last
 * thread finished and prints "exit_main: ok"; otherwise it ends the process
 * with status 1. So the program passes when it exits 0 and prints that line.
 *
 * No case is left out for a glibc deviation. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "conform.h"

#define WORKERS 4
#define ROUNDS 10000
#define MS 1000000ull

static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static long count;
static pthread_t workers[WORKERS];
static pthread_key_t main_key;

static atomic_int main_cleanup_ran, main_destructor_ran, last_thread_done;

static void main_cleanup(void *p)
{
    atomic_store(&main_cleanup_ran, 1);
}

static void main_destructor(void *p)
{
    CHECK(atomic_load(&main_cleanup_ran)); /* cleanup handlers come first */
    atomic_store(&main_destructor_ran, 1);
}

static void *worker(void *p)
{
    uint64_t give_up = conform_now(CLOCK_MONOTONIC) + 3000 * MS;
    while (!atomic_load(&main_destructor_ran)) {
        CHECK(conform_now(CLOCK_MONOTONIC) < give_up);
        struct timespec pause = { 0, 1000000 };
        nanosleep(&pause, NULL);
    }
    for (int i = 0; i < ROUNDS; i++) {
        OK(pthread_mutex_lock(&count_lock));
        count++;
        OK(pthread_mutex_unlock(&count_lock));
    }
    return (void *)(intptr_t)ROUNDS;
}

static void *last_thread(void *p)
{
    for (int i = 0; i < WORKERS; i++) {
        void *res;
        OK(pthread_join(workers[i], &res));
        CHECK_EQ((intptr_t)res, ROUNDS);
    }
    OK(pthread_mutex_lock(&count_lock));
    CHECK_EQ(count, (long)WORKERS * ROUNDS);
    OK(pthread_mutex_unlock(&count_lock));
    atomic_store(&last_thread_done, 1);
#ifdef __SANITIZE_THREAD__
    /* ThreadSanitizer's background thread counts as a live thread (and blocks
     * every signal), so the process would never end on its own. */
    exit(0);
#endif
    return NULL;
}

/* Runs in the implicit exit(0) after the last thread has terminated. */
static void at_exit_check(void)
{
    if (!atomic_load(&last_thread_done) || !atomic_load(&main_destructor_ran)) {
        fprintf(stderr, "exit_main: the process exited before its last thread ended\n");
        _exit(1);
    }
    printf("exit_main: ok\n");
    fflush(stdout);
}

static void main_exits_first(void)
{
    CHECK_EQ(atexit(at_exit_check), 0);
    OK(pthread_key_create(&main_key, main_destructor));
    OK(pthread_setspecific(main_key, &main_key));
    for (int i = 0; i < WORKERS; i++)
        OK(pthread_create(&workers[i], NULL, worker, NULL));
    pthread_t last;
    OK(pthread_create(&last, NULL, last_thread, NULL));
    pthread_cleanup_push(main_cleanup, NULL);
    pthread_exit(NULL); /* the alarm set by RUN_CASE stays as the hang guard */
    pthread_cleanup_pop(0);
}

int main(void)
{
    RUN_CASE(main_exits_first, 10);
    CHECK(!"pthread_exit returned");
    return 0;
}
