/* SPDX-License-Identifier: MIT */
/* Signals sent to one thread: pthread_kill and pthread_sigqueue.
 *
 * "The pthread_kill() function shall request that a signal be delivered to
 * the specified thread." (pthread_kill) "The pthread_sigqueue() function
 * performs a similar task to sigqueue(3), but, rather than sending a signal
 * to a process, it sends a signal to a thread" (glibc manual page), with
 * SA_SIGINFO's si_code SI_QUEUE and the value. A handler runs on the thread
 * the signal was sent to; a thread sleeping in nanosleep is woken with
 * EINTR and the time left; sem_wait may fail with EINTR; a condition wait may
 * wake spuriously; sig 0 checks the thread; an invalid signal is EINVAL. If
 * pthread_kill(pthread_self()) sends an unblocked signal, its handler has
 * run when the call returns (as kill does for the process). A signal whose
 * disposition is SIG_IGN is discarded.
 *
 * No case is left out for a glibc deviation. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

#define MS 1000000ull

static _Atomic pthread_t handled_on;   /* pthread_self() in the last handler */
static atomic_int handled, last_code, last_value;
static atomic_int reached, done;

static void on_usr1(int sig) { atomic_store(&handled_on, pthread_self()), atomic_fetch_add(&handled, 1); }

static void on_info(int sig, siginfo_t *si, void *uc)
{
    atomic_store(&handled_on, pthread_self());
    atomic_store(&last_code, si->si_code);
    atomic_store(&last_value, si->si_value.sival_int);
    CHECK_EQ(si->si_pid, getpid());
    atomic_fetch_add(&handled, 1);
}

static void install(int sig, void (*h)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(sig, &sa, NULL), 0);
}

static void install_info(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_info;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(sig, &sa, NULL), 0);
}

static void reset(void)
{
    atomic_store(&handled, 0);
    atomic_store(&reached, 0);
    atomic_store(&handled_on, (pthread_t)0);
}

static void pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void wait_for(atomic_int *v, int n)
{
    uint64_t give_up = conform_now(CLOCK_MONOTONIC) + 5000 * MS;
    while (atomic_load(v) < n) {
        CHECK(conform_now(CLOCK_MONOTONIC) < give_up);
        pause_ms(1);
    }
}

/* ------------------------------------------------------------- cases */

static atomic_bool stop;

static void *computes(void *arg)
{
    atomic_fetch_add(&reached, 1);
    volatile unsigned long x = 0;
    while (!atomic_load(&stop))
        x++;
    return NULL;
}

static void to_a_computing_thread(void)
{
    reset();
    install(SIGUSR1, on_usr1, SA_RESTART);
    atomic_store(&stop, false);
    pthread_t t;
    OK(pthread_create(&t, NULL, computes, NULL));
    wait_for(&reached, 1);
    OK(pthread_kill(t, SIGUSR1));
    wait_for(&handled, 1);
    CHECK(pthread_equal(atomic_load(&handled_on), t));
    atomic_store(&stop, true);
    OK(pthread_join(t, NULL));
}

static void *sleeps(void *arg)
{
    struct timespec req = { 30, 0 }, rem = { 0, 0 };
    atomic_fetch_add(&reached, 1);
    errno = 0;
    CHECK_EQ(nanosleep(&req, &rem), -1);
    CHECK_EQ(errno, EINTR);
    CHECK(rem.tv_sec > 20 && rem.tv_sec <= 30); /* the time left */
    atomic_store(&done, 1);
    return (void *)1;
}

/* Send sig to t until it says it is done: a signal that arrives before t
 * has entered its call runs the handler but cannot interrupt the call, on
 * any implementation; the next one does. */
static void kill_until_done(pthread_t t, int sig)
{
    uint64_t give_up = conform_now(CLOCK_MONOTONIC) + 5000 * MS;
    while (!atomic_load(&done)) {
        CHECK(conform_now(CLOCK_MONOTONIC) < give_up);
        OK(pthread_kill(t, sig));
        pause_ms(20);
    }
}

static void ends_nanosleep_with_eintr(void)
{
    reset();
    atomic_store(&done, 0);
    install(SIGUSR1, on_usr1, 0);
    pthread_t t;
    OK(pthread_create(&t, NULL, sleeps, NULL));
    wait_for(&reached, 1);
    pause_ms(20);
    kill_until_done(t, SIGUSR1);
    void *r;
    OK(pthread_join(t, &r));
    CHECK(r == (void *)1);
    CHECK(atomic_load(&handled) >= 1);
    CHECK(pthread_equal(atomic_load(&handled_on), t));
}

static sem_t sem;

static void *waits_on_sem(void *arg)
{
    atomic_fetch_add(&reached, 1);
    int r;
    while ((r = sem_wait(&sem)) != 0)
        CHECK_EQ(errno, EINTR); /* may be interrupted by the handler */
    return (void *)1;
}

