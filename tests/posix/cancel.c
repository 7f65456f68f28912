/* SPDX-License-Identifier: MIT */
/* Cancellation: pthread_cancel, pthread_setcancelstate, pthread_setcanceltype,
 * pthread_testcancel, cleanup handlers, and the cancellation points.
 *
 * "The cancellation processing in the target thread shall run
 * asynchronously with respect to the calling thread returning from
 * pthread_cancel()." (pthread_cancel) "When a cancellation request is acted
 * upon, [...] the cancellation cleanup handlers shall be called [...] the
 * thread-specific data destructor functions shall be called [...] the
 * thread shall be terminated" and a join of it yields PTHREAD_CANCELED.
 * "A side-effect of acting upon a cancellation request while in a condition
 * wait is that the mutex is (in effect) re-acquired before calling the first
 * cancellation cleanup handler." (pthread_cond_wait) A condition signal that
 * a cancelled waiter could have taken is not lost. Cancellation points are
 * listed in XSH 2.9.5: among them pthread_cond_wait, pthread_cond_timedwait,
 * pthread_join, sem_wait, sem_timedwait, pthread_testcancel, read, nanosleep.
 *
 * No case is left out for a glibc deviation. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

#define MS 1000000ull

static atomic_int cleanups, destructors, reached;

static void count_cleanup(void *arg) { atomic_fetch_add(&cleanups, 1); }

static void reset(void)
{
    atomic_store(&cleanups, 0);
    atomic_store(&destructors, 0);
    atomic_store(&reached, 0);
}

static void pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Wait until `reached` is at least n (the threads got to where they block). */
static void wait_reached(int n)
{
    uint64_t give_up = conform_now(CLOCK_MONOTONIC) + 5000 * MS;
    while (atomic_load(&reached) < n) {
        CHECK(conform_now(CLOCK_MONOTONIC) < give_up);
        pause_ms(1);
    }
}

static void join_cancelled(pthread_t t)
{
    void *r = NULL;
    OK(pthread_join(t, &r));
    CHECK(r == PTHREAD_CANCELED);
}

/* ------------------------------------------------------------- cases */

static void *spin_testcancel(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    atomic_fetch_add(&reached, 1);
    for (;;)
        pthread_testcancel();
    pthread_cleanup_pop(0);
    return NULL;
}

static void testcancel_acts(void)
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, NULL, spin_testcancel, NULL));
    wait_reached(1);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&cleanups), 1);
}

static pthread_key_t key;

static void key_destructor(void *v) { atomic_fetch_add(&destructors, 1); }

static void nested_cleanup(void *arg)
{
    /* Handlers run last pushed first: arg is the order this one must see. */
    CHECK_EQ(atomic_fetch_add(&cleanups, 1), (int)(intptr_t)arg);
}

static void *three_handlers(void *arg)
{
    OK(pthread_setspecific(key, (void *)1));
    pthread_cleanup_push(nested_cleanup, (void *)2);
    pthread_cleanup_push(nested_cleanup, (void *)1);
    pthread_cleanup_push(nested_cleanup, (void *)0);
    atomic_fetch_add(&reached, 1);
    for (;;)
        pthread_testcancel();
    pthread_cleanup_pop(0);
    pthread_cleanup_pop(0);
    pthread_cleanup_pop(0);
    return NULL;
}

static void handlers_then_destructors(void)
{
    reset();
    OK(pthread_key_create(&key, key_destructor));
    pthread_t t;
    OK(pthread_create(&t, NULL, three_handlers, NULL));
    wait_reached(1);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&cleanups), 3);
    CHECK_EQ(atomic_load(&destructors), 1);
    OK(pthread_key_delete(key));
}

struct cv_case {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready;
};

static void unlock_cleanup(void *arg)
{
    /* An error-checking mutex: unlock succeeds only for its owner. */
    OK(pthread_mutex_unlock(arg));
    atomic_fetch_add(&cleanups, 1);
}

static void *cond_waiter(void *arg)
{
    struct cv_case *c = arg;
    OK(pthread_mutex_lock(&c->mu));
    pthread_cleanup_push(unlock_cleanup, &c->mu);
    atomic_fetch_add(&reached, 1);
    while (!c->ready)
        OK(pthread_cond_wait(&c->cv, &c->mu));
    c->ready--;
    pthread_cleanup_pop(1);
    return (void *)1;
}

