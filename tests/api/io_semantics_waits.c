/* SPDX-License-Identifier: MIT */
/* ito/io.h against the C library (io_semantics.h): how long calls wait.
 * SO_RCVTIMEO and SO_SNDTIMEO are kept; from an ito thread with the rings on,
 * signals do not interrupt the calls. */
#include "io_semantics.h"

/* SO_RCVTIMEO and SO_SNDTIMEO: a blocking call gives up with EAGAIN after
 * the timeout (30 ms). The twin used by ito is released 300 ms later, so an
 * ito call that ignores the timeout returns late with data (a mismatch), not
 * never. */
static void drain_nb(int fd)
{
    char b[65536];
    while (recv(fd, b, sizeof b, MSG_DONTWAIT) > 0) {
    }
}

static void socket_timeouts(struct ctx *c)
{
    char b1[64], b2[64];
    struct timeval tv = { 0, 30000 };
    int s[2], t[2];

    STEP("socket timeouts: SO_RCVTIMEO");
    pairs(SOCK_STREAM, s, t);
    CHECK(setsockopt(s[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
    CHECK(setsockopt(t[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
    for (int k = 0; k < 3; k++) {
        /* Enough to end any of the calls, MSG_WAITALL's included. */
        static char late[sizeof b2];
        struct later l = { .op = OP_SEND, .fd = s[0], .buf = late, .len = sizeof late, .delay_ns = 300 * MS };
        later_start(&l);
        if (k == 0)
            SAMEX(recv(t[1], b1, sizeof b1, 0), ito_recv(s[1], b2, sizeof b2, 0), -1, EAGAIN);
        else if (k == 1)
            SAMEX(recv(t[1], b1, sizeof b1, MSG_WAITALL), ito_recv(s[1], b2, sizeof b2, MSG_WAITALL), -1, EAGAIN);
        else
            SAMEX(read(t[1], b1, sizeof b1), ito_read(s[1], b2, sizeof b2), -1, EAGAIN);
        later_join(&l);
        drain_nb(s[1]);
    }

    STEP("socket timeouts: a partial MSG_WAITALL");
    /* Part of the data came: the timeout ends the call with what there is. */
    CHECK(send(s[0], "0123456789", 10, 0) == 10 && send(t[0], "0123456789", 10, 0) == 10);
    {
        static char rest[sizeof b2 - 10];
        struct later l = { .op = OP_SEND, .fd = s[0], .buf = rest, .len = sizeof rest, .delay_ns = 300 * MS };
        later_start(&l);
        SAMEX_READ(recv(t[1], b1, sizeof b1, MSG_WAITALL), ito_recv(s[1], b2, sizeof b2, MSG_WAITALL), b1, b2, 10, 0);
        later_join(&l);
        drain_nb(s[1]);
    }
    close4(s, t);

    STEP("socket timeouts: SO_SNDTIMEO");
    pairs(SOCK_STREAM, s, t);
    CHECK(setsockopt(s[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    CHECK(setsockopt(t[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    char blk[4096];
    memset(blk, 's', sizeof blk);
    for (int k = 0; k < 2; k++) {
        set_nonblock(s[0], true);
        set_nonblock(t[0], true);
        size_t queued = 0;
        for (ssize_t r; (r = send(s[0], blk, sizeof blk, 0)) > 0;)
            queued += (size_t)r;
        while (send(t[0], blk, sizeof blk, 0) > 0) {
        }
        set_nonblock(s[0], false);
        set_nonblock(t[0], false);
        char *sink = xmalloc(queued);
        struct later l = { .op = OP_READ, .fd = s[1], .buf = sink, .len = queued, .delay_ns = 300 * MS };
        later_start(&l);
        if (k == 0)
            SAMEX(send(t[0], "x", 1, 0), ito_send(s[0], "x", 1, 0), -1, EAGAIN);
        else
            SAMEX(write(t[0], "x", 1), ito_write(s[0], "x", 1), -1, EAGAIN);
        later_join(&l);
        free(sink);
        drain_nb(s[1]);
        drain_nb(t[1]);
    }
    /* A large send into a full socket, after some room is made: the part
     * that fits, when the timeout ends it. */
    {
        set_nonblock(s[0], true);
        set_nonblock(t[0], true);
        while (send(s[0], blk, sizeof blk, 0) > 0) {
        }
        while (send(t[0], blk, sizeof blk, 0) > 0) {
        }
        set_nonblock(s[0], false);
        set_nonblock(t[0], false);
        char room[8192];
        CHECK(recv(s[1], room, sizeof room, MSG_WAITALL) == (ssize_t)sizeof room);
        CHECK(recv(t[1], room, sizeof room, MSG_WAITALL) == (ssize_t)sizeof room);
        size_t n = 1u << 20;
        char *big = xmalloc(n), *sink = xmalloc(4u << 20);
        memset(big, 'b', n);
        /* The ito twin is drained 300 ms later, should it not time out. */
        struct later l = { .op = OP_READ, .fd = s[1], .buf = sink, .len = 65536, .delay_ns = 300 * MS };
        later_start(&l);
        long r = SAME(send(t[0], big, n, 0), ito_send(s[0], big, n, 0));
        later_join(&l);
        SOFT(r > 0 && r < (long)n);
        drain_nb(s[1]);
        drain_nb(t[1]);
        free(big);
        free(sink);
    }
    close4(s, t);

    STEP("socket timeouts: accept");
    struct sockaddr_in la, lb;
    int l1 = tcp_listener(&la, 0), l2 = tcp_listener(&lb, 0);
    CHECK(setsockopt(l1, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
    CHECK(setsockopt(l2, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
    int k = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(k >= 0);
    struct later l = { .op = OP_CONNECT, .fd = k, .sa = (struct sockaddr *)&lb, .salen = sizeof lb,
                       .delay_ns = 300 * MS };
    later_start(&l);
    long a = SAMEX(accept4(l1, NULL, NULL, 0), ito_accept(l2, NULL, NULL, 0), -1, EAGAIN);
    later_join(&l);
    if (a >= 0)
        close((int)a);
    CHECK(close(k) == 0 && close(l1) == 0 && close(l2) == 0);

    STEP("socket timeouts: connect");
    /* A TCP listener whose accept queue is full drops new SYNs: a blocking
     * connect waits, and SO_SNDTIMEO ends it with EINPROGRESS (the
     * handshake goes on). */
    struct sockaddr_in fa;
    int fl = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fl >= 0);
    memset(&fa, 0, sizeof fa);
    fa.sin_family = AF_INET;
    fa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fl, (struct sockaddr *)&fa, sizeof fa) == 0 && listen(fl, 0) == 0);
    socklen_t len = sizeof fa;
    CHECK(getsockname(fl, (struct sockaddr *)&fa, &len) == 0);
    enum { NFILL = 8 };
    int fill_fds[NFILL];
    for (int i = 0; i < NFILL; i++) {
        fill_fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        CHECK(fill_fds[i] >= 0);
        (void)!connect(fill_fds[i], (struct sockaddr *)&fa, sizeof fa);
    }
    ito_sleep_ns(20 * MS);
    int k1 = socket(AF_INET, SOCK_STREAM, 0), k2 = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(k1 >= 0 && k2 >= 0);
    CHECK(setsockopt(k1, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    CHECK(setsockopt(k2, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    SAME(connect(k1, (struct sockaddr *)&fa, sizeof fa), ito_connect(k2, (struct sockaddr *)&fa, sizeof fa));
    CHECK(close(k1) == 0 && close(k2) == 0);
    for (int i = 0; i < NFILL; i++)
        CHECK(close(fill_fds[i]) == 0);
    CHECK(close(fl) == 0);
    /* A Unix listener with a full backlog: EAGAIN after the timeout. */
    char path[64];
    tmp_name(path, "full");
    struct sockaddr_un ua = { .sun_family = AF_UNIX };
    strcpy(ua.sun_path, path);
    int ul = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(ul >= 0);
    CHECK(bind(ul, (struct sockaddr *)&ua, sizeof ua) == 0 && listen(ul, 0) == 0);
    int ufill[4], nuf = 0;
    for (int i = 0; i < 4; i++) {
        int f = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        CHECK(f >= 0);
        if (connect(f, (struct sockaddr *)&ua, sizeof ua) == 0)
            ufill[nuf++] = f;
        else
            close(f);
    }
    k1 = socket(AF_UNIX, SOCK_STREAM, 0);
    k2 = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(k1 >= 0 && k2 >= 0);
    CHECK(setsockopt(k1, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    CHECK(setsockopt(k2, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    SAME(connect(k1, (struct sockaddr *)&ua, sizeof ua), ito_connect(k2, (struct sockaddr *)&ua, sizeof ua));
    CHECK(close(k1) == 0 && close(k2) == 0);
    for (int i = 0; i < nuf; i++)
        CHECK(close(ufill[i]) == 0);
    CHECK(close(ul) == 0 && unlink(path) == 0);
}

/* io.h: the calls are not interrupted by signals. From an ito thread with
 * the rings on (the plain calls made otherwise fail with EINTR, as in the C
 * library, for a handler installed without SA_RESTART). */
static void on_usr1(int sig) { (void)sig; }

struct signaller {
    atomic_int stop;
    pthread_t p;
};

static void *signaller_fn(void *a)
{
    struct signaller *sg = a;
    while (!atomic_load(&sg->stop)) {
        kill(getpid(), SIGUSR1);
        usleep(2000);
    }
    return NULL;
}

static void signals(struct ctx *c)
{
    STEP("signals do not interrupt parked calls");
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;   /* no SA_RESTART */
    CHECK(sigaction(SIGUSR1, &sa, &old) == 0);
    struct signaller sg = { 0 };
    CHECK_EQ(pthread_create(&sg.p, NULL, signaller_fn, &sg), 0);
    char b[16];
    int p[2];
    CHECK(pipe(p) == 0);
    struct later l = { .op = OP_WRITE, .fd = p[1], .buf = (char *)"sig", .len = 3, .delay_ns = 50 * MS };
    later_start(&l);
    EXPECT(ito_read(p[0], b, sizeof b), 3, 0);
    later_join(&l);
    struct pollfd pf = { p[0], POLLIN, 0 };
    l = (struct later){ .op = OP_WRITE, .fd = p[1], .buf = (char *)"sig", .len = 3, .delay_ns = 50 * MS };
    later_start(&l);
    EXPECT(ito_poll(&pf, 1, 5000), 1, 0);
    later_join(&l);
    EXPECT(ito_read(p[0], b, sizeof b), 3, 0);
    uint64_t t0 = ito_now_ns();
    EXPECT(ito_poll(&pf, 1, 50), 0, 0);
    SOFT(ms_since(t0) >= 50);
    int s[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    l = (struct later){ .op = OP_SEND, .fd = s[0], .buf = (char *)"sig", .len = 3, .delay_ns = 50 * MS };
    later_start(&l);
    EXPECT(ito_recv(s[1], b, 3, MSG_WAITALL), 3, 0);
    later_join(&l);
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m >= 0) {
        char name[128];
        CHECK(grantpt(m) == 0 && unlockpt(m) == 0 && ptsname_r(m, name, sizeof name) == 0);
        int t = open(name, O_RDWR | O_NOCTTY);
        CHECK(t >= 0);
        struct termios tio;
        CHECK(tcgetattr(t, &tio) == 0);
        cfmakeraw(&tio);
        CHECK(tcsetattr(t, TCSANOW, &tio) == 0);
        l = (struct later){ .op = OP_WRITE, .fd = m, .buf = (char *)"s", .len = 1, .delay_ns = 50 * MS };
        later_start(&l);
        EXPECT(ito_read(t, b, 1), 1, 0);
        later_join(&l);
        CHECK(close(t) == 0 && close(m) == 0);
    }
    atomic_store(&sg.stop, 1);
    CHECK_EQ(pthread_join(sg.p, NULL), 0);
    CHECK(sigaction(SIGUSR1, &old, NULL) == 0);
    CHECK(close(p[0]) == 0 && close(p[1]) == 0 && close(s[0]) == 0 && close(s[1]) == 0);
}

static void run(struct ctx *c)
{
    if (c->solo)   /* each may take 300 ms, when the timeouts are not kept */
        socket_timeouts(c);
}

const struct io_topic io_topic = {
    .name = "waits",
    .run = run,
    .main_rings = signals,
};
