/* SPDX-License-Identifier: MIT */
/* Plain system calls made by ito threads keep their C-library behaviour while
 * the rings work: a completion for a thread parked on the vproc's ring must
 * not interrupt the kernel thread carrying the vproc.
 *
 * io_uring runs the completion work of a request in the task that issued it
 * and, unless the ring was set up with IORING_SETUP_COOP_TASKRUN (or
 * DEFER_TASKRUN), notifies that task as a signal would (TIF_NOTIFY_SIGNAL):
 * a blocking call it is in returns as if interrupted. Calls that restart are
 * unaffected, but a socket call with a timeout fails with EINTR, epoll_wait
 * fails with EINTR, and a read of /dev/zero comes back short. Those are plain
 * calls of the application, and ito's own plain calls (ito_connect with
 * SO_SNDTIMEO, ito_recv with MSG_PEEK|MSG_WAITALL).
 *
 * Set-up (ITO_VPROCS=1, so that every ring request is the carrier's):
 * reader threads park in ito_read on pipes; a pthread writes to the pipes
 * every millisecond, so that completions keep arriving; meanwhile another ito
 * thread makes the plain calls. Skipped (77) when the rings are off. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "common.h"

#define MS 1000000ull
enum { READERS = 8 };

static int pipes[READERS][2];
static atomic_int stop;
static atomic_int parked;
static int failures;

static void *reader(void *a)
{
    int i = (int)(intptr_t)a;
    char b[64];
    atomic_fetch_add(&parked, 1);
    while (!atomic_load(&stop)) {
        ssize_t r = ito_read(pipes[i][0], b, sizeof b);
        CHECK(r > 0);
    }
    return NULL;
}

/* A pthread: a byte into each pipe in turn, every millisecond. */
static void *writer(void *a)
{
    for (unsigned n = 0; !atomic_load(&stop); n++) {
        CHECK(write(pipes[n % READERS][1], "w", 1) == 1);
        usleep(1000);
    }
    return NULL;
}

static void fail(const char *what, long r, int e, uint64_t ms)
{
    fprintf(stderr, "io_plain_calls: %s returned %ld (%s) after %llu ms\n", what, r,
            r < 0 ? (strerrorname_np(e) ? strerrorname_np(e) : "?") : "-", (unsigned long long)ms);
    failures++;
}

/* Let the readers run and park again, so that completions are pending. */
static void rearm(void) { ito_sleep_ns(5 * MS); }

static void *plain_calls(void *a)
{
    struct timeval tv = { 0, 300000 };
    uint64_t t0, el;
    long r;
    int e;

    /* recv with SO_RCVTIMEO on an empty socket: EAGAIN after 300 ms. */
    int s[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    CHECK(setsockopt(s[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
    char b[64];
    rearm();
    t0 = ito_now_ns();
    test_set_errno(0);
    r = recv(s[0], b, sizeof b, 0);
    e = test_errno();
    el = (ito_now_ns() - t0) / MS;
    if (!(r == -1 && e == EAGAIN && el >= 290))
        fail("recv with SO_RCVTIMEO 300 ms", r, e, el);

    /* epoll_wait with nothing ready: 0 after 300 ms. */
    int ep = epoll_create1(EPOLL_CLOEXEC);
    CHECK(ep >= 0);
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = s[0] };
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, s[0], &ev) == 0);
    rearm();
    t0 = ito_now_ns();
    test_set_errno(0);
    r = epoll_wait(ep, &ev, 1, 300);
    e = test_errno();
    el = (ito_now_ns() - t0) / MS;
    if (!(r == 0 && el >= 290))
        fail("epoll_wait(300 ms)", r, e, el);
    CHECK(close(ep) == 0);

    /* Large reads of /dev/zero: whole. */
    int z = open("/dev/zero", O_RDONLY);
    CHECK(z >= 0);
    size_t n = (size_t)test_scaled(64) << 20;
    char *buf = malloc(n);
    CHECK(buf);
    int shorts = 0;
    long first = 0;
    for (int i = 0; i < 20; i++) {
        rearm();
        r = read(z, buf, n);
        if (r != (long)n && !shorts++)
            first = r;
    }
    if (shorts) {
        fprintf(stderr, "io_plain_calls: %d of 20 reads of %zu bytes from /dev/zero were short (first: %ld)\n",
                shorts, n, first);
        failures++;
    }
    free(buf);
    CHECK(close(z) == 0);

    /* ito's own plain call: ito_connect with SO_SNDTIMEO to a full backlog:
     * EAGAIN after 300 ms, as connect(2). */
    struct sockaddr_un ua = { .sun_family = AF_UNIX };
    snprintf(ua.sun_path, sizeof ua.sun_path, "/tmp/ito_io_plain_%d", (int)getpid());
    unlink(ua.sun_path);
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(l >= 0);
    CHECK(bind(l, (struct sockaddr *)&ua, sizeof ua) == 0 && listen(l, 0) == 0);
    int f = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    CHECK(f >= 0 && connect(f, (struct sockaddr *)&ua, sizeof ua) == 0);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(c >= 0);
    CHECK(setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    rearm();
    t0 = ito_now_ns();
    test_set_errno(0);
    r = ito_connect(c, (struct sockaddr *)&ua, sizeof ua);
    e = test_errno();
    el = (ito_now_ns() - t0) / MS;
    if (!(r == -1 && e == EAGAIN && el >= 290))
        fail("ito_connect with SO_SNDTIMEO 300 ms (a full backlog)", r, e, el);
    CHECK(close(c) == 0 && close(f) == 0 && close(l) == 0);
    unlink(ua.sun_path);
    CHECK(close(s[0]) == 0 && close(s[1]) == 0);
    return NULL;
}

static void on_alarm(int sig)
{
    static const char msg[] = "io_plain_calls: timed out\n";
    (void)!write(2, msg, sizeof msg - 1);
    abort();
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    alarm(TEST_SANITIZED ? 120 : 60);
    if (!ito_io_uring_active()) {
        printf("io_plain_calls: io_uring is not active: nothing to check, skipped\n");
        return 77;
    }
    ito_thread_t rd[READERS], pc;
    for (int i = 0; i < READERS; i++) {
        CHECK(pipe(pipes[i]) == 0);
        OK(ito_spawn(&rd[i], NULL, reader, (void *)(intptr_t)i));
    }
    WAIT_UNTIL(atomic_load(&parked) == READERS, 20);
    ito_sleep_ns(5 * MS);
    pthread_t w;
    CHECK_EQ(pthread_create(&w, NULL, writer, NULL), 0);
    OK(ito_spawn(&pc, NULL, plain_calls, NULL));
    OK(ito_join(pc, NULL));
    atomic_store(&stop, 1);
    CHECK_EQ(pthread_join(w, NULL), 0);
    for (int i = 0; i < READERS; i++)
        CHECK(write(pipes[i][1], "e", 1) == 1);   /* the last round */
    for (int i = 0; i < READERS; i++) {
        OK(ito_join(rd[i], NULL));
        CHECK(close(pipes[i][0]) == 0 && close(pipes[i][1]) == 0);
    }
    if (failures) {
        fprintf(stderr, "io_plain_calls: %d plain call(s) disturbed by the rings\n", failures);
        return 1;
    }
    printf("io_plain_calls: passed\n");
    return 0;
}