static void cv_case_init(struct cv_case *c)
{
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK));
    OK(pthread_mutex_init(&c->mu, &a));
    OK(pthread_mutexattr_destroy(&a));
    OK(pthread_cond_init(&c->cv, NULL));
    c->ready = 0;
}

static void cv_case_destroy(struct cv_case *c)
{
    OK(pthread_cond_destroy(&c->cv));
    OK(pthread_mutex_destroy(&c->mu));
}

/* The waiter is asleep in the wait (it holds no mutex: we can take it). */
static void wait_asleep(struct cv_case *c, int n)
{
    wait_reached(n);
    OK(pthread_mutex_lock(&c->mu));
    OK(pthread_mutex_unlock(&c->mu));
    pause_ms(10);
}

static void cond_wait_cancelled_with_mutex(void)
{
    reset();
    struct cv_case c;
    cv_case_init(&c);
    pthread_t t;
    OK(pthread_create(&t, NULL, cond_waiter, &c));
    wait_asleep(&c, 1);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&cleanups), 1);
    OK(pthread_mutex_lock(&c.mu)); /* the handler released it */
    OK(pthread_mutex_unlock(&c.mu));
    cv_case_destroy(&c);
}

static void *timed_cond_waiter(void *arg)
{
    struct cv_case *c = arg;
    OK(pthread_mutex_lock(&c->mu));
    pthread_cleanup_push(unlock_cleanup, &c->mu);
    atomic_fetch_add(&reached, 1);
    struct timespec until = conform_deadline(CLOCK_REALTIME, 60000 * MS);
    while (!c->ready)
        CHECK(pthread_cond_timedwait(&c->cv, &c->mu, &until) != ETIMEDOUT);
    pthread_cleanup_pop(1);
    return NULL;
}

static void cond_timedwait_cancelled(void)
{
    reset();
    struct cv_case c;
    cv_case_init(&c);
    pthread_t t;
    OK(pthread_create(&t, NULL, timed_cond_waiter, &c));
    wait_asleep(&c, 1);
    uint64_t t0 = conform_now(CLOCK_MONOTONIC);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 < 10000 * MS); /* not at the deadline */
    CHECK_EQ(atomic_load(&cleanups), 1);
    cv_case_destroy(&c);
}

/* A cancelled waiter does not swallow a signal: of two waiters, one is
 * cancelled and one signal still wakes the other. */
static void cond_signal_not_lost(void)
{
    reset();
    struct cv_case c;
    cv_case_init(&c);
    pthread_t a, b;
    OK(pthread_create(&a, NULL, cond_waiter, &c));
    OK(pthread_create(&b, NULL, cond_waiter, &c));
    wait_asleep(&c, 2);
    OK(pthread_mutex_lock(&c.mu));
    OK(pthread_cancel(a));
    c.ready = 1;
    OK(pthread_cond_signal(&c.cv));
    OK(pthread_mutex_unlock(&c.mu));
    void *ra, *rb;
    OK(pthread_join(a, &ra));
    if (ra == PTHREAD_CANCELED) {
        OK(pthread_join(b, &rb)); /* the signal went to b */
        CHECK(rb == (void *)1);
    } else {
        CHECK(ra == (void *)1); /* a took the signal before the request acted */
        OK(pthread_cancel(b));
        join_cancelled(b);
    }
    cv_case_destroy(&c);
}

static sem_t sem;

static void *sem_waiter(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    atomic_fetch_add(&reached, 1);
    CHECK_EQ(sem_wait(&sem), 0);
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void sem_wait_cancelled(void)
{
    reset();
    OK(sem_init(&sem, 0, 0));
    pthread_t t;
    OK(pthread_create(&t, NULL, sem_waiter, NULL));
    wait_reached(1);
    pause_ms(10);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&cleanups), 1);
    /* The semaphore is as it was: a post is there for the next waiter. */
    OK(sem_post(&sem));
    OK(sem_trywait(&sem));
    OK(sem_destroy(&sem));
}

static pthread_t join_target;

