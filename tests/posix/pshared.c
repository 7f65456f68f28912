/* SPDX-License-Identifier: MIT */
/* POSIX conformance: PTHREAD_PROCESS_SHARED objects used by two processes (a
 * parent and a forked child) through a MAP_SHARED|MAP_ANONYMOUS mapping: a
 * mutex, a condition variable, a barrier, an unnamed semaphore (pshared=1)
 * and a robust mutex whose owner process dies.
 *
 * "The process-shared attribute is set to PTHREAD_PROCESS_SHARED to permit
 * a mutex to be operated upon by any thread that has access to the memory
 * where the mutex is allocated, even if the mutex is allocated in memory
 * that is shared by multiple processes."
 *
 * Left out because glibc deviates from POSIX: none known.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "conform.h"

enum { INCREMENTS = 50000, CYCLES = 200 };

struct shared {
    pthread_mutex_t m;
    pthread_cond_t c;
    long counter; /* guarded by m */
    int flag;     /* guarded by m */
    pthread_barrier_t b;
    atomic_int serial[CYCLES];
    sem_t s;
};

static struct shared *sh; /* mapped MAP_SHARED: the child sees the same */

/* Forks a child that runs fn and exits 0 (a failed CHECK aborts it). */
static pid_t spawn(void (*fn)(void))
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(10); /* the parent's hang guard is not inherited */
        fn();
        _exit(0);
    }
    return pid;
}

/* The child must have exited normally with status 0. */
static void reap(pid_t pid)
{
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
}

static void init_shared_mutex(pthread_mutex_t *m, int robust)
{
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
    if (robust)
        OK(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST));
    OK(pthread_mutex_init(m, &a));
    OK(pthread_mutexattr_destroy(&a));
}

