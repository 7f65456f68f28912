/* SPDX-License-Identifier: MIT */
/* ito/io.h against the C library (io_semantics.h): eventfd, timerfd,
 * /dev/zero, /dev/null, terminals, and poll. */
#include "io_semantics.h"

static atomic_int spin_stop;
static void *spinner(void *a)
{
    while (!atomic_load_explicit(&spin_stop, memory_order_relaxed)) {
    }
    return NULL;
}

/* eventfd, timerfd and character devices. */
static void others(struct ctx *c)
{
    char b1[64], b2[64];
    STEP("eventfd, timerfd, /dev/zero, /dev/null");
    int ea = eventfd(0, 0), eb = eventfd(0, 0);
    CHECK(ea >= 0 && eb >= 0);
    SAMEX(read(ea, b1, 4), ito_read(eb, b2, 4), -1, EINVAL);
    uint64_t v = 5;
    SAMEX(write(ea, &v, 8), ito_write(eb, &v, 8), 8, 0);
    SAMEX(write(ea, &v, 4), ito_write(eb, &v, 4), -1, EINVAL);
    SAMEX_READ(read(ea, b1, 8), ito_read(eb, b2, 8), b1, b2, 8, 0);
    uint64_t got = 0, t0;
    v = 7;
    struct later l = { .op = OP_WRITE, .fd = eb, .buf = (char *)&v, .len = 8, .delay_ns = 20 * MS };
    later_start(&l);
    EXPECT(ito_read(eb, &got, 8), 8, 0);   /* waits for the count */
    later_join(&l);
    SOFT_EQ(got, 7);
    CHECK(close(ea) == 0 && close(eb) == 0);
    /* A write that would pass the count's limit waits (eventfd has no
     * non-blocking write: ito makes the plain call, bracketed). */
    eb = eventfd(0, 0);
    CHECK(eb >= 0);
    uint64_t full = 0xfffffffffffffffeull;
    EXPECT(ito_write(eb, &full, 8), 8, 0);
    l = (struct later){ .op = OP_READ, .fd = eb, .buf = (char *)&got, .len = 8, .delay_ns = 20 * MS };
    later_start(&l);
    t0 = ito_now_ns();
    v = 3;
    EXPECT(ito_write(eb, &v, 8), 8, 0);   /* waits for the read that empties it */
    SOFT(ms_since(t0) >= 15);
    later_join(&l);
    SOFT_EQ(got, full);
    EXPECT(ito_read(eb, &got, 8), 8, 0);
    SOFT_EQ(got, 3);
    CHECK(close(eb) == 0);
    ea = eventfd(0, EFD_NONBLOCK);
    CHECK(ea >= 0);
    EXPECT(SAME(read(ea, b1, 8), ito_read(ea, b2, 8)), -1, EAGAIN);
    CHECK(write(ea, &full, 8) == 8);
    v = 1;
    EXPECT(SAME(write(ea, &v, 8), ito_write(ea, &v, 8)), -1, EAGAIN);
    CHECK(close(ea) == 0);

    int tf = timerfd_create(CLOCK_MONOTONIC, 0);
    CHECK(tf >= 0);
    struct itimerspec its = { { 0, 0 }, { 0, 20 * 1000000 } };
    CHECK(timerfd_settime(tf, 0, &its, NULL) == 0);
    t0 = ito_now_ns();
    EXPECT(ito_read(tf, &got, 8), 8, 0);
    SOFT(ms_since(t0) >= 15);
    SOFT_EQ(got, 1);
    CHECK(close(tf) == 0);

    size_t n = 1u << 20;
    char *z1 = xmalloc(n), *z2 = xmalloc(n);
    int za = open("/dev/zero", O_RDWR), zb = open("/dev/zero", O_RDWR);
    CHECK(za >= 0 && zb >= 0);
    memset(z1, 1, n);
    memset(z2, 1, n);
    /* A blocking read of /dev/zero is whole (the libc call is no oracle here:
     * in an ito thread it may come back short, io_plain_calls.c). */
    EXPECT(ito_read(zb, z2, n), (long)n, 0);
    SOFT(z2[0] == 0 && z2[n - 1] == 0);
    SAMEX(write(za, z1, n), ito_write(zb, z2, n), (long)n, 0);
    CHECK(close(za) == 0 && close(zb) == 0);
    if (c->solo) {
        /* Under load (a spinner per CPU): the kernel's /dev/zero stops a
         * non-blocking read early when it should reschedule; a blocking read
         * goes on to the end, as does /dev/urandom's. */
        STEP("/dev/zero and /dev/urandom under load");
        size_t big = 16u << 20;
        char *g2 = xmalloc(big);
        int nspin = (int)sysconf(_SC_NPROCESSORS_ONLN);
        nspin = nspin < 1 ? 1 : nspin > 8 ? 8 : nspin;
        pthread_t sp[8];
        atomic_store(&spin_stop, 0);
        for (int i = 0; i < nspin; i++)
            CHECK_EQ(pthread_create(&sp[i], NULL, spinner, NULL), 0);
        int ub = open("/dev/urandom", O_RDONLY);
        zb = open("/dev/zero", O_RDONLY);
        CHECK(ub >= 0 && zb >= 0);
        for (int i = 0; i < 10; i++) {
            EXPECT(ito_read(zb, g2, big), (long)big, 0);
            EXPECT(ito_read(ub, g2, 1u << 20), 1L << 20, 0);
        }
        atomic_store(&spin_stop, 1);
        for (int i = 0; i < nspin; i++)
            CHECK_EQ(pthread_join(sp[i], NULL), 0);
        CHECK(close(zb) == 0 && close(ub) == 0);
        free(g2);
    }
    int na = open("/dev/null", O_RDWR), nb = open("/dev/null", O_RDWR);
    CHECK(na >= 0 && nb >= 0);
    SAMEX(read(na, b1, 10), ito_read(nb, b2, 10), 0, 0);
    SAMEX(write(na, z1, n), ito_write(nb, z2, n), (long)n, 0);
    SAMEX(pwrite(na, z1, 10, 100), ito_pwrite(nb, z2, 10, 100), 10, 0);
    CHECK(close(na) == 0 && close(nb) == 0);
    free(z1);
    free(z2);
}