static void while_in_sem_wait(void)
{
    reset();
    install(SIGUSR1, on_usr1, 0);
    OK(sem_init(&sem, 0, 0));
    pthread_t t;
    OK(pthread_create(&t, NULL, waits_on_sem, NULL));
    wait_for(&reached, 1);
    pause_ms(20);
    OK(pthread_kill(t, SIGUSR1));
    wait_for(&handled, 1); /* while it still waits: nothing was posted */
    CHECK(pthread_equal(atomic_load(&handled_on), t));
    OK(sem_post(&sem));
    OK(pthread_join(t, NULL));
    OK(sem_destroy(&sem));
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;

static void *waits_on_cond(void *arg)
{
    OK(pthread_mutex_lock(&mu));
    atomic_fetch_add(&reached, 1);
    while (!ready)
        OK(pthread_cond_wait(&cv, &mu)); /* a wake-up by the handler is spurious: 0 */
    OK(pthread_mutex_unlock(&mu));
    return NULL;
}

static void while_in_cond_wait(void)
{
    reset();
    install(SIGUSR1, on_usr1, SA_RESTART);
    ready = 0;
    pthread_t t;
    OK(pthread_create(&t, NULL, waits_on_cond, NULL));
    wait_for(&reached, 1);
    OK(pthread_mutex_lock(&mu)); /* it is in the wait */
    OK(pthread_mutex_unlock(&mu));
    pause_ms(10);
    OK(pthread_kill(t, SIGUSR1));
    wait_for(&handled, 1);
    CHECK(pthread_equal(atomic_load(&handled_on), t));
    OK(pthread_mutex_lock(&mu));
    ready = 1;
    OK(pthread_cond_signal(&cv));
    OK(pthread_mutex_unlock(&mu));
    OK(pthread_join(t, NULL));
}

static int pipe_fds[2];

static void *reads(void *arg)
{
    char c;
    atomic_fetch_add(&reached, 1);
    errno = 0;
    CHECK_EQ(read(pipe_fds[0], &c, 1), -1); /* no SA_RESTART: interrupted */
    CHECK_EQ(errno, EINTR);
    atomic_store(&done, 1);
    return (void *)1;
}

static void ends_read_with_eintr(void)
{
    reset();
    atomic_store(&done, 0);
    install(SIGUSR1, on_usr1, 0);
    CHECK_EQ(pipe(pipe_fds), 0);
    pthread_t t;
    OK(pthread_create(&t, NULL, reads, NULL));
    wait_for(&reached, 1);
    pause_ms(20);
    kill_until_done(t, SIGUSR1);
    void *r;
    OK(pthread_join(t, &r));
    CHECK(r == (void *)1);
    CHECK(pthread_equal(atomic_load(&handled_on), t));
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

static void *sleeps_briefly(void *arg)
{
    atomic_fetch_add(&reached, 1);
    while (atomic_load(&handled) == 0)
        pause_ms(1);
    return NULL;
}

static void sigqueue_gives_value(void)
{
    reset();
    install_info(SIGRTMIN + 1);
    pthread_t t;
    OK(pthread_create(&t, NULL, sleeps_briefly, NULL));
    wait_for(&reached, 1);
    union sigval v = { .sival_int = 4242 };
    OK(pthread_sigqueue(t, SIGRTMIN + 1, v));
    OK(pthread_join(t, NULL));
    CHECK(pthread_equal(atomic_load(&handled_on), t));
    CHECK_EQ(atomic_load(&last_code), SI_QUEUE);
    CHECK_EQ(atomic_load(&last_value), 4242);
}

static void to_self_runs_before_return(void)
{
    reset();
    install_info(SIGUSR2);
    OK(pthread_kill(pthread_self(), SIGUSR2));
    CHECK_EQ(atomic_load(&handled), 1);
    CHECK_EQ(atomic_load(&last_code), SI_TKILL);
    union sigval v = { .sival_int = 7 };
    OK(pthread_sigqueue(pthread_self(), SIGUSR2, v));
    CHECK_EQ(atomic_load(&handled), 2);
    CHECK_EQ(atomic_load(&last_code), SI_QUEUE);
    CHECK_EQ(atomic_load(&last_value), 7);
}

static void *exits_when_told(void *arg)
{
    atomic_fetch_add(&reached, 1);
    while (!atomic_load(&stop))
        pause_ms(1);
    return NULL;
}

static void ignored_and_invalid(void)
{
    reset();
    atomic_store(&stop, false);
    pthread_t t;
    OK(pthread_create(&t, NULL, exits_when_told, NULL));
    wait_for(&reached, 1);
    install(SIGUSR1, SIG_IGN, 0);
    OK(pthread_kill(t, SIGUSR1)); /* discarded */
    OK(pthread_kill(t, 0));       /* the thread exists */
    FAILS(pthread_kill(t, -1), EINVAL);
    FAILS(pthread_kill(t, NSIG), EINVAL);
    FAILS(pthread_kill(t, 32), EINVAL); /* the C library's own signals */
    pause_ms(10);
    atomic_store(&stop, true);
    OK(pthread_join(t, NULL));
    install(SIGUSR1, SIG_DFL, 0);
}

#define MANY 300

static void *counts(void *arg)
{
    atomic_fetch_add(&reached, 1);
    while (atomic_load(&handled) < MANY)
        sched_yield();
    return NULL;
}

/* One at a time (a second before the first is taken may merge with it, as
 * for any standard signal), every signal is handled, on its thread. */
static void many_one_at_a_time(void)
{
    reset();
    install(SIGUSR1, on_usr1, SA_RESTART);
    pthread_t t;
    OK(pthread_create(&t, NULL, counts, NULL));
    wait_for(&reached, 1);
    for (int i = 1; i <= MANY; i++) {
        OK(pthread_kill(t, SIGUSR1));
        wait_for(&handled, i);
        CHECK(pthread_equal(atomic_load(&handled_on), t));
    }
    OK(pthread_join(t, NULL));
}

int main(void)
{
    RUN_CASE(to_a_computing_thread, 10);
    RUN_CASE(ends_nanosleep_with_eintr, 10);
    RUN_CASE(while_in_sem_wait, 10);
    RUN_CASE(while_in_cond_wait, 10);
    RUN_CASE(ends_read_with_eintr, 10);
    RUN_CASE(sigqueue_gives_value, 10);
    RUN_CASE(to_self_runs_before_return, 10);
    RUN_CASE(ignored_and_invalid, 10);
    RUN_CASE(many_one_at_a_time, 60);
    return 0;
}
