/* SPDX-License-Identifier: MIT */
/* ito/io.h parks the calling ito thread, not its vproc (io_park.h): one
 * thread blocked, many run.
 *
 *   - While one thread is blocked (in ito_read, ito_readv, ito_recv with and
 *     without MSG_WAITALL and MSG_PEEK, ito_write and ito_send on full
 *     buffers, ito_accept, ito_connect to a full backlog, with and without
 *     SO_SNDTIMEO, ito_poll, a terminal read),
 *     1000 threads spawned after it all run to completion; then it is
 *     released and gets the right bytes.
 *   - ito_poll wakes on a pipe written by another thread; a 100 ms timeout
 *     returns 0 and other threads ran meanwhile (one of them only yielding,
 *     so completions are reaped by a busy vproc). */
#include "io_park.h"

/* ------------------------------------------------ one blocked, many run */

enum kind {
    K_READ,
    K_READV,
    K_RECV,
    K_RECV_WAITALL,
    K_WRITE,
    K_SEND,
    K_ACCEPT,
    K_POLL,
    K_TTY,
    K_CONNECT,             /* a Unix listener's full backlog */
    K_RECV_PEEK_WAITALL,   /* these last (main): plain calls today */
    K_CONNECT_TIMEO,       /* K_CONNECT with SO_SNDTIMEO */
    NKINDS
};
static const char *const kind_name[NKINDS] = { "ito_read",   "ito_readv",  "ito_recv",           "ito_recv(MSG_WAITALL)",
                                               "ito_write",  "ito_send",   "ito_accept",         "ito_poll",
                                               "ito_read (terminal)",      "ito_connect",
                                               "ito_recv(MSG_PEEK|MSG_WAITALL)", "ito_connect (SO_SNDTIMEO)" };

struct blocked {
    enum kind kind;
    struct sockaddr_un ua;   /* K_CONNECT* */
    int fd;             /* what the blocked thread waits on */
    int other;          /* the other end, for main */
    size_t full;        /* K_WRITE, K_SEND: bytes queued before the call */
    int queued;         /* K_CONNECT*: the client that fills the backlog */
    atomic_int started, returned;
    long result;
    int err;            /* errno after the call */
    char buf[64];
};

static void *blocked_fn(void *a)
{
    struct blocked *b = a;
    atomic_store(&b->started, 1);
    switch (b->kind) {
    case K_READ:
    case K_TTY:
        b->result = ito_read(b->fd, b->buf, sizeof b->buf);
        break;
    case K_READV: {
        struct iovec v[2] = { { b->buf, 3 }, { b->buf + 3, sizeof b->buf - 3 } };
        b->result = ito_readv(b->fd, v, 2);
        break;
    }
    case K_RECV:
        b->result = ito_recv(b->fd, b->buf, sizeof b->buf, 0);
        break;
    case K_RECV_WAITALL:
        b->result = ito_recv(b->fd, b->buf, 10, MSG_WAITALL);
        break;
    case K_RECV_PEEK_WAITALL:
        b->result = ito_recv(b->fd, b->buf, 10, MSG_PEEK | MSG_WAITALL);
        break;
    case K_WRITE:
        b->result = ito_write(b->fd, "released", 8);
        break;
    case K_SEND:
        b->result = ito_send(b->fd, "released", 8, 0);
        break;
    case K_ACCEPT:
        b->result = ito_accept(b->fd, NULL, NULL, SOCK_CLOEXEC);
        break;
    case K_CONNECT:
    case K_CONNECT_TIMEO:
        b->result = ito_connect(b->fd, (struct sockaddr *)&b->ua, sizeof b->ua);
        break;
    case K_POLL: {
        struct pollfd p = { b->fd, POLLIN, 0 };
        b->result = ito_poll(&p, 1, -1);
        CHECK_EQ(p.revents, POLLIN);
        break;
    }
    case NKINDS:
        break;
    }
    b->err = test_errno();
    atomic_store(&b->returned, 1);
    return NULL;
}

static atomic_long counter;
static void *count_fn(void *a)
{
    atomic_fetch_add(&counter, 1);
    if ((intptr_t)a % 3 == 0)
        ito_yield();
    return NULL;
}

static void drain(int fd, size_t n)
{
    char buf[65536];
    while (n) {
        ssize_t r = read(fd, buf, n < sizeof buf ? n : sizeof buf);
        CHECK(r > 0);
        n -= (size_t)r;
    }
}

