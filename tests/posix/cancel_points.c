/* SPDX-License-Identifier: MIT */
/* Cancellation at each cancellation point (XSH 2.9.5), one case per call,
 * and a point not reached that does not act. The semantics of a request
 * (handlers, destructors, state, type) are cancel.c's.
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
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cancel.h"

static int pipe_fds[2];
static sem_t sem;
static pthread_t join_target;

static void *wait_sem_then_return(void *arg)
{
    CHECK_EQ(sem_wait(&sem), 0);
    return (void *)7;
}

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

/* An epoll wait; its cleanup handlers run under the thread's own signal
 * mask, in the kernel too (ito blocks every signal while it waits). */
static int epoll_fd = -1;

static void open_pipe_epoll(void)
{
    open_pipe();
    epoll_fd = epoll_create1(0);
    CHECK(epoll_fd >= 0);
    struct epoll_event ev = { .events = EPOLLIN };
    CHECK_EQ(epoll_ctl(epoll_fd, EPOLL_CTL_ADD, pipe_fds[0], &ev), 0);
}

static void close_pipe_epoll(void)
{
    close(epoll_fd);
    close_pipe();
}

static void kernel_accepts_usr1(void *arg)
{
    uint64_t blocked = 0;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &blocked, sizeof blocked);
    CHECK(!(blocked & (1ull << (SIGUSR1 - 1))));
}

static void block_epoll_wait(void)
{
    struct epoll_event ev;
    int r;
    pthread_cleanup_push(kernel_accepts_usr1, NULL);
    while ((r = epoll_wait(epoll_fd, &ev, 1, -1)) < 0 && errno == EINTR)
        ;
    pthread_cleanup_pop(0);
    came_back("epoll_wait", r);
}
POINT_CASE(epoll_wait, open_pipe_epoll, close_pipe_epoll)

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

int main(void)
{
    RUN_CASE(write_cancelled, 10);
    RUN_CASE(accept_cancelled, 10);
    RUN_CASE(recv_cancelled, 10);
    RUN_CASE(poll_cancelled, 10);
    RUN_CASE(epoll_wait_cancelled, 10);
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
    return 0;
}