static void *joiner(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    atomic_fetch_add(&reached, 1);
    OK(pthread_join(join_target, NULL));
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void *wait_sem_then_return(void *arg)
{
    CHECK_EQ(sem_wait(&sem), 0);
    return (void *)7;
}

static void join_cancelled_target_stays_joinable(void)
{
    reset();
    OK(sem_init(&sem, 0, 0));
    OK(pthread_create(&join_target, NULL, wait_sem_then_return, NULL));
    pthread_t j;
    OK(pthread_create(&j, NULL, joiner, NULL));
    wait_reached(1);
    pause_ms(10);
    OK(pthread_cancel(j));
    join_cancelled(j);
    CHECK_EQ(atomic_load(&cleanups), 1);
    OK(sem_post(&sem));
    void *r;
    OK(pthread_join(join_target, &r)); /* "the target thread shall not be detached" */
    CHECK(r == (void *)7);
    OK(sem_destroy(&sem));
}

static int pipe_fds[2];

static void *reader(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    atomic_fetch_add(&reached, 1);
    char c;
    CHECK(read(pipe_fds[0], &c, 1) >= 0);
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void read_cancelled(void)
{
    reset();
    CHECK_EQ(pipe(pipe_fds), 0);
    pthread_t t;
    OK(pthread_create(&t, NULL, reader, NULL));
    wait_reached(1);
    pause_ms(20);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&cleanups), 1);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

static void *sleeper(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    atomic_fetch_add(&reached, 1);
    struct timespec ts = { 60, 0 };
    nanosleep(&ts, NULL);
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void nanosleep_cancelled(void)
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, NULL, sleeper, NULL));
    wait_reached(1);
    pause_ms(20);
    uint64_t t0 = conform_now(CLOCK_MONOTONIC);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 < 10000 * MS);
    CHECK_EQ(atomic_load(&cleanups), 1);
}

/* ------------------------------------------- more cancellation points */

/* XSH 2.9.5: "Cancellation points shall occur when a thread is executing the
 * following functions: accept() [...] clock_nanosleep() [...] pause() poll()
 * [...] recv() [...] select() sem_timedwait() sem_wait() [...] sleep() [...]
 * waitpid() write() [...]". usleep was one while it was in the standard
 * (SUSv3); sem_clockwait, pthread_cond_clockwait and pthread_timedjoin_np /
 * pthread_clockjoin_np are glibc's, cancellation points there as the waits
 * they extend are. Each case: a thread pushes a handler, says it got there,
 * blocks in the call (for ever, or a minute); it is cancelled once asleep,
 * and ends soon with PTHREAD_CANCELED, having run the handler once. A call
 * that comes back instead fails the case; one that never comes back ends it
 * by RUN_CASE's alarm.
 *
 * Not here: sigwait, whose signals "shall have been blocked at the time of
 * the call" (sigwait): blocking one on an ito thread (pthread_sigmask) is
 * not supported yet. */
struct point {
    void (*setup)(void);    /* on the main thread, before the thread starts; or NULL */
    void (*block)(void);    /* on the thread: does not return unless it fails */
    void (*teardown)(void); /* after the join; or NULL */
};

/* The call came back: it did not act on the request. */
static void came_back(const char *call, long r)
{
    fprintf(stderr, "[%s] %s returned %ld (errno %d) instead of acting on the cancellation\n",
            conform_case, call, r, errno);
    abort();
}

static void *blocks_in_point(void *arg)
{
    const struct point *p = arg;
    pthread_cleanup_push(count_cleanup, NULL);
    atomic_fetch_add(&reached, 1);
    p->block();
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void cancel_blocked(const struct point *p)
{
    reset();
    if (p->setup)
        p->setup();
    pthread_t t;
    OK(pthread_create(&t, NULL, blocks_in_point, (void *)p));
    wait_reached(1);
    pause_ms(20); /* in the call by now, asleep */
    uint64_t t0 = conform_now(CLOCK_MONOTONIC);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 < 5000 * MS); /* not at a deadline */
    CHECK_EQ(atomic_load(&cleanups), 1);
    if (p->teardown)
        p->teardown();
}

