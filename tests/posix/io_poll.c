/* SPDX-License-Identifier: MIT */
/* Waiting for descriptors on threads: poll, ppoll, select, pselect and
 * epoll_wait as POSIX and their Linux manuals describe them — a signal's
 * handler ends the wait with EINTR even under SA_RESTART, timeouts (ppoll's
 * and pselect's to the nanosecond, left as they were; select's written back
 * with the time left), sets and errors, waits that end when a descriptor
 * becomes ready, and ppoll's and pselect's signal mask, in place only while
 * they wait (a signal it blocks stays pending; a pending one it unblocks,
 * sent to the thread or to the process, ends the call at once). An epoll
 * wait ends with EINTR only for a signal whose handler ran (one sent to the
 * process too), never for what other threads do meanwhile (on ito: their
 * I/O, the signals sent to them), and epoll_pwait's mask is its own. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>

#include "conform.h"
#include "io_waits.h"

static int ep_shared;   /* (epoll_wait_wakes_when_ready) */

/* A call interrupted by a handler without SA_RESTART (or by any handler,
 * for calls the kernel never restarts): -1 and EINTR. The signal is sent
 * again until the call has ended, in case the first came before it waited. */
static void *poll_interrupted(void *arg)
{
    struct pollfd pf = { .fd = p[0], .events = POLLIN };
    FAILS_INTERRUPTED(poll(&pf, 1, -1));
    CHECK(atomic_load(&handled) >= 1);
    atomic_store(&finished, 1);
    return NULL;
}

/* An epoll descriptor watching p[0] for input. */
static int epoll_on_p0(void)
{
    int ep = epoll_create1(0);
    CHECK(ep >= 0);
    struct epoll_event ev = { .events = EPOLLIN };
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
    return ep;
}

/* (The handler has run before the call returns.) */
static void *epoll_interrupted(void *arg)
{
    int ep = epoll_on_p0();
    struct epoll_event ev;
    FAILS_INTERRUPTED(epoll_wait(ep, &ev, 1, -1));
    CHECK(atomic_load(&handled) >= 1);
    close(ep);
    atomic_store(&finished, 1);
    return NULL;
}

/* epoll_pwait's mask, in place while it waits: the thread blocks SIGUSR1,
 * the wait's mask accepts it; the handler has run when EINTR comes, and the
 * thread's mask is back. */
static void *epoll_pwait_interrupted(void *arg)
{
    sigset_t usr1, none, now;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigemptyset(&none);
    OK(pthread_sigmask(SIG_BLOCK, &usr1, NULL));
    int ep = epoll_on_p0();
    struct epoll_event ev;
    FAILS_INTERRUPTED(epoll_pwait(ep, &ev, 1, -1, &none));
    CHECK(atomic_load(&handled) >= 1);
    OK(pthread_sigmask(SIG_SETMASK, NULL, &now));
    CHECK(sigismember(&now, SIGUSR1));
    close(ep);
    atomic_store(&finished, 1);
    return NULL;
}

static void *ppoll_interrupted(void *arg)
{
    struct pollfd pf = { .fd = p[0], .events = POLLIN };
    FAILS_INTERRUPTED(ppoll(&pf, 1, NULL, NULL));
    CHECK(atomic_load(&handled) >= 1);
    atomic_store(&finished, 1);
    return NULL;
}

static void *pselect_interrupted(void *arg)
{
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    FAILS_INTERRUPTED(pselect(p[0] + 1, &rd, NULL, NULL, NULL, NULL));
    CHECK(atomic_load(&handled) >= 1);
    atomic_store(&finished, 1);
    return NULL;
}

static void *select_interrupted(void *arg)
{
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    FAILS_INTERRUPTED(select(p[0] + 1, &rd, NULL, NULL, NULL));
    CHECK(atomic_load(&handled) >= 1);
    atomic_store(&finished, 1);
    return NULL;
}

static void poll_fails_with_eintr_even_under_sa_restart(void) { interrupt(poll_interrupted, SA_RESTART, 0); }

static void epoll_wait_fails_with_eintr_even_under_sa_restart(void) { interrupt(epoll_interrupted, SA_RESTART, 0); }

static void epoll_pwait_takes_its_mask(void) { interrupt(epoll_pwait_interrupted, SA_RESTART, 0); }