/* ------------------------------------------------------------ terminals */

static void read_n(struct ctx *c, int line, int fd, char *b, size_t n)
{
    size_t got = 0;
    while (got < n) {
        test_set_errno(SENTINEL);
        ssize_t r = ito_read(fd, b + got, n - got);
        int e = test_errno();
        if (r <= 0) {
            report(c, line, "ito_read from a terminal returned %zd (%s) after %zu of %zu bytes", r, ename(e), got, n);
            return;
        }
        got += (size_t)r;
    }
}

static void terminals(struct ctx *c)
{
    STEP("terminals");
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0) {
        fprintf(stderr, "[%s] no pseudo-terminal (%s): terminal checks skipped\n", c->who, strerror(errno));
        return;
    }
    CHECK(grantpt(m) == 0 && unlockpt(m) == 0);
    char name[128];
    CHECK(ptsname_r(m, name, sizeof name) == 0);
    int s = open(name, O_RDWR | O_NOCTTY);
    CHECK(s >= 0);
    struct termios t;
    CHECK(tcgetattr(s, &t) == 0);
    cfmakeraw(&t);
    CHECK(tcsetattr(s, TCSANOW, &t) == 0);
    char b1[256], b2[256];

    EXPECT(ito_write(m, "hello", 5), 5, 0);
    read_n(c, __LINE__, s, b2, 5);
    SOFT(memcmp(b2, "hello", 5) == 0);
    EXPECT(ito_write(s, "world", 5), 5, 0);
    read_n(c, __LINE__, m, b2, 5);
    SOFT(memcmp(b2, "world", 5) == 0);
    struct iovec v[2] = { { (void *)"io", 2 }, { (void *)"vec", 3 } };
    EXPECT(ito_writev(m, v, 2), 5, 0);
    read_n(c, __LINE__, s, b2, 5);
    SOFT(memcmp(b2, "iovec", 5) == 0);

    /* A blocking read waits for input. */
    struct later l = { .op = OP_WRITE, .fd = m, .buf = (char *)"late", .len = 4, .delay_ns = 20 * MS };
    later_start(&l);
    read_n(c, __LINE__, s, b2, 4);
    later_join(&l);
    SOFT(memcmp(b2, "late", 4) == 0);

    /* Non-blocking: EAGAIN. */
    int snb = open(name, O_RDWR | O_NOCTTY | O_NONBLOCK);
    CHECK(snb >= 0);
    SAME(read(snb, b1, 10), ito_read(snb, b2, 10));
    EXPECT(ito_read(snb, b2, 10), -1, EAGAIN);

    /* Canonical mode: a read returns one line. */
    t.c_lflag |= ICANON;
    t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
    CHECK(tcsetattr(s, TCSANOW, &t) == 0);
    write_all(m, "ab\ncde\n", 7);
    EXPECT(ito_read(s, b2, 100), 3, 0);
    SOFT(memcmp(b2, "ab\n", 3) == 0);
    EXPECT(read(s, b1, 100), 4, 0);
    /* ito_poll sees the terminal's input. */
    struct pollfd pa = { s, POLLIN, 0 }, pb = { s, POLLIN, 0 };
    SAMEX(poll(&pa, 1, 0), ito_poll(&pb, 1, 0), 0, 0);
    l = (struct later){ .op = OP_WRITE, .fd = m, .buf = (char *)"line\n", .len = 5, .delay_ns = 20 * MS };
    later_start(&l);
    EXPECT(ito_poll(&pb, 1, 10000), 1, 0);
    later_join(&l);
    SOFT_EQ(pb.revents, POLLIN);
    EXPECT(ito_read(s, b2, 100), 5, 0);

    /* The master after the last slave descriptor is closed: EIO. */
    CHECK(close(s) == 0 && close(snb) == 0);
    SAME(read(m, b1, 10), ito_read(m, b2, 10));
    CHECK(close(m) == 0);
}