/* The case NAME_cancelled: a thread blocked in block_NAME. */
#define POINT_CASE(name, setup, teardown)                                               \
    static void name##_cancelled(void)                                                  \
    {                                                                                   \
        static const struct point p = { setup, block_##name, teardown };               \
        cancel_blocked(&p);                                                             \
    }

/* A signal handler that returns may end poll, select, pause and the like
 * with EINTR: that is no answer to the request, so each call is made again. */

static void open_pipe(void) { CHECK_EQ(pipe(pipe_fds), 0); }

static void close_pipe(void)
{
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

/* A pipe with no room for even one byte more. */
static void open_full_pipe(void)
{
    open_pipe();
    int flags = fcntl(pipe_fds[1], F_GETFL);
    CHECK(flags >= 0);
    CHECK_EQ(fcntl(pipe_fds[1], F_SETFL, flags | O_NONBLOCK), 0);
    static char chunk[4096];
    /* Writes of at most PIPE_BUF bytes are whole or EAGAIN: halve down to 1. */
    for (size_t n = sizeof chunk; n > 0; n /= 2)
        while (write(pipe_fds[1], chunk, n) == (ssize_t)n)
            ;
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(fcntl(pipe_fds[1], F_SETFL, flags), 0); /* blocking again */
}

static void block_write(void)
{
    char c = 0;
    ssize_t r;
    while ((r = write(pipe_fds[1], &c, 1)) < 0 && errno == EINTR)
        ;
    came_back("write", r);
}
POINT_CASE(write, open_full_pipe, close_pipe)

static int sock_fds[2];

static void listen_unix(void)
{
    sock_fds[0] = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(sock_fds[0] >= 0);
    /* Linux: an address of the family alone binds a fresh abstract name. */
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    CHECK_EQ(bind(sock_fds[0], (struct sockaddr *)&a, sizeof(sa_family_t)), 0);
    CHECK_EQ(listen(sock_fds[0], 1), 0);
}

static void close_listener(void) { close(sock_fds[0]); }

static void block_accept(void)
{
    int r;
    while ((r = accept(sock_fds[0], NULL, NULL)) < 0 && errno == EINTR)
        ;
    came_back("accept", r);
}
POINT_CASE(accept, listen_unix, close_listener)

static void open_socketpair(void) { CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sock_fds), 0); }

static void close_socketpair(void)
{
    close(sock_fds[0]);
    close(sock_fds[1]);
}

static void block_recv(void)
{
    char c;
    ssize_t r;
    while ((r = recv(sock_fds[0], &c, 1, 0)) < 0 && errno == EINTR)
        ;
    came_back("recv", r);
}
POINT_CASE(recv, open_socketpair, close_socketpair)

static void block_poll(void)
{
    struct pollfd p = { .fd = pipe_fds[0], .events = POLLIN };
    int r;
    while ((r = poll(&p, 1, -1)) < 0 && errno == EINTR)
        ;
    came_back("poll", r);
}
POINT_CASE(poll, open_pipe, close_pipe)

static void block_select(void)
{
    int r;
    do {
        fd_set in;
        FD_ZERO(&in);
        FD_SET(pipe_fds[0], &in);
        r = select(pipe_fds[0] + 1, &in, NULL, NULL, NULL);
    } while (r < 0 && errno == EINTR);
    came_back("select", r);
}
POINT_CASE(select, open_pipe, close_pipe)

static void block_pause(void)
{
    for (;;)
        pause(); /* returns only after a handler: -1, EINTR */
}
POINT_CASE(pause, NULL, NULL)

static pid_t child;

static void fork_sleeping_child(void)
{
    child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        alarm(30); /* gone in the end even if the parent dies first */
        for (;;)
            pause();
    }
}