/* A signal for the process, which only the waiting thread accepts (the
 * initial thread blocks it): its handler runs, and the wait ends. */
static void epoll_wait_is_ended_by_a_signal_for_the_process(void)
{
    install(SA_RESTART);
    CHECK_EQ(pipe(p), 0);
    atomic_store(&reached, 0);
    atomic_store(&finished, 0);
    pthread_t t = start(epoll_interrupted, NULL);
    sigset_t usr1, old;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    OK(pthread_sigmask(SIG_BLOCK, &usr1, &old));
    WAIT_UNTIL(atomic_load(&reached), 5000);
    conform_pause_us(20000);
    for (int i = 0; i < 500 && !atomic_load(&finished); i++) {
        CHECK_EQ(kill(getpid(), SIGUSR1), 0);
        conform_pause_us(10000);
    }
    OK(pthread_join(t, NULL));
    OK(pthread_sigmask(SIG_SETMASK, &old, NULL));   /* (one sent late is handled here) */
    close(p[0]);
    close(p[1]);
}

/* While a thread waits, others read and write pipes and are sent signals:
 * its timed waits (epoll, poll, ppoll, select, pselect) end with 0 at their
 * timeout, never with EINTR. */
enum { BUSY_PAIRS = 4 };
static int busy_pipes[BUSY_PAIRS][2][2];
static atomic_int busy_stop;
static pthread_t busy_threads[BUSY_PAIRS][2];

static void *busy_side(void *arg)
{
    int pair = (int)(intptr_t)arg / 2, side = (int)(intptr_t)arg % 2;
    int in = busy_pipes[pair][side][0], out = busy_pipes[pair][!side][1];
    char c = 'b';
    if (side == 0)
        CHECK_EQ(write(out, &c, 1), 1);
    for (;;) {
        ssize_t r = read(in, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;   /* (no SA_RESTART: a read interrupted by the handler) */
        if (r != 1 || atomic_load(&busy_stop))
            break;
        CHECK_EQ(write(out, &c, 1), 1);
    }
    close(out);   /* the other side's read then ends */
    return NULL;
}

/* Each timed wait in turn, on p[0] (empty): 0 at its timeout, never EINTR. */
static void *timing_out(void *arg)
{
    int ep = epoll_on_p0();
    for (int round = 0; round < 3; round++)
        for (int kind = 0; kind < 5; kind++) {
            uint64_t t0 = conform_now(CLOCK_MONOTONIC);
            struct epoll_event ev;
            struct pollfd pf = { .fd = p[0], .events = POLLIN };
            struct timespec ts = { 0, 60000000 };
            struct timeval tv = { 0, 60000 };
            fd_set rd;
            FD_ZERO(&rd);
            FD_SET(p[0], &rd);
            errno = 0;
            switch (kind) {
            case 0: CHECK_EQ(epoll_wait(ep, &ev, 1, 60), 0); break;
            case 1: CHECK_EQ(poll(&pf, 1, 60), 0); break;
            case 2: CHECK_EQ(ppoll(&pf, 1, &ts, NULL), 0); break;
            case 3: CHECK_EQ(select(p[0] + 1, &rd, NULL, NULL, &tv), 0); break;
            default: CHECK_EQ(pselect(p[0] + 1, &rd, NULL, NULL, &ts, NULL), 0); break;
            }
            CHECK(conform_now(CLOCK_MONOTONIC) - t0 >= 59000000ull);
        }
    close(ep);
    return NULL;
}

static void timed_waits_ignore_other_threads(void)
{
    install(0);
    CHECK_EQ(pipe(p), 0);
    atomic_store(&busy_stop, 0);
    for (int i = 0; i < BUSY_PAIRS; i++) {
        CHECK_EQ(pipe(busy_pipes[i][0]), 0);
        CHECK_EQ(pipe(busy_pipes[i][1]), 0);
        for (int side = 0; side < 2; side++)
            busy_threads[i][side] = start(busy_side, (void *)(intptr_t)(2 * i + side));
    }
    pthread_t t = start(timing_out, NULL);
    int e = EBUSY;
    for (int i = 0; e == EBUSY; i++) {
        OK(pthread_kill(busy_threads[i / 2 % BUSY_PAIRS][i % 2], SIGUSR1));
        conform_pause_us(1000);
        e = pthread_tryjoin_np(t, NULL);
    }
    OK(e);
    atomic_store(&busy_stop, 1);
    for (int i = 0; i < BUSY_PAIRS; i++)
        for (int side = 0; side < 2; side++) {
            OK(pthread_join(busy_threads[i][side], NULL));
            close(busy_pipes[i][side][0]);
        }
    close(p[0]);
    close(p[1]);
}

static void select_fails_with_eintr_even_under_sa_restart(void) { interrupt(select_interrupted, SA_RESTART, 0); }

static void ppoll_fails_with_eintr_even_under_sa_restart(void) { interrupt(ppoll_interrupted, SA_RESTART, 0); }

static void pselect_fails_with_eintr_even_under_sa_restart(void) { interrupt(pselect_interrupted, SA_RESTART, 0); }

static void *epoll_calls(void *arg)
{
    int ep = epoll_create1(0);
    CHECK(ep >= 0);
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 77 }, out[4];
    CHECK_EQ(pipe(p), 0);
    FAILS_ERRNO(epoll_wait(-1, out, 4, 10), EBADF);
    FAILS_ERRNO(epoll_wait(ep, out, 0, 10), EINVAL);
    FAILS_ERRNO(epoll_wait(p[0], out, 4, 10), EINVAL);   /* not an epoll descriptor */
    CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
    /* A timeout with nothing ready: 0, after at least the timeout. */
    uint64_t t0 = conform_now(CLOCK_MONOTONIC);
    CHECK_EQ(epoll_wait(ep, out, 4, 50), 0);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 >= 49000000ull);
    CHECK_EQ(epoll_wait(ep, out, 4, 0), 0);
    /* epoll_pwait2: to the nanosecond, and its timeout checked. */
    struct timespec ts = { 0, 20 * 1000 * 1000 }, bad = { 0, 1000000000L };
    t0 = conform_now(CLOCK_MONOTONIC);
    int r = epoll_pwait2(ep, out, 4, &ts, NULL);
    if (!(r < 0 && errno == ENOSYS)) {   /* (Linux 5.11) */
        CHECK_EQ(r, 0);
        CHECK(conform_now(CLOCK_MONOTONIC) - t0 >= 20000000ull);
        FAILS_ERRNO(epoll_pwait2(ep, out, 4, &bad, NULL), EINVAL);
    }
    /* Ready: the event, with its data. */
    CHECK_EQ(write(p[1], "e", 1), 1);
    CHECK_EQ(epoll_wait(ep, out, 4, -1), 1);
    CHECK_EQ(out[0].data.u64, 77);
    CHECK(out[0].events & EPOLLIN);
    close(ep);
    close(p[0]);
    close(p[1]);
    return NULL;
}