static void fill_nonblocking(int fd, size_t *queued)
{
    int fl = fcntl(fd, F_GETFL);
    CHECK(fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0);
    char buf[4096];
    memset(buf, 'f', sizeof buf);
    for (ssize_t r; (r = write(fd, buf, sizeof buf)) > 0;)
        *queued += (size_t)r;
    CHECK(errno == EAGAIN);
    CHECK(fcntl(fd, F_SETFL, fl) == 0);
}

static void one_blocked(enum kind k)
{
    static char name[96];
    snprintf(name, sizeof name, "1000 threads run while one is blocked in %s", kind_name[k]);
    begin(name, 15);
    struct blocked *b = calloc(1, sizeof *b);
    CHECK(b);
    b->kind = k;
    int p[2];
    struct sockaddr_in sa;
    switch (k) {
    case K_READ:
    case K_READV:
    case K_POLL:
        CHECK(pipe(p) == 0);
        b->fd = p[0];
        b->other = p[1];
        break;
    case K_WRITE:
        CHECK(pipe(p) == 0);
        b->fd = p[1];
        b->other = p[0];
        fill_nonblocking(b->fd, &b->full);
        break;
    case K_RECV:
    case K_RECV_WAITALL:
    case K_RECV_PEEK_WAITALL:
    case K_SEND:
        CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0);
        b->fd = p[0];
        b->other = p[1];
        if (k == K_SEND)
            fill_nonblocking(b->fd, &b->full);
        break;
    case K_ACCEPT: {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(l >= 0);
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        CHECK(bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(l, 4) == 0);
        socklen_t len = sizeof sa;
        CHECK(getsockname(l, (struct sockaddr *)&sa, &len) == 0);
        b->fd = l;
        b->other = -1;
        break;
    }
    case K_CONNECT:
    case K_CONNECT_TIMEO: {
        /* backlog 0: one queued connection fills it; the next connect waits */
        b->ua.sun_family = AF_UNIX;
        snprintf(b->ua.sun_path, sizeof b->ua.sun_path, "/tmp/ito_io_park_%d_%d", (int)getpid(), (int)k);
        unlink(b->ua.sun_path);
        int l = socket(AF_UNIX, SOCK_STREAM, 0);
        CHECK(l >= 0);
        CHECK(bind(l, (struct sockaddr *)&b->ua, sizeof b->ua) == 0 && listen(l, 0) == 0);
        int f = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        CHECK(f >= 0);
        CHECK(connect(f, (struct sockaddr *)&b->ua, sizeof b->ua) == 0);
        int g = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        CHECK(g >= 0);
        CHECK(connect(g, (struct sockaddr *)&b->ua, sizeof b->ua) == -1 && errno == EAGAIN);   /* full */
        close(g);
        int c = socket(AF_UNIX, SOCK_STREAM, 0);
        CHECK(c >= 0);
        if (k == K_CONNECT_TIMEO) {
            struct timeval tv = { 60, 0 };   /* longer than the watchdog */
            CHECK(setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
        }
        b->fd = c;
        b->other = l;
        b->queued = f;
        break;
    }
    case K_TTY: {
        int m = posix_openpt(O_RDWR | O_NOCTTY);
        if (m < 0) {
            printf("io_park: no pseudo-terminal (%s): the terminal case is skipped\n", strerror(errno));
            free(b);
            return;
        }
        char pts[128];
        CHECK(grantpt(m) == 0 && unlockpt(m) == 0 && ptsname_r(m, pts, sizeof pts) == 0);
        int s = open(pts, O_RDWR | O_NOCTTY);
        CHECK(s >= 0);
        struct termios t;
        CHECK(tcgetattr(s, &t) == 0);
        cfmakeraw(&t);
        CHECK(tcsetattr(s, TCSANOW, &t) == 0);
        b->fd = s;
        b->other = m;
        break;
    }
    case NKINDS:
        break;
    }

    ito_thread_t bt;
    OK(ito_spawn(&bt, NULL, blocked_fn, b));
    WAIT_UNTIL(atomic_load(&b->started), 20);
    ito_sleep_ns(2 * MS);   /* with 2 vprocs: let it reach the call */

    long n = 1000;
    ito_thread_t *ts = malloc((size_t)n * sizeof *ts);
    CHECK(ts);
    atomic_store(&counter, 0);
    for (long i = 0; i < n; i++)
        OK(ito_spawn(&ts[i], NULL, count_fn, (void *)(intptr_t)i));
    for (long i = 0; i < n; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(atomic_load(&counter), n);
    free(ts);
    if (atomic_load(&b->returned)) {
        fprintf(stderr, "io_park: %s returned %ld (errno %s) before it was released\n", kind_name[k], b->result,
                b->result < 0 ? strerror(b->err) : "-");
        abort();
    }

    /* Release it. */
    int conn = -1;
    switch (k) {
    case K_READ:
    case K_READV:
    case K_POLL:
    case K_TTY:
        CHECK(write(b->other, "wakeup", 6) == 6);
        break;
    case K_RECV:
        CHECK(send(b->other, "wakeup", 6, 0) == 6);
        break;
    case K_RECV_PEEK_WAITALL:
        /* All at once: Linux may end a peek at a partial MSG_WAITALL. */
        CHECK(send(b->other, "wakeup!!!!", 10, 0) == 10);
        break;
    case K_RECV_WAITALL:
        /* Half of it first: still blocked. */
        CHECK(send(b->other, "wake", 4, 0) == 4);
        ito_sleep_ns(20 * MS);
        CHECK(!atomic_load(&b->returned));
        CHECK(send(b->other, "up!!!!", 6, 0) == 6);
        break;
    case K_WRITE:
    case K_SEND:
        drain(b->other, b->full);
        break;
    case K_ACCEPT:
        conn = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(conn >= 0);
        CHECK(connect(conn, (struct sockaddr *)&sa, sizeof sa) == 0);
        break;
    case K_CONNECT:
    case K_CONNECT_TIMEO:
        /* Accept the queued client: room for the waiting one. */
        conn = accept4(b->other, NULL, NULL, SOCK_CLOEXEC);
        CHECK(conn >= 0);
        break;
    case NKINDS:
        break;
    }
    OK(ito_join(bt, NULL));
    switch (k) {
    case K_READ:
    case K_READV:
    case K_RECV:
        CHECK_EQ(b->result, 6);
        CHECK(memcmp(b->buf, "wakeup", 6) == 0);
        break;
    case K_TTY: {
        size_t got = (size_t)b->result;
        CHECK(b->result > 0 && got <= 6);
        if (got < 6)
            ito_read_full(b->fd, b->buf + got, 6 - got);
        CHECK(memcmp(b->buf, "wakeup", 6) == 0);
        break;
    }
    case K_RECV_WAITALL:
        CHECK_EQ(b->result, 10);
        CHECK(memcmp(b->buf, "wakeup!!!!", 10) == 0);
        break;
    case K_RECV_PEEK_WAITALL: {
        CHECK(b->result > 0 && b->result <= 10);
        CHECK(memcmp(b->buf, "wakeup!!!!", (size_t)b->result) == 0);
        char again[10];   /* peeked: still there */
        CHECK_EQ(recv(b->fd, again, 10, MSG_DONTWAIT), 10);
        CHECK(memcmp(again, "wakeup!!!!", 10) == 0);
        break;
    }
    case K_POLL:
        CHECK_EQ(b->result, 1);
        break;
    case K_WRITE:
    case K_SEND: {
        CHECK_EQ(b->result, 8);
        char got[8];
        ito_read_full(b->other, got, 8);
        CHECK(memcmp(got, "released", 8) == 0);
        break;
    }
    case K_CONNECT:
    case K_CONNECT_TIMEO: {
        CHECK_EQ(b->result, 0);
        int a = accept4(b->other, NULL, NULL, SOCK_CLOEXEC);
        CHECK(a >= 0);
        CHECK_EQ(ito_write(b->fd, "c", 1), 1);
        char ch;
        CHECK_EQ(ito_read(a, &ch, 1), 1);
        close(a);
        close(conn);
        close(b->queued);
        unlink(b->ua.sun_path);
        break;
    }
    case K_ACCEPT: {
        CHECK(b->result >= 0);
        int a = (int)b->result;
        CHECK(fcntl(a, F_GETFD) & FD_CLOEXEC);
        CHECK(write(conn, "x", 1) == 1);
        char ch;
        CHECK_EQ(ito_read(a, &ch, 1), 1);
        close(a);
        close(conn);
        break;
    }
    case NKINDS:
        break;
    }
    close(b->fd);
    if (b->other >= 0)
        close(b->other);
    free(b);
}

/* ------------------------------------------------ poll */

enum { POLLERS = 10 };
static int pp[POLLERS][2];
static atomic_int pollers_started;

static void *poller_fn(void *a)
{
    int i = (int)(intptr_t)a;
    struct pollfd f[2] = { { pp[i][0], POLLIN, 0 }, { -1, POLLIN, 0 } };
    atomic_fetch_add(&pollers_started, 1);
    CHECK_EQ(ito_poll(f, 2, -1), 1);
    CHECK_EQ(f[0].revents, POLLIN);
    char ch;
    CHECK_EQ(ito_read(pp[i][0], &ch, 1), 1);
    CHECK_EQ(ch, 'a' + i);
    return (void *)1;
}

static atomic_long spins;
static atomic_int stop_spinning;
static void *spinner_fn(void *a)
{
    while (!atomic_load(&stop_spinning)) {
        atomic_fetch_add(&spins, 1);
        ito_yield();
    }
    return NULL;
}

static void *timed_poller_fn(void *a)
{
    int fd = (int)(intptr_t)a;
    struct pollfd f = { fd, POLLIN, 0x5555 };
    long s0 = atomic_load(&spins);
    long c0 = atomic_load(&counter);
    uint64_t t0 = ito_now_ns();
    CHECK_EQ(ito_poll(&f, 1, 100), 0);
    uint64_t el = ito_now_ns() - t0;
    CHECK(el >= 100 * MS);
    CHECK_EQ(f.revents, 0);
    /* Others ran meanwhile: the spinner, and the threads main spawned. */
    CHECK(atomic_load(&spins) > s0);
    CHECK(atomic_load(&counter) > c0);
    return NULL;
}

static void polls(void)
{
    begin("ito_poll wakes on a pipe", 30);
    for (int i = 0; i < POLLERS; i++)
        CHECK(pipe(pp[i]) == 0);
    ito_thread_t ts[POLLERS];
    atomic_store(&pollers_started, 0);
    for (int i = 0; i < POLLERS; i++)
        OK(ito_spawn(&ts[i], NULL, poller_fn, (void *)(intptr_t)i));
    WAIT_UNTIL(atomic_load(&pollers_started) == POLLERS, 20);
    ito_sleep_ns(10 * MS);
    for (int i = POLLERS - 1; i >= 0; i--) {
        char ch = (char)('a' + i);
        CHECK(write(pp[i][1], &ch, 1) == 1);
    }
    for (int i = 0; i < POLLERS; i++) {
        void *r;
        OK(ito_join(ts[i], &r));
        CHECK(r == (void *)1);
    }

    begin("ito_poll with a 100 ms timeout while others run", 30);
    /* A spinner that only yields: the completion of the timeout must be
     * reaped by a vproc that never idles. */
    ito_thread_t sp, tp;
    atomic_store(&stop_spinning, 0);
    OK(ito_spawn(&sp, NULL, spinner_fn, NULL));
    OK(ito_spawn(&tp, NULL, timed_poller_fn, (void *)(intptr_t)pp[0][0]));
    /* And short-lived threads, spawned while the poller waits. */
    atomic_store(&counter, 0);
    for (int k = 0; k < 20; k++) {
        ito_thread_t c[10];
        for (int i = 0; i < 10; i++)
            OK(ito_spawn(&c[i], NULL, count_fn, (void *)(intptr_t)i));
        for (int i = 0; i < 10; i++)
            OK(ito_join(c[i], NULL));
        ito_sleep_ns(5 * MS);
    }
    OK(ito_join(tp, NULL));
    atomic_store(&stop_spinning, 1);
    OK(ito_join(sp, NULL));

    /* A reader woken while the only other runnable thread spins. */
    begin("ito_read wakes while a thread spins with yields", 30);
    atomic_store(&stop_spinning, 0);
    OK(ito_spawn(&sp, NULL, spinner_fn, NULL));
    struct blocked *b = calloc(1, sizeof *b);
    CHECK(b);
    b->kind = K_READ;
    b->fd = pp[1][0];
    ito_thread_t bt;
    OK(ito_spawn(&bt, NULL, blocked_fn, b));
    WAIT_UNTIL(atomic_load(&b->started), 20);
    ito_sleep_ns(5 * MS);
    CHECK(write(pp[1][1], "spin", 4) == 4);
    WAIT_UNTIL(atomic_load(&b->returned), 20);
    OK(ito_join(bt, NULL));
    CHECK_EQ(b->result, 4);
    atomic_store(&stop_spinning, 1);
    OK(ito_join(sp, NULL));
    free(b);
    for (int i = 0; i < POLLERS; i++)
        CHECK(close(pp[i][0]) == 0 && close(pp[i][1]) == 0);
}

int main(void)
{
    park_start("io_park_one");
    for (int k = 0; k < K_RECV_PEEK_WAITALL; k++)
        one_blocked((enum kind)k);
    polls();
    /* Last: calls io.c makes with the plain system call (io_uring's
     * MSG_WAITALL retries would peek the same bytes again; an expired
     * SO_SNDTIMEO's answer depends on the protocol), which holds the vproc
     * unless it is handed off. */
    one_blocked(K_RECV_PEEK_WAITALL);
    one_blocked(K_CONNECT_TIMEO);
    alarm(0);
    printf("io_park_one: all passed\n");
    return 0;
}
