/* SPDX-License-Identifier: MIT */
/* Helpers of the io_park tests (io_park_one.c, io_park_many.c): ito/io.h
 * parks the calling ito thread, not its vproc. ctest runs each with
 * ITO_VPROCS=1, where a call that blocked the vproc would stop everything,
 * and with ITO_VPROCS=2.
 *
 * Everything there needs the rings: without them (an old kernel, io_uring
 * disabled) each test says so and is skipped (exit 77). A watchdog (alarm)
 * names the phase that hangs. */
#ifndef ITO_TESTS_IO_PARK_H
#define ITO_TESTS_IO_PARK_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <termios.h>

#include "common.h"

#define MS 1000000ull

static _Atomic(const char *) phase = "start";
static const char *park_test;   /* the test's name, for the messages */

static void on_alarm(int sig)
{
    const char *p = atomic_load(&phase);
    char msg[256];
    int n = snprintf(msg, sizeof msg, "%s: timed out in phase: %s\n", park_test, p);
    if (n > 0)
        (void)!write(2, msg, (size_t)n);
    abort();
}

/* The start of main: the watchdog, and exit 77 without the rings. */
static inline void park_start(const char *test)
{
    park_test = test;
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);
    if (!ito_io_uring_active()) {
        printf("%s: io_uring is not active here (ITO_IO_URING=0, an old kernel or io_uring disabled): "
               "ito's I/O blocks the vproc, so the parking tests are skipped\n", test);
        exit(77);
    }
    printf("%s: %d vproc(s)\n", test, ito_vproc_count());
    fflush(stdout);
}

/* A new phase, with its own time limit. */
static inline void begin(const char *name, unsigned secs)
{
    atomic_store(&phase, name);
    alarm(TEST_SANITIZED ? secs * 3 : secs);
}

static inline void fill(char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (char)(seed * 131u + i * 7u + (i >> 9));
}

/* Read or write exactly n bytes with ito calls. */
static inline void ito_read_full(int fd, char *b, size_t n)
{
    while (n) {
        ssize_t r = ito_read(fd, b, n);
        CHECK(r > 0);
        b += r;
        n -= (size_t)r;
    }
}

static inline void ito_write_full(int fd, const char *b, size_t n)
{
    while (n) {
        ssize_t r = ito_write(fd, b, n);
        CHECK(r > 0);
        b += r;
        n -= (size_t)r;
    }
}

#endif