static void init_shared_cond(pthread_cond_t *c)
{
    pthread_condattr_t a;
    OK(pthread_condattr_init(&a));
    OK(pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
    OK(pthread_cond_init(c, &a));
    OK(pthread_condattr_destroy(&a));
}

/* ---- mutex ---- */

static void increment(void)
{
    for (int i = 0; i < INCREMENTS; i++) {
        OK(pthread_mutex_lock(&sh->m));
        long v = sh->counter;
        sh->counter = v + 1;
        OK(pthread_mutex_unlock(&sh->m));
    }
}

static void mutex_across_processes(void)
{
    init_shared_mutex(&sh->m, 0);
    sh->counter = 0;
    pid_t pid = spawn(increment);
    increment();
    reap(pid);
    CHECK_EQ(sh->counter, 2L * INCREMENTS);
    OK(pthread_mutex_destroy(&sh->m));
}

/* ---- condition variable ---- */

static void set_flag_and_signal(void)
{
    OK(pthread_mutex_lock(&sh->m));
    sh->flag = 1;
    OK(pthread_cond_signal(&sh->c));
    OK(pthread_mutex_unlock(&sh->m));
}

static void cond_child_signals_parent(void)
{
    init_shared_mutex(&sh->m, 0);
    init_shared_cond(&sh->c);
    sh->flag = 0;
    OK(pthread_mutex_lock(&sh->m));
    pid_t pid = spawn(set_flag_and_signal); /* blocks on m until we wait */
    while (!sh->flag)
        OK(pthread_cond_wait(&sh->c, &sh->m));
    OK(pthread_mutex_unlock(&sh->m));
    reap(pid);
    OK(pthread_cond_destroy(&sh->c));
    OK(pthread_mutex_destroy(&sh->m));
}

/* ---- barrier ---- */

static void cycle_barrier(void)
{
    for (int i = 0; i < CYCLES; i++) {
        int r = pthread_barrier_wait(&sh->b);
        if (r == PTHREAD_BARRIER_SERIAL_THREAD)
            atomic_fetch_add(&sh->serial[i], 1);
        else
            CHECK_EQ(r, 0);
    }
}

/* One of the two processes is the serial one in each cycle. */
static void barrier_across_processes(void)
{
    pthread_barrierattr_t a;
    OK(pthread_barrierattr_init(&a));
    OK(pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
    OK(pthread_barrier_init(&sh->b, &a, 2));
    OK(pthread_barrierattr_destroy(&a));
    for (int i = 0; i < CYCLES; i++)
        atomic_init(&sh->serial[i], 0);
    pid_t pid = spawn(cycle_barrier);
    cycle_barrier();
    reap(pid);
    for (int i = 0; i < CYCLES; i++)
        CHECK_EQ(atomic_load(&sh->serial[i]), 1);
    OK(pthread_barrier_destroy(&sh->b));
}

/* ---- semaphore ---- */

static void post_twice(void)
{
    usleep(20000); /* let the parent block first (it passes either way) */
    CHECK_EQ(sem_post(&sh->s), 0);
    CHECK_EQ(sem_post(&sh->s), 0);
}

/* sem_init: "If the pshared argument has a non-zero value, then the
 * semaphore is shared between processes". */
static void sem_child_posts(void)
{
    CHECK_EQ(sem_init(&sh->s, 1, 0), 0);
    pid_t pid = spawn(post_twice);
    CHECK_EQ(sem_wait(&sh->s), 0);
    struct timespec deadline = conform_deadline(CLOCK_REALTIME, 5000000000ull);
    CHECK_EQ(sem_timedwait(&sh->s, &deadline), 0);
    reap(pid);
    int v = -1;
    CHECK_EQ(sem_getvalue(&sh->s, &v), 0);
    CHECK_EQ(v, 0);
    CHECK_EQ(sem_destroy(&sh->s), 0);
}

/* ---- robust mutex ---- */

static void lock_and_die(void)
{
    OK(pthread_mutex_lock(&sh->m));
    CHECK_EQ(sem_post(&sh->s), 0); /* tell the parent it is held */
    usleep(20000);                 /* let the parent block on it */
    _exit(0);                      /* still holding it */
}

/* "If mutex is a robust mutex and the process containing the owning thread
 * terminated while holding the mutex lock, a call to pthread_mutex_lock()
 * shall return the error value [EOWNERDEAD]." */
static void robust_owner_process_dies(void)
{
    init_shared_mutex(&sh->m, 1);
    CHECK_EQ(sem_init(&sh->s, 1, 0), 0);
    reap(spawn(lock_and_die));
    FAILS(pthread_mutex_lock(&sh->m), EOWNERDEAD);
    OK(pthread_mutex_consistent(&sh->m));
    OK(pthread_mutex_unlock(&sh->m));
    OK(pthread_mutex_lock(&sh->m));
    OK(pthread_mutex_unlock(&sh->m));
    CHECK_EQ(sem_destroy(&sh->s), 0);
    OK(pthread_mutex_destroy(&sh->m));
}

/* The same, with the parent already blocked in pthread_mutex_lock when the
 * owner dies. */
static void robust_waiter_sees_owner_die(void)
{
    init_shared_mutex(&sh->m, 1);
    CHECK_EQ(sem_init(&sh->s, 1, 0), 0);
    pid_t pid = spawn(lock_and_die);
    CHECK_EQ(sem_wait(&sh->s), 0);
    FAILS(pthread_mutex_lock(&sh->m), EOWNERDEAD);
    OK(pthread_mutex_consistent(&sh->m));
    OK(pthread_mutex_unlock(&sh->m));
    reap(pid);
    CHECK_EQ(sem_destroy(&sh->s), 0);
    OK(pthread_mutex_destroy(&sh->m));
}

int main(void)
{
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(sh != MAP_FAILED);

    RUN_CASE(mutex_across_processes, 20);
    RUN_CASE(cond_child_signals_parent, 10);
    RUN_CASE(barrier_across_processes, 10);
    RUN_CASE(sem_child_posts, 10);
    RUN_CASE(robust_owner_process_dies, 10);
    RUN_CASE(robust_waiter_sees_owner_die, 10);

    CHECK_EQ(munmap(sh, sizeof *sh), 0);
    return 0;
}
