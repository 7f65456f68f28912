/* SPDX-License-Identifier: MIT */
/* What tests/posix/io.c and io_poll.c share: a SIGUSR1 handler that counts,
 * threads with small stacks, and the harness of a call that a signal
 * interrupts. */
#ifndef ITO_TESTS_POSIX_IO_WAITS_H
#define ITO_TESTS_POSIX_IO_WAITS_H

#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "conform.h"

static atomic_int handled;
static inline void on_usr1(int sig) { atomic_fetch_add(&handled, 1); }

static inline void install(int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
    atomic_store(&handled, 0);
}

static inline pthread_t start(void *(*fn)(void *), void *arg)
{
    pthread_attr_t a;
    OK(pthread_attr_init(&a));
    OK(pthread_attr_setstacksize(&a, 64 * 1024));
    pthread_t t;
    OK(pthread_create(&t, &a, fn, arg));
    OK(pthread_attr_destroy(&a));
    return t;
}

/* The pipe or socket pair a case waits on, and where its thread got to. */
static int p[2];
static atomic_int reached, finished;

/* In a thread that interrupt() runs: say it has reached its call, make it,
 * and expect -1 with EINTR. */
#define FAILS_INTERRUPTED(call)                                                         \
    do {                                                                                \
        atomic_store(&reached, 1);                                                      \
        errno = 0;                                                                      \
        CHECK_EQ((call), -1);                                                           \
        CHECK_EQ(errno, EINTR);                                                         \
    } while (0)

/* Sends SIGUSR1 to *arg 5 ms from now. */
static inline void *kill_soon(void *arg)
{
    conform_pause_us(5000);
    OK(pthread_kill(*(pthread_t *)arg, SIGUSR1));
    return NULL;
}

/* Runs fn on a thread that waits on p (a pipe, or a socket pair) and sends
 * it SIGUSR1, under a handler installed with `flags`, until fn says it has
 * finished: fn checks what its call returned. */
static inline void interrupt(void *(*fn)(void *), int flags, int socket)
{
    install(flags);
    CHECK_EQ(socket ? socketpair(AF_UNIX, SOCK_STREAM, 0, p) : pipe(p), 0);
    atomic_store(&reached, 0);
    atomic_store(&finished, 0);
    pthread_t t = start(fn, NULL);
    WAIT_UNTIL(atomic_load(&reached), 5000);
    conform_pause_us(20000);
    for (int i = 0; i < 500 && !atomic_load(&finished); i++) {
        OK(pthread_kill(t, SIGUSR1));
        conform_pause_us(10000);
    }
    OK(pthread_join(t, NULL));
    CHECK(atomic_load(&handled) >= 1);
    close(p[0]);
    close(p[1]);
}

#endif