static void epoll_wait_timeouts_and_errors(void) { on_thread(epoll_calls, NULL); }

static void *epoll_waits(void *arg)
{
    struct epoll_event out;
    atomic_store(&reached, 1);
    CHECK_EQ(epoll_wait(ep_shared, &out, 1, -1), 1);
    CHECK_EQ(out.data.u64, 5);
    return NULL;
}

static void epoll_wait_wakes_when_ready(void)
{
    CHECK_EQ(pipe(p), 0);
    ep_shared = epoll_create1(0);
    CHECK(ep_shared >= 0);
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 5 };
    CHECK_EQ(epoll_ctl(ep_shared, EPOLL_CTL_ADD, p[0], &ev), 0);
    atomic_store(&reached, 0);
    pthread_t t = start(epoll_waits, NULL);
    WAIT_UNTIL(atomic_load(&reached), 5000);
    conform_pause_us(20000);
    CHECK_EQ(write(p[1], "w", 1), 1);
    OK(pthread_join(t, NULL));
    close(ep_shared);
    close(p[0]);
    close(p[1]);
}

static void *select_calls(void *arg)
{
    CHECK_EQ(pipe(p), 0);
    fd_set rd, wr;
    /* Nothing to read: 0 after the timeout, the set emptied, and (Linux)
     * the time left written back. */
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    struct timeval tv = { 0, 50000 };
    uint64_t t0 = conform_now(CLOCK_MONOTONIC);
    CHECK_EQ(select(p[0] + 1, &rd, NULL, NULL, &tv), 0);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 >= 49000000ull);
    CHECK(!FD_ISSET(p[0], &rd));
    CHECK_EQ(tv.tv_sec, 0);
    CHECK(tv.tv_usec < 50000);
    /* The write end is writable, the read end not readable: one. */
    FD_ZERO(&rd);
    FD_ZERO(&wr);
    FD_SET(p[0], &rd);
    FD_SET(p[1], &wr);
    tv = (struct timeval){ 1, 0 };
    CHECK_EQ(select(p[1] + 1, &rd, &wr, NULL, &tv), 1);
    CHECK(!FD_ISSET(p[0], &rd));
    CHECK(FD_ISSET(p[1], &wr));
    /* Readable once written; a hang-up is readable too. */
    CHECK_EQ(write(p[1], "s", 1), 1);
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    CHECK_EQ(select(p[0] + 1, &rd, NULL, NULL, NULL), 1);
    CHECK(FD_ISSET(p[0], &rd));
    char c;
    CHECK_EQ(read(p[0], &c, 1), 1);
    close(p[1]);
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    CHECK_EQ(select(p[0] + 1, &rd, NULL, NULL, NULL), 1);
    CHECK(FD_ISSET(p[0], &rd));
    /* A descriptor that is not open: EBADF; a negative count: EINVAL. */
    int closed = p[0];
    close(p[0]);
    FD_ZERO(&rd);
    FD_SET(closed, &rd);
    FAILS_ERRNO(select(closed + 1, &rd, NULL, NULL, NULL), EBADF);
    FAILS_ERRNO(select(-1, NULL, NULL, NULL, NULL), EINVAL);
    return NULL;
}