static void kill_child(void)
{
    int status;
    CHECK_EQ(kill(child, SIGKILL), 0);
    CHECK_EQ(waitpid(child, &status, 0), child); /* the cancelled wait reaped nothing */
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void block_waitpid(void)
{
    int status;
    pid_t r;
    while ((r = waitpid(child, &status, 0)) < 0 && errno == EINTR)
        ;
    came_back("waitpid", r);
}
POINT_CASE(waitpid, fork_sleeping_child, kill_child)

static void block_usleep(void) { came_back("usleep", usleep(60000000)); }
POINT_CASE(usleep, NULL, NULL)

static void block_sleep(void) { came_back("sleep", (long)sleep(60)); }
POINT_CASE(sleep, NULL, NULL)

static void block_clock_nanosleep_relative(void)
{
    struct timespec ts = { 60, 0 };
    int e;
    while ((e = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts)) == EINTR)
        ;
    came_back("clock_nanosleep", e);
}
POINT_CASE(clock_nanosleep_relative, NULL, NULL)

static void block_clock_nanosleep_abstime(void)
{
    struct timespec until = conform_deadline(CLOCK_MONOTONIC, 60000 * MS);
    int e;
    while ((e = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL)) == EINTR)
        ;
    came_back("clock_nanosleep", e);
}
POINT_CASE(clock_nanosleep_abstime, NULL, NULL)

static void init_sem(void) { OK(sem_init(&sem, 0, 0)); }

/* The semaphore is as it was: a post is there for the next waiter. */
static void check_destroy_sem(void)
{
    OK(sem_post(&sem));
    OK(sem_trywait(&sem));
    OK(sem_destroy(&sem));
}

static void block_sem_timedwait(void)
{
    struct timespec until = conform_deadline(CLOCK_REALTIME, 60000 * MS);
    int r;
    while ((r = sem_timedwait(&sem, &until)) < 0 && errno == EINTR)
        ;
    came_back("sem_timedwait", r);
}
POINT_CASE(sem_timedwait, init_sem, check_destroy_sem)

static void block_sem_clockwait(void)
{
    struct timespec until = conform_deadline(CLOCK_MONOTONIC, 60000 * MS);
    int r;
    while ((r = sem_clockwait(&sem, CLOCK_MONOTONIC, &until)) < 0 && errno == EINTR)
        ;
    came_back("sem_clockwait", r);
}
POINT_CASE(sem_clockwait, init_sem, check_destroy_sem)

static void start_join_target(void)
{
    OK(sem_init(&sem, 0, 0));
    OK(pthread_create(&join_target, NULL, wait_sem_then_return, NULL));
}

/* "the target thread shall not be detached" (pthread_join): still joinable. */
static void join_target_after(void)
{
    OK(sem_post(&sem));
    void *r;
    OK(pthread_join(join_target, &r));
    CHECK(r == (void *)7);
    OK(sem_destroy(&sem));
}

static void block_pthread_timedjoin_np(void)
{
    struct timespec until = conform_deadline(CLOCK_REALTIME, 60000 * MS);
    came_back("pthread_timedjoin_np", pthread_timedjoin_np(join_target, NULL, &until));
}
POINT_CASE(pthread_timedjoin_np, start_join_target, join_target_after)

static void block_pthread_clockjoin_np(void)
{
    struct timespec until = conform_deadline(CLOCK_MONOTONIC, 60000 * MS);
    came_back("pthread_clockjoin_np",
              pthread_clockjoin_np(join_target, NULL, CLOCK_MONOTONIC, &until));
}
POINT_CASE(pthread_clockjoin_np, start_join_target, join_target_after)

/* pthread_cond_clockwait: as pthread_cond_timedwait, the mutex is the
 * caller's again when the first handler runs. */
static void *clock_cond_waiter(void *arg)
{
    struct cv_case *c = arg;
    OK(pthread_mutex_lock(&c->mu));
    pthread_cleanup_push(unlock_cleanup, &c->mu);
    atomic_fetch_add(&reached, 1);
    struct timespec until = conform_deadline(CLOCK_MONOTONIC, 60000 * MS);
    while (!c->ready)
        CHECK(pthread_cond_clockwait(&c->cv, &c->mu, CLOCK_MONOTONIC, &until) != ETIMEDOUT);
    pthread_cleanup_pop(1);
    return NULL;
}

static void cond_clockwait_cancelled(void)
{
    reset();
    struct cv_case c;
    cv_case_init(&c);
    pthread_t t;
    OK(pthread_create(&t, NULL, clock_cond_waiter, &c));
    wait_asleep(&c, 1);
    uint64_t t0 = conform_now(CLOCK_MONOTONIC);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 < 5000 * MS);
    CHECK_EQ(atomic_load(&cleanups), 1);
    OK(pthread_mutex_lock(&c.mu)); /* the handler released it */
    OK(pthread_mutex_unlock(&c.mu));
    cv_case_destroy(&c);
}

