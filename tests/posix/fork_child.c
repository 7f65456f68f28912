/* SPDX-License-Identifier: MIT */
/* What the child of fork() starts with, in a process with threads.
 *
 * "The set of signals pending for the child process shall be initialized to
 * the empty set" (fork). pthread_once: glibc's once carries a fork
 * generation, so that in the child a once that another thread of the parent
 * was running is run again by the first caller (nobody would ever finish it
 * otherwise). The child's threads work as a process's: one of them blocks in
 * the kernel while another runs. Child fork handlers (pthread_atfork) run in
 * the child, which they may give threads of its own.
 *
 * Each case forks its own children; a child checks and reports by its exit
 * status (a failed CHECK aborts it), guarded against hanging by alarm().
 * No case is left out for a glibc deviation. tests/posix/fork.c has the
 * child's identity, the parent's threads, handler order and exec. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

#define CHILD_ALARM 10 /* seconds: a hung child is ended by SIGALRM */

/* ---- pthread_once left running by a thread of the parent ---- */

/* glibc's once carries a fork generation: in the child, a once that
 * another thread was running is run again by the first caller (nobody
 * would ever finish it otherwise). */
static pthread_once_t half_done = PTHREAD_ONCE_INIT;
static atomic_int once_entered, once_runs;

static void slow_init(void)
{
    atomic_store(&once_entered, 1);
    conform_pause_us(200000);
    atomic_fetch_add(&once_runs, 1);
}

static void *runs_once(void *arg)
{
    OK(pthread_once(&half_done, slow_init));
    return arg;
}

static void once_left_running_by_parent(void)
{
    pthread_t t;
    OK(pthread_create(&t, NULL, runs_once, NULL));
    WAIT_UNTIL(atomic_load(&once_entered), 5000);
    pid_t pid = conform_fork(CHILD_ALARM);
    if (pid == 0) {
        atomic_store(&once_runs, 0);
        OK(pthread_once(&half_done, slow_init));
        CHECK_EQ(atomic_load(&once_runs), 1);
        _exit(0);
    }
    conform_reap(pid, 0);
    OK(pthread_join(t, NULL));
    CHECK_EQ(atomic_load(&once_runs), 1);
}

/* ---- "The set of signals pending for the child process shall be
 * initialized to the empty set" ---- */

static atomic_int usr1_runs;

static void on_usr1(int sig) { atomic_fetch_add(&usr1_runs, 1); }

static void *forks_with_pending(void *arg)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    sigaddset(&s, SIGRTMIN);
    OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
    OK(pthread_kill(pthread_self(), SIGUSR1));
    OK(pthread_kill(pthread_self(), SIGRTMIN));
    pid_t pid = conform_fork(CHILD_ALARM);
    if (pid == 0) {
        sigset_t p;
        OK(sigpending(&p));
        CHECK(!sigismember(&p, SIGUSR1) && !sigismember(&p, SIGRTMIN));
        OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL));
        CHECK_EQ(atomic_load(&usr1_runs), 0);
        _exit(0);
    }
    conform_reap(pid, 0);
    sigset_t one;
    int sig;
    sigemptyset(&one);
    sigaddset(&one, SIGUSR1);
    OK(sigwait(&one, &sig)); /* the parent's thread still has both */
    sigemptyset(&one);
    sigaddset(&one, SIGRTMIN);
    OK(sigwait(&one, &sig));
    return arg;
}

static void child_starts_with_no_pending_signals(void)
{
    signal(SIGUSR1, on_usr1);
    signal(SIGRTMIN, on_usr1);
    pthread_t t;
    OK(pthread_create(&t, NULL, forks_with_pending, NULL));
    OK(pthread_join(t, NULL));
    signal(SIGUSR1, SIG_DFL);
    signal(SIGRTMIN, SIG_DFL);
}

/* ---- the child blocks in the kernel while its own thread works ---- */

static int blocked_fd[2];

static void *writes_soon(void *arg)
{
    conform_pause_us(50000);
    CHECK_EQ(write(blocked_fd[1], "x", 1), 1);
    return arg;
}

static void *forks_and_reads(void *arg)
{
    pid_t pid = conform_fork(CHILD_ALARM);
    if (pid == 0) {
        CHECK_EQ(pipe(blocked_fd), 0);
        pthread_t w;
        OK(pthread_create(&w, NULL, writes_soon, NULL));
        char c;
        CHECK_EQ(read(blocked_fd[0], &c, 1), 1); /* a plain read that blocks */
        OK(pthread_join(w, NULL));
        _exit(0);
    }
    conform_reap(pid, 0);
    return arg;
}