static void select_timeouts_sets_and_errors(void) { on_thread(select_calls, NULL); }

/* ppoll(2) and pselect(2): poll and select with a timespec timeout, which
 * they leave as it was (the C library hides the kernel's write-back), and a
 * signal mask in place only while they wait. */
static void *ppoll_pselect_calls(void *arg)
{
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    OK(pthread_sigmask(SIG_UNBLOCK, &usr1, NULL));   /* (its creator blocks it) */
    CHECK_EQ(pipe(p), 0);
    struct pollfd pf = { .fd = p[0], .events = POLLIN };
    struct timespec ts = { 0, 3000000 };
    uint64_t t0 = conform_now(CLOCK_MONOTONIC);
    CHECK_EQ(ppoll(&pf, 1, &ts, NULL), 0);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 >= 3000000ull);
    CHECK_EQ(ts.tv_nsec, 3000000);
    /* Finer than a millisecond, many times. */
    ts = (struct timespec){ 0, 200000 };
    t0 = conform_now(CLOCK_MONOTONIC);
    for (int i = 0; i < 20; i++)
        CHECK_EQ(ppoll(&pf, 1, &ts, NULL), 0);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 >= 20 * 200000ull);
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    t0 = conform_now(CLOCK_MONOTONIC);
    CHECK_EQ(pselect(p[0] + 1, &rd, NULL, NULL, &ts, NULL), 0);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 >= 200000ull);
    CHECK(!FD_ISSET(p[0], &rd));
    CHECK_EQ(ts.tv_nsec, 200000);
    /* Ready: at once, whatever the timeout. */
    CHECK_EQ(write(p[1], "q", 1), 1);
    CHECK_EQ(ppoll(&pf, 1, NULL, NULL), 1);
    CHECK(pf.revents & POLLIN);
    FD_SET(p[0], &rd);
    CHECK_EQ(pselect(p[0] + 1, &rd, NULL, NULL, NULL, NULL), 1);
    CHECK(FD_ISSET(p[0], &rd));
    /* A signal blocked by the call's mask stays pending while it waits; the
     * handler runs once the caller's own mask is back. */
    install(SA_RESTART);
    int before = atomic_load(&handled);
    char c;
    CHECK_EQ(read(p[0], &c, 1), 1);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGUSR1);
    ts = (struct timespec){ 0, 20000000 };
    pthread_t me = pthread_self();
    pthread_t k = start(kill_soon, &me);
    CHECK_EQ(ppoll(&pf, 1, &ts, &mask), 0);   /* not EINTR: SIGUSR1 was blocked */
    OK(pthread_join(k, NULL));
    WAIT_UNTIL(atomic_load(&handled) == before + 1, 5000);
    /* A signal pending, blocked by the caller and accepted by the call's
     * mask: its handler runs and the call fails with EINTR, without waiting
     * (the reason ppoll and pselect exist). */
    sigset_t none, old;
    sigemptyset(&none);
    OK(pthread_sigmask(SIG_BLOCK, &mask, &old));
    for (int k2 = 0; k2 < 2; k2++) {
        before = atomic_load(&handled);
        OK(pthread_kill(pthread_self(), SIGUSR1));
        CHECK_EQ(atomic_load(&handled), before);   /* blocked: pending */
        errno = 0;
        FD_ZERO(&rd);
        FD_SET(p[0], &rd);
        if (k2 == 0)
            CHECK_EQ(ppoll(&pf, 1, NULL, &none), -1);
        else
            CHECK_EQ(pselect(p[0] + 1, &rd, NULL, NULL, NULL, &none), -1);
        CHECK_EQ(errno, EINTR);
        CHECK_EQ(atomic_load(&handled), before + 1);
    }
    /* The same for a signal sent to the process while every thread blocks
     * it (the creator of this thread blocks SIGUSR1 too). */
    before = atomic_load(&handled);
    CHECK_EQ(kill(getpid(), SIGUSR1), 0);
    CHECK_EQ(atomic_load(&handled), before);
    errno = 0;
    CHECK_EQ(ppoll(&pf, 1, NULL, &none), -1);
    CHECK_EQ(errno, EINTR);
    CHECK_EQ(atomic_load(&handled), before + 1);
    OK(pthread_sigmask(SIG_SETMASK, &old, NULL));
    /* Errors: a bad timeout. */
    ts = (struct timespec){ 0, 1000000000L };
    FAILS_ERRNO(ppoll(&pf, 1, &ts, NULL), EINVAL);
    FAILS_ERRNO(pselect(p[0] + 1, &rd, NULL, NULL, &ts, NULL), EINVAL);
    close(p[0]);
    close(p[1]);
    return NULL;
}