/* "When cancelability is enabled and the cancelability type is
 * PTHREAD_CANCEL_DEFERRED, cancellation requests are held pending until a
 * cancellation point [...] is reached." (XSH 2.9.5) pthread_mutex_lock and
 * pthread_mutex_unlock are none ("An implementation shall not introduce
 * cancellation points into any other functions"), nor is clock_gettime: a
 * thread with a request pending that only computes and calls those runs on,
 * and ends at its pthread_testcancel. */
static atomic_int requested, survived;
static pthread_mutex_t compute_mu = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long compute_sink;

static void lock_compute_unlock(void)
{
    OK(pthread_mutex_lock(&compute_mu));
    compute_sink++;
    OK(pthread_mutex_unlock(&compute_mu));
}

static void *computes_with_request_pending(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    atomic_fetch_add(&reached, 1);
    while (!atomic_load(&requested))
        lock_compute_unlock();
    uint64_t until = conform_now(CLOCK_MONOTONIC) + 20 * MS;
    while (conform_now(CLOCK_MONOTONIC) < until)
        lock_compute_unlock();
    atomic_store(&survived, 1);
    pthread_testcancel(); /* acts here */
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void unreached_point_does_not_act(void)
{
    reset();
    atomic_store(&requested, 0);
    atomic_store(&survived, 0);
    pthread_t t;
    OK(pthread_create(&t, NULL, computes_with_request_pending, NULL));
    wait_reached(1);
    OK(pthread_cancel(t));
    atomic_store(&requested, 1);
    join_cancelled(t);
    CHECK_EQ(atomic_load(&survived), 1);
    CHECK_EQ(atomic_load(&cleanups), 1);
}

static atomic_int disabled_phase;

static void *disables(void *arg)
{
    int old;
    OK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old));
    CHECK_EQ(old, PTHREAD_CANCEL_ENABLE);
    atomic_fetch_add(&reached, 1);
    /* Cancelled now, but disabled: the cancellation points below do not act. */
    while (atomic_load(&disabled_phase) == 0)
        pthread_testcancel();
    CHECK_EQ(sem_wait(&sem), 0); /* posted by the main thread: not interrupted */
    pause_ms(5);
    atomic_store(&disabled_phase, 2);
    OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old));
    CHECK_EQ(old, PTHREAD_CANCEL_DISABLE);
    pthread_testcancel(); /* acts here */
    return (void *)1;
}

static void disabled_then_enabled(void)
{
    reset();
    atomic_store(&disabled_phase, 0);
    OK(sem_init(&sem, 0, 0));
    pthread_t t;
    OK(pthread_create(&t, NULL, disables, NULL));
    wait_reached(1);
    OK(pthread_cancel(t));
    pause_ms(10);
    atomic_store(&disabled_phase, 1);
    pause_ms(10);
    OK(sem_post(&sem));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&disabled_phase), 2);
    OK(sem_destroy(&sem));
}

static volatile unsigned long spin_sink;

static void *async_spinner(void *arg)
{
    int old;
    pthread_cleanup_push(count_cleanup, NULL);
    OK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old));
    CHECK_EQ(old, PTHREAD_CANCEL_DEFERRED);
    atomic_fetch_add(&reached, 1);
    for (;;) /* no cancellation point */
        spin_sink++;
    pthread_cleanup_pop(0);
    return NULL;
}

static void asynchronous_compute_loop(void)
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, NULL, async_spinner, NULL));
    wait_reached(1);
    pause_ms(5);
    OK(pthread_cancel(t));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&cleanups), 1);
}

static void *first_thing_testcancel(void *arg)
{
    pthread_testcancel();
    return (void *)1;
}

static void cancelled_before_it_runs(void)
{
    pthread_t t;
    OK(pthread_create(&t, NULL, first_thing_testcancel, NULL));
    OK(pthread_cancel(t));
    void *r;
    OK(pthread_join(t, &r));
    /* It may have passed its only cancellation point before the request. */
    CHECK(r == PTHREAD_CANCELED || r == (void *)1);
}