/* ------------------------------------------------------------ poll */

static void polls(struct ctx *c)
{
    int p[2];
    CHECK(pipe(p) == 0);

    STEP("poll: ready descriptors");
    CHECK(write(p[1], "x", 1) == 1);
    struct pollfd a[2] = { { p[0], POLLIN | POLLOUT, 0x5555 }, { p[1], POLLIN | POLLOUT, 0x5555 } }, b[2];
    memcpy(b, a, sizeof a);
    SAMEX(poll(a, 2, 0), ito_poll(b, 2, 1000), 2, 0);
    SOFT(a[0].revents == b[0].revents && a[1].revents == b[1].revents);
    SOFT_EQ(b[0].revents, POLLIN);
    SOFT_EQ(b[1].revents, POLLOUT);
    uint64_t t0 = ito_now_ns();
    EXPECT(ito_poll(b, 2, -1), 2, 0);
    EXPECT(ito_poll(b, 2, 0), 2, 0);
    SOFT(ms_since(t0) < 5000);
    char ch;
    CHECK(read(p[0], &ch, 1) == 1);

    STEP("poll: timeouts");
    struct pollfd e1 = { p[0], POLLIN, 0x5555 }, e2 = e1;
    SAMEX(poll(&e1, 1, 0), ito_poll(&e2, 1, 0), 0, 0);
    SOFT_EQ(e2.revents, 0);
    e2.revents = 0x5555;
    t0 = ito_now_ns();
    EXPECT(ito_poll(&e2, 1, 50), 0, 0);
    uint64_t el = ms_since(t0);
    if (el < 50)
        report(c, __LINE__, "ito_poll(50 ms) returned after %llu ms", (unsigned long long)el);
    SOFT_EQ(e2.revents, 0);
    /* nfds = 0: a sleep. */
    SAMEX(poll(NULL, 0, 0), ito_poll(NULL, 0, 0), 0, 0);
    t0 = ito_now_ns();
    EXPECT(ito_poll(NULL, 0, 30), 0, 0);
    if ((el = ms_since(t0)) < 30)
        report(c, __LINE__, "ito_poll(NULL, 0, 30) returned after %llu ms", (unsigned long long)el);

    STEP("poll: negative fds, POLLNVAL, POLLHUP");
    struct pollfd n1[3] = { { -1, POLLIN, 0x5555 }, { p[1], POLLOUT, 0x5555 }, { -7, POLLOUT, 0x5555 } }, n2[3];
    memcpy(n2, n1, sizeof n1);
    SAMEX(poll(n1, 3, 0), ito_poll(n2, 3, 100), 1, 0);
    for (int i = 0; i < 3; i++)
        SOFT_EQ(n2[i].revents, n1[i].revents);
    SOFT_EQ(n2[0].revents, 0);
    /* Only negative fds: nothing to wait for but the timeout. */
    n1[1].fd = n2[1].fd = -3;
    t0 = ito_now_ns();
    EXPECT(ito_poll(n2, 3, 30), 0, 0);
    if ((el = ms_since(t0)) < 30)
        report(c, __LINE__, "ito_poll(negative fds, 30) returned after %llu ms", (unsigned long long)el);
    struct pollfd d1 = { c->dead, POLLIN, 0 }, d2 = d1;
    SAMEX(poll(&d1, 1, 0), ito_poll(&d2, 1, 1000), 1, 0);
    SOFT_EQ(d2.revents, POLLNVAL);
    if (c->solo) {
        int x = dup(p[0]);
        CHECK(x >= 0 && close(x) == 0);
        struct pollfd x1 = { x, POLLIN, 0 }, x2 = x1;
        SAMEX(poll(&x1, 1, 0), ito_poll(&x2, 1, -1), 1, 0);
        SOFT_EQ(x2.revents, POLLNVAL);
    }
    int q[2];
    CHECK(pipe(q) == 0);
    CHECK(close(q[1]) == 0);
    struct pollfd h1 = { q[0], POLLIN, 0 }, h2 = h1;
    SAMEX(poll(&h1, 1, 0), ito_poll(&h2, 1, 1000), 1, 0);
    SOFT_EQ(h2.revents, h1.revents);
    SOFT_EQ(h2.revents, POLLHUP);
    CHECK(close(q[0]) == 0);
    /* A socket's peer shuts down: POLLIN|POLLRDHUP. */
    int s[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    struct pollfd r1 = { s[0], POLLIN | POLLRDHUP, 0 }, r2 = r1;
    struct later l = { .op = OP_SHUT_WR, .fd = s[1], .delay_ns = 20 * MS };
    later_start(&l);
    EXPECT(ito_poll(&r2, 1, 10000), 1, 0);
    later_join(&l);
    EXPECT(poll(&r1, 1, 0), 1, 0);
    SOFT_EQ(r2.revents, r1.revents);
    CHECK(close(s[0]) == 0 && close(s[1]) == 0);

    STEP("poll: one of several becomes ready later");
    int pp[3][2];
    for (int i = 0; i < 3; i++)
        CHECK(pipe(pp[i]) == 0);
    struct pollfd f[4];
    for (int i = 0; i < 3; i++)
        f[i] = (struct pollfd){ pp[i][0], POLLIN, 0x5555 };
    f[3] = (struct pollfd){ -1, POLLIN, 0x5555 };
    /* From an ito thread when the rings park ours (else it might not run). */
    l = (struct later){ .op = OP_WRITE, .fd = pp[1][1], .buf = (char *)"!", .len = 1, .delay_ns = 30 * MS,
                        .ito = rings };
    later_start(&l);
    t0 = ito_now_ns();
    EXPECT(ito_poll(f, 4, 10000), 1, 0);
    el = ms_since(t0);
    later_join(&l);
    SOFT(f[0].revents == 0 && f[1].revents == POLLIN && f[2].revents == 0 && f[3].revents == 0);
    SOFT(el < 9000);
    /* Waiting forever, for a late writer. */
    l = (struct later){ .op = OP_WRITE, .fd = pp[2][1], .buf = (char *)"!", .len = 1, .delay_ns = 20 * MS };
    later_start(&l);
    f[1].events = 0;   /* only errors from this one, and there are none */
    CHECK(read(pp[1][0], &ch, 1) == 1);
    EXPECT(ito_poll(f, 4, -1), 1, 0);
    later_join(&l);
    SOFT(f[0].revents == 0 && f[1].revents == 0 && f[2].revents == POLLIN);
    /* POLLOUT on a full pipe, when a reader makes room. */
    set_nonblock(pp[0][1], true);
    char blk[4096];
    memset(blk, 1, sizeof blk);
    size_t filled = 0;
    for (ssize_t k; (k = write(pp[0][1], blk, sizeof blk)) > 0;)
        filled += (size_t)k;
    char *sink = xmalloc(filled);
    struct pollfd o = { pp[0][1], POLLOUT, 0 };
    EXPECT(ito_poll(&o, 1, 0), 0, 0);
    l = (struct later){ .op = OP_READ, .fd = pp[0][0], .buf = sink, .len = filled, .delay_ns = 20 * MS };
    later_start(&l);
    EXPECT(ito_poll(&o, 1, 10000), 1, 0);
    later_join(&l);
    SOFT_EQ(o.revents, POLLOUT);
    free(sink);
    for (int i = 0; i < 3; i++)
        CHECK(close(pp[i][0]) == 0 && close(pp[i][1]) == 0);

    STEP("poll: errors");
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (1u << 22)) {
        /* More entries than the soft RLIMIT_NOFILE: EINVAL. (Whole arrays:
         * the sanitizers read them.) */
        nfds_t huge = (nfds_t)rl.rlim_cur + 1;
        struct pollfd *g1 = calloc(huge, sizeof *g1), *g2 = calloc(huge, sizeof *g2);
        CHECK(g1 && g2);
        for (nfds_t i = 0; i < huge; i++)
            g1[i] = g2[i] = (struct pollfd){ -1, POLLIN, 0 };
        g1[0].fd = g2[0].fd = p[0];
        SAMEX(poll(g1, huge, 0), ito_poll(g2, huge, 10), -1, EINVAL);
        free(g1);
        free(g2);
    }
    if (!TEST_SANITIZED)   /* the sanitizers read the array first */
        SAME(poll((struct pollfd *)bad, 1, 0), ito_poll((struct pollfd *)bad, 1, 10));   /* EFAULT */
    CHECK(close(p[0]) == 0 && close(p[1]) == 0);
}

static void run(struct ctx *c)
{
    others(c);
    terminals(c);
    polls(c);
}

const struct io_topic io_topic = {
    .name = "devices",
    .run = run,
};