static void child_blocks_while_its_thread_runs(void)
{
    pthread_t t;
    OK(pthread_create(&t, NULL, forks_and_reads, NULL));
    OK(pthread_join(t, NULL));
}

/* ---- a child handler that creates a thread ---- */

static atomic_bool create_in_child;

static void *answers(void *arg) { return (void *)(intptr_t)42; }

static void child_creates(void)
{
    if (!atomic_load(&create_in_child))
        return;
    pthread_t t;
    void *r = NULL;
    if (pthread_create(&t, NULL, answers, NULL) != 0 || pthread_join(t, &r) != 0 || r != (void *)(intptr_t)42)
        _exit(5);
}

static void *forks_with_creating_handler(void *arg)
{
    pid_t pid = conform_fork(CHILD_ALARM);
    if (pid == 0)
        _exit(0);
    conform_reap(pid, 0);
    return arg;
}

static void child_handler_creates_thread(void)
{
    OK(pthread_atfork(NULL, NULL, child_creates));
    atomic_store(&create_in_child, true);
    pthread_t t;
    OK(pthread_create(&t, NULL, forks_with_creating_handler, NULL));
    OK(pthread_join(t, NULL));
    atomic_store(&create_in_child, false);
}

/* ---- a child of a busy process creates, joins and locks (issue 22) ---- */

/* 100 threads compute, yield and share a mutex while main, then a thread,
 * forks: the child's one thread creates and joins threads of its own,
 * which share a mutex. (Not the parent's threads' mutex: one of them may
 * have held it at the fork, and then the child waits for ever, on glibc
 * too.) */
enum { BUSY = 100 };
static atomic_int busy_stop;
static pthread_mutex_t busy_m = PTHREAD_MUTEX_INITIALIZER;

static void *busy(void *arg)
{
    volatile unsigned long x = 0;
    long k = (long)(intptr_t)arg;
    while (!atomic_load_explicit(&busy_stop, memory_order_relaxed)) {
        if (++x % 1024)
            continue;
        if (k % 2) {
            OK(pthread_mutex_lock(&busy_m));
            x++;
            OK(pthread_mutex_unlock(&busy_m));
        }
        /* A pause now and then: on glibc, 100 kernel threads that never
         * sleep leave the child too little of 2 CPUs for its alarm. */
        if (x % 65536 == 0)
            conform_pause_us(100);
        else
            sched_yield();
    }
    return NULL;
}

static pthread_mutex_t child_m = PTHREAD_MUTEX_INITIALIZER;
static long child_count;

static void *child_adds(void *arg)
{
    for (int i = 0; i < 200; i++) {
        OK(pthread_mutex_lock(&child_m));
        child_count++;
        if (i % 50 == 0)
            sched_yield();   /* holding it: the others wait */
        OK(pthread_mutex_unlock(&child_m));
    }
    return arg;
}

static void *forks_busy(void *arg)
{
    pid_t pid = conform_fork(CHILD_ALARM);
    if (pid == 0) {
        for (intptr_t i = 0; i < 20; i++) {
            pthread_t t;
            void *r = NULL;
            if (pthread_create(&t, NULL, answers, NULL) != 0 || pthread_join(t, &r) != 0 ||
                r != (void *)(intptr_t)42)
                _exit(6);
        }
        pthread_t a[4];
        for (int i = 0; i < 4; i++)
            OK(pthread_create(&a[i], NULL, child_adds, NULL));
        for (int i = 0; i < 4; i++)
            OK(pthread_join(a[i], NULL));
        _exit(child_count == 800 ? 0 : 7);
    }
    conform_reap(pid, 0);
    return arg;
}

static void child_of_busy_process_works(void)
{
    pthread_t b[BUSY];
    for (intptr_t i = 0; i < BUSY; i++)
        OK(pthread_create(&b[i], NULL, busy, (void *)i));
    conform_pause_us(10000);
    for (int r = 0; r < 3; r++) {
        forks_busy(NULL);
        pthread_t t;
        OK(pthread_create(&t, NULL, forks_busy, NULL));
        OK(pthread_join(t, NULL));
    }
    atomic_store(&busy_stop, 1);
    for (int i = 0; i < BUSY; i++)
        OK(pthread_join(b[i], NULL));
}

int main(void)
{
    RUN_CASE(once_left_running_by_parent, 20);
    RUN_CASE(child_starts_with_no_pending_signals, 20);
    RUN_CASE(child_blocks_while_its_thread_runs, 20);
    RUN_CASE(child_handler_creates_thread, 20);
    RUN_CASE(child_of_busy_process_works, 60);
    return 0;
}