static void ppoll_and_pselect(void)
{
    sigset_t usr1, old;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    OK(pthread_sigmask(SIG_BLOCK, &usr1, &old));   /* (inherited by the thread) */
    on_thread(ppoll_pselect_calls, NULL);
    OK(pthread_sigmask(SIG_SETMASK, &old, NULL));
}

static void *select_waits(void *arg)
{
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    atomic_store(&reached, 1);
    CHECK_EQ(select(p[0] + 1, &rd, NULL, NULL, NULL), 1);
    CHECK(FD_ISSET(p[0], &rd));
    return NULL;
}

static void select_wakes_when_ready(void)
{
    CHECK_EQ(pipe(p), 0);
    atomic_store(&reached, 0);
    pthread_t t = start(select_waits, NULL);
    WAIT_UNTIL(atomic_load(&reached), 5000);
    conform_pause_us(20000);
    CHECK_EQ(write(p[1], "w", 1), 1);
    OK(pthread_join(t, NULL));
    close(p[0]);
    close(p[1]);
}

int main(void)
{
    RUN_CASE(poll_fails_with_eintr_even_under_sa_restart, 10);
    RUN_CASE(epoll_wait_fails_with_eintr_even_under_sa_restart, 10);
    RUN_CASE(epoll_pwait_takes_its_mask, 10);
    RUN_CASE(epoll_wait_is_ended_by_a_signal_for_the_process, 10);
    RUN_CASE(timed_waits_ignore_other_threads, 20);
    RUN_CASE(epoll_wait_timeouts_and_errors, 10);
    RUN_CASE(epoll_wait_wakes_when_ready, 10);
    RUN_CASE(select_timeouts_sets_and_errors, 10);
    RUN_CASE(select_wakes_when_ready, 10);
    RUN_CASE(select_fails_with_eintr_even_under_sa_restart, 10);
    RUN_CASE(ppoll_fails_with_eintr_even_under_sa_restart, 10);
    RUN_CASE(pselect_fails_with_eintr_even_under_sa_restart, 10);
    RUN_CASE(ppoll_and_pselect, 10);
    puts("io_poll: ok");
    return 0;
}