static void *returns_seven(void *arg) { return (void *)7; }

static void cancel_after_exit(void)
{
    pthread_t t;
    OK(pthread_create(&t, NULL, returns_seven, NULL));
    pause_ms(20);
    OK(pthread_cancel(t)); /* exited, not joined: still a valid ID */
    void *r;
    OK(pthread_join(t, &r));
    CHECK(r == (void *)7);
}

static void *cancels_itself(void *arg)
{
    pthread_cleanup_push(count_cleanup, NULL);
    OK(pthread_cancel(pthread_self()));
    atomic_fetch_add(&reached, 1); /* deferred: nothing happens yet */
    pthread_testcancel();
    pthread_cleanup_pop(0);
    return (void *)1;
}

static void self_cancel_deferred(void)
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, NULL, cancels_itself, NULL));
    join_cancelled(t);
    CHECK_EQ(atomic_load(&reached), 1);
    CHECK_EQ(atomic_load(&cleanups), 1);
}

static void bad_arguments(void)
{
    int old;
    FAILS(pthread_setcancelstate(42, &old), EINVAL);
    FAILS(pthread_setcanceltype(42, &old), EINVAL);
    OK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL));
    OK(pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL));
}

#define MANY 1000

static void many_cond_waiters(void)
{
    reset();
    struct cv_case c;
    cv_case_init(&c);
    static pthread_t ts[MANY];
    pthread_attr_t a;
    OK(pthread_attr_init(&a));
    OK(pthread_attr_setstacksize(&a, 64 * 1024));
    for (int i = 0; i < MANY; i++)
        OK(pthread_create(&ts[i], &a, cond_waiter, &c));
    OK(pthread_attr_destroy(&a));
    wait_asleep(&c, MANY);
    for (int i = 0; i < MANY; i++)
        OK(pthread_cancel(ts[i]));
    for (int i = 0; i < MANY; i++)
        join_cancelled(ts[i]);
    CHECK_EQ(atomic_load(&cleanups), MANY);
    cv_case_destroy(&c);
}

int main(void)
{
    RUN_CASE(testcancel_acts, 10);
    RUN_CASE(handlers_then_destructors, 10);
    RUN_CASE(cond_wait_cancelled_with_mutex, 10);
    RUN_CASE(cond_timedwait_cancelled, 20);
    RUN_CASE(cond_signal_not_lost, 10);
    RUN_CASE(sem_wait_cancelled, 10);
    RUN_CASE(join_cancelled_target_stays_joinable, 10);
    RUN_CASE(read_cancelled, 10);
    RUN_CASE(nanosleep_cancelled, 20);
    RUN_CASE(write_cancelled, 10);
    RUN_CASE(accept_cancelled, 10);
    RUN_CASE(recv_cancelled, 10);
    RUN_CASE(poll_cancelled, 10);
    RUN_CASE(select_cancelled, 10);
    RUN_CASE(pause_cancelled, 10);
    RUN_CASE(waitpid_cancelled, 10);
    RUN_CASE(usleep_cancelled, 10);
    RUN_CASE(sleep_cancelled, 10);
    RUN_CASE(clock_nanosleep_relative_cancelled, 10);
    RUN_CASE(clock_nanosleep_abstime_cancelled, 10);
    RUN_CASE(sem_timedwait_cancelled, 10);
    RUN_CASE(sem_clockwait_cancelled, 10);
    RUN_CASE(cond_clockwait_cancelled, 10);
    RUN_CASE(pthread_timedjoin_np_cancelled, 10);
    RUN_CASE(pthread_clockjoin_np_cancelled, 10);
    RUN_CASE(unreached_point_does_not_act, 10);
    RUN_CASE(disabled_then_enabled, 10);
    RUN_CASE(asynchronous_compute_loop, 10);
    RUN_CASE(cancelled_before_it_runs, 10);
    RUN_CASE(cancel_after_exit, 10);
    RUN_CASE(self_cancel_deferred, 10);
    RUN_CASE(bad_arguments, 10);
    RUN_CASE(many_cond_waiters, 60);
    return 0;
}
