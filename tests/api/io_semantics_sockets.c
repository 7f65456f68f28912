/* SPDX-License-Identifier: MIT */
/* ito/io.h against the C library (io_semantics.h): Unix stream, datagram and
 * seqpacket sockets and TCP/UDP (MSG_PEEK, MSG_DONTWAIT, MSG_WAITALL, EOF,
 * accept4 flags, connect errors). */
#include "io_semantics.h"

static void unix_sockets(struct ctx *c)
{
    char b1[8192], b2[8192];
    int s[2], t[2];

    STEP("unix stream: send, recv, MSG_PEEK, MSG_DONTWAIT");
    pairs(SOCK_STREAM, s, t);
    SAMEX(send(t[0], "abcdef", 6, 0), ito_send(s[0], "abcdef", 6, 0), 6, 0);
    SAMEX_READ(recv(t[1], b1, 3, MSG_PEEK), ito_recv(s[1], b2, 3, MSG_PEEK), b1, b2, 3, 0);
    SAMEX_READ(recv(t[1], b1, 100, MSG_PEEK), ito_recv(s[1], b2, 100, MSG_PEEK), b1, b2, 6, 0);
    SAMEX_READ(recv(t[1], b1, 100, 0), ito_recv(s[1], b2, 100, 0), b1, b2, 6, 0);
    SOFT(memcmp(b2, "abcdef", 6) == 0);
    SAME(recv(t[1], b1, 100, MSG_DONTWAIT), ito_recv(s[1], b2, 100, MSG_DONTWAIT));   /* EAGAIN */
    EXPECT(ito_recv(s[1], b2, 100, MSG_DONTWAIT), -1, EAGAIN);
    SAMEX(send(t[0], "xy", 2, MSG_DONTWAIT), ito_send(s[0], "xy", 2, MSG_DONTWAIT), 2, 0);
    SAMEX_READ(recv(t[1], b1, 100, MSG_DONTWAIT), ito_recv(s[1], b2, 100, MSG_DONTWAIT), b1, b2, 2, 0);
    /* read and write work on sockets too. */
    SAMEX(write(t[0], "rw", 2), ito_write(s[0], "rw", 2), 2, 0);
    SAMEX_READ(read(t[1], b1, 100), ito_read(s[1], b2, 100), b1, b2, 2, 0);

    STEP("unix stream: blocking recv, MSG_WAITALL");
    struct later l = { .op = OP_SEND, .fd = s[0], .buf = (char *)"later", .len = 5, .delay_ns = 20 * MS };
    later_start(&l);
    EXPECT(ito_recv(s[1], b2, 100, 0), 5, 0);
    later_join(&l);
    /* MSG_PEEK waits too, and leaves the data. */
    l = (struct later){ .op = OP_SEND, .fd = s[0], .buf = (char *)"peek", .len = 4, .delay_ns = 20 * MS };
    later_start(&l);
    EXPECT(ito_recv(s[1], b2, 100, MSG_PEEK), 4, 0);
    later_join(&l);
    EXPECT(ito_recv(s[1], b2, 100, 0), 4, 0);
    SOFT(memcmp(b2, "peek", 4) == 0);
    /* MSG_WAITALL gathers pieces sent apart. */
    char *data = xmalloc(1 << 20), *got = xmalloc(1 << 20);
    fill(data, 1 << 20, 4);
    l = (struct later){ .op = OP_SEND, .fd = s[0], .buf = data, .len = 3000, .chunks = 3, .delay_ns = 10 * MS };
    later_start(&l);
    EXPECT(ito_recv(s[1], got, 3000, MSG_WAITALL), 3000, 0);
    later_join(&l);
    SOFT(memcmp(got, data, 3000) == 0);
    /* ... and stops at EOF: libc on the twin, then ito. */
    for (int k = 0; k < 2; k++) {
        int *x = k ? s : t;
        CHECK(send(x[0], data, 500, 0) == 500);
        l = (struct later){ .op = OP_SHUT_WR, .fd = x[0], .delay_ns = 20 * MS };
        later_start(&l);
        if (k)
            EXPECT(ito_recv(x[1], got, 3000, MSG_WAITALL), 500, 0);
        else
            EXPECT(recv(x[1], got, 3000, MSG_WAITALL), 500, 0);
        later_join(&l);
        SOFT(memcmp(got, data, 500) == 0);
    }
    /* EOF after the peer's shutdown, for every read call. */
    SAMEX(recv(t[1], b1, 10, 0), ito_recv(s[1], b2, 10, 0), 0, 0);
    SAMEX(recv(t[1], b1, 10, MSG_WAITALL), ito_recv(s[1], b2, 10, MSG_WAITALL), 0, 0);
    SAMEX(read(t[1], b1, 10), ito_read(s[1], b2, 10), 0, 0);
    SAMEX(recv(t[1], b1, 10, MSG_DONTWAIT), ito_recv(s[1], b2, 10, MSG_DONTWAIT), 0, 0);
    close4(s, t);

    STEP("unix stream: large transfers, EPIPE, ENOTSOCK");
    pairs(SOCK_STREAM, s, t);
    size_t big = 1u << 20;
    l = (struct later){ .op = OP_READ, .fd = s[1], .buf = got, .len = big, .chunks = 8, .delay_ns = 2 * MS };
    later_start(&l);
    EXPECT(ito_send(s[0], data, big, 0), (long)big, 0);
    later_join(&l);
    SOFT(memcmp(got, data, big) == 0);
    memset(got, 0, big);
    l = (struct later){ .op = OP_SEND, .fd = s[0], .buf = data, .len = big, .chunks = 16, .delay_ns = 1 * MS };
    later_start(&l);
    EXPECT(ito_recv(s[1], got, big, MSG_WAITALL), (long)big, 0);
    later_join(&l);
    SOFT(memcmp(got, data, big) == 0);
    CHECK(close(s[1]) == 0 && close(t[1]) == 0);
    SAMEX(send(t[0], "x", 1, 0), ito_send(s[0], "x", 1, 0), -1, EPIPE);
    SAMEX(send(t[0], "x", 1, MSG_NOSIGNAL), ito_send(s[0], "x", 1, MSG_NOSIGNAL), -1, EPIPE);
    SAMEX(write(t[0], "x", 1), ito_write(s[0], "x", 1), -1, EPIPE);
    CHECK(close(s[0]) == 0 && close(t[0]) == 0);
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK(write(p[1], "x", 1) == 1);
    SAME(recv(p[0], b1, 1, 0), ito_recv(p[0], b2, 1, 0));   /* ENOTSOCK */
    SAME(send(p[1], "x", 1, 0), ito_send(p[1], "x", 1, 0));
    SAME(accept4(p[0], NULL, NULL, 0), ito_accept(p[0], NULL, NULL, 0));
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    SAME(connect(p[0], (struct sockaddr *)&un, sizeof un), ito_connect(p[0], (struct sockaddr *)&un, sizeof un));
    CHECK(close(p[0]) == 0 && close(p[1]) == 0);

    STEP("unix stream: O_NONBLOCK");
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s) == 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, t) == 0);
    SAME(recv(t[1], b1, 10, 0), ito_recv(s[1], b2, 10, 0));   /* EAGAIN */
    SAME(recv(t[1], b1, 10, MSG_WAITALL), ito_recv(s[1], b2, 10, MSG_WAITALL));
    SAME(read(t[1], b1, 10), ito_read(s[1], b2, 10));
    for (ssize_t k; (k = send(t[0], data, 4096, 0)) > 0;)
        CHECK(send(s[0], data, (size_t)k, 0) == k);
    SAME(send(t[0], data, 10, 0), ito_send(s[0], data, 10, 0));   /* EAGAIN */
    SAME(write(t[0], data, 10), ito_write(s[0], data, 10));
    close4(s, t);

    STEP("unix datagrams and seqpackets: records");
    for (int k = 0; k < 2; k++) {
        int type = k ? SOCK_SEQPACKET : SOCK_DGRAM;
        pairs(type, s, t);
        for (int i = 0; i < 3; i++) {
            SAMEX(send(t[0], data, 100, 0), ito_send(s[0], data, 100, 0), 100, 0);
            SAMEX(send(t[0], data + 100, 50, 0), ito_send(s[0], data + 100, 50, 0), 50, 0);
        }
        /* A record is read whole or truncated, never merged with the next. */
        SAMEX_READ(recv(t[1], b1, 10, 0), ito_recv(s[1], b2, 10, 0), b1, b2, 10, 0);
        SAMEX_READ(recv(t[1], b1, 1000, 0), ito_recv(s[1], b2, 1000, 0), b1, b2, 50, 0);
        SAME(recv(t[1], b1, 10, MSG_TRUNC), ito_recv(s[1], b2, 10, MSG_TRUNC));
        SAMEX_READ(recv(t[1], b1, 1000, MSG_PEEK), ito_recv(s[1], b2, 1000, MSG_PEEK), b1, b2, 50, 0);
        /* MSG_WAITALL on a seqpacket socket with records queued behind:
         * below, with EOF after them (a merge must not hang the test). */
        int wa = type == SOCK_DGRAM ? MSG_WAITALL : 0;
        SAMEX_READ(recv(t[1], b1, 1000, wa), ito_recv(s[1], b2, 1000, wa), b1, b2, 50, 0);
        SAMEX_READ(read(t[1], b1, 1000), ito_read(s[1], b2, 1000), b1, b2, 100, 0);
        SAMEX_READ(recv(t[1], b1, 1000, wa), ito_recv(s[1], b2, 1000, wa), b1, b2, 50, 0);
        SAMEX(recv(t[1], b1, 1000, MSG_DONTWAIT), ito_recv(s[1], b2, 1000, MSG_DONTWAIT), -1, EAGAIN);
        /* A blocking recv waits for the next record. */
        l = (struct later){ .op = OP_SEND, .fd = s[0], .buf = data, .len = 77, .delay_ns = 20 * MS };
        later_start(&l);
        EXPECT(ito_recv(s[1], b2, 1000, 0), 77, 0);
        later_join(&l);
        /* Records, MSG_WAITALL and the sender's shutdown: two records, then
         * EOF (seqpacket) or nothing more (datagram: the twin's libc call is
         * made first and must not block, so no shutdown there). */
        if (type == SOCK_SEQPACKET) {
            for (int j = 0; j < 2; j++) {
                int *x = j ? s : t;
                CHECK(send(x[0], "abc", 3, 0) == 3);
                CHECK(send(x[0], "defg", 4, 0) == 4);
                CHECK(shutdown(x[0], SHUT_WR) == 0);
            }
            SAMEX_READ(recv(t[1], b1, 100, MSG_WAITALL), ito_recv(s[1], b2, 100, MSG_WAITALL), b1, b2, 3,
                   0);
            SAMEX_READ(recv(t[1], b1, 100, MSG_WAITALL), ito_recv(s[1], b2, 100, MSG_WAITALL), b1, b2, 4,
                   0);
            SAMEX(recv(t[1], b1, 100, MSG_WAITALL), ito_recv(s[1], b2, 100, MSG_WAITALL), 0, 0);
        }
        close4(s, t);
    }

    STEP("unix: listen, connect, accept");
    char path[64];
    tmp_name(path, "sock");
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    strcpy(sa.sun_path, path);
    int ls = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(ls >= 0);
    CHECK(bind(ls, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(ls, 16) == 0);
    int cs = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(cs >= 0);
    EXPECT(ito_connect(cs, (struct sockaddr *)&sa, sizeof sa), 0, 0);
    struct sockaddr_un peer;
    socklen_t plen = sizeof peer;
    int as = EXPECT_FD(ito_accept(ls, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC));
    SOFT_EQ(plen, sizeof(sa_family_t));   /* the client is unnamed */
    if (as >= 0) {
        SOFT(fcntl(as, F_GETFD) & FD_CLOEXEC);
        EXPECT(ito_send(cs, "u", 1, 0), 1, 0);
        EXPECT(ito_recv(as, b2, 10, 0), 1, 0);
        close(as);
    }
    close(cs);
    /* No listener at a path: ENOENT; a regular file: ECONNREFUSED. */
    char nopath[64];
    tmp_name(nopath, "nosock");
    struct sockaddr_un na = { .sun_family = AF_UNIX };
    strcpy(na.sun_path, nopath);
    int c1 = socket(AF_UNIX, SOCK_STREAM, 0), c2 = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(c1 >= 0 && c2 >= 0);
    SAME(connect(c1, (struct sockaddr *)&na, sizeof na), ito_connect(c2, (struct sockaddr *)&na, sizeof na));
    int reg = open(nopath, O_CREAT | O_WRONLY, 0600);
    CHECK(reg >= 0);
    close(reg);
    SAME(connect(c1, (struct sockaddr *)&na, sizeof na), ito_connect(c2, (struct sockaddr *)&na, sizeof na));
    CHECK(unlink(nopath) == 0);
    /* A listener that went away (the path stays): ECONNREFUSED. */
    CHECK(close(ls) == 0);
    SAME(connect(c1, (struct sockaddr *)&sa, sizeof sa), ito_connect(c2, (struct sockaddr *)&sa, sizeof sa));
    CHECK(close(c1) == 0 && close(c2) == 0);
    CHECK(unlink(path) == 0);
    free(data);
    free(got);
}

static void tcp(struct ctx *c)
{
    char b1[8192], b2[8192];
    struct sockaddr_in la;
    int l = tcp_listener(&la, 0);

    STEP("tcp: blocking connect and accept");
    int cs = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(cs >= 0);
    EXPECT(ito_connect(cs, (struct sockaddr *)&la, sizeof la), 0, 0);
    struct sockaddr_in mine, peer;
    socklen_t len = sizeof mine;
    CHECK(getsockname(cs, (struct sockaddr *)&mine, &len) == 0);
    memset(&peer, 0, sizeof peer);
    len = sizeof peer;
    int as = EXPECT_FD(ito_accept(l, (struct sockaddr *)&peer, &len, 0));
    SOFT_EQ(len, sizeof(struct sockaddr_in));
    SOFT(same_addr(&peer, &mine));
    if (as >= 0) {
        SOFT_EQ(fcntl(as, F_GETFD) & FD_CLOEXEC, 0);
        SOFT_EQ(fcntl(as, F_GETFL) & O_NONBLOCK, 0);
        struct sockaddr_in pp;
        len = sizeof pp;
        CHECK(getpeername(cs, (struct sockaddr *)&pp, &len) == 0);
        SOFT(same_addr(&pp, &la));
    }
    SAME(connect(cs, (struct sockaddr *)&la, sizeof la), ito_connect(cs, (struct sockaddr *)&la, sizeof la));   /* EISCONN */

    STEP("tcp: send, recv, MSG_PEEK, MSG_WAITALL, EOF");
    EXPECT(ito_send(cs, "tcpdata", 7, 0), 7, 0);
    EXPECT(ito_recv(as, b2, 3, MSG_PEEK | MSG_WAITALL), 3, 0);
    EXPECT(ito_recv(as, b2, 7, MSG_WAITALL), 7, 0);
    SOFT(memcmp(b2, "tcpdata", 7) == 0);
    EXPECT(ito_recv(as, b2, 7, MSG_DONTWAIT), -1, EAGAIN);
    /* MSG_PEEK|MSG_WAITALL while the data comes in pieces: whatever the
     * count (Linux's own answer varies with timing here), the bytes are the
     * start of the stream, never a piece twice; and they stay queued. */
    CHECK(send(cs, "abc", 3, 0) == 3);
    struct later pw = { .op = OP_SEND, .fd = cs, .buf = (char *)"defgh", .len = 5, .delay_ns = 20 * MS };
    later_start(&pw);
    ito_sleep_ns(5 * MS);   /* "abc" has arrived */
    memset(b2, 0, 16);
    long pr = EXPECT_FD(ito_recv(as, b2, 8, MSG_PEEK | MSG_WAITALL));
    later_join(&pw);
    if (pr < 3 || pr > 8 || memcmp(b2, "abcdefgh", (size_t)pr) != 0)
        report(c, __LINE__, "ito_recv(MSG_PEEK|MSG_WAITALL) returned %ld: \"%.8s\", not the start of \"abcdefgh\"", pr, b2);
    EXPECT(recv(as, b2, 8, MSG_WAITALL), 8, 0);
    SOFT(memcmp(b2, "abcdefgh", 8) == 0);
    /* Big: 1 MiB each way. */
    size_t big = 1u << 20;
    char *data = xmalloc(big), *got = xmalloc(big);
    fill(data, big, 5);
    struct later w = { .op = OP_READ, .fd = as, .buf = got, .len = big, .chunks = 8, .delay_ns = 2 * MS };
    later_start(&w);
    EXPECT(ito_send(cs, data, big, 0), (long)big, 0);
    later_join(&w);
    SOFT(memcmp(got, data, big) == 0);
    memset(got, 0, big);
    w = (struct later){ .op = OP_SEND, .fd = as, .buf = data, .len = big, .chunks = 16, .delay_ns = 1 * MS };
    later_start(&w);
    EXPECT(ito_recv(cs, got, big, MSG_WAITALL), (long)big, 0);
    later_join(&w);
    SOFT(memcmp(got, data, big) == 0);
    /* EOF after shutdown. */
    w = (struct later){ .op = OP_SHUT_WR, .fd = as, .delay_ns = 20 * MS };
    later_start(&w);
    EXPECT(ito_recv(cs, b2, 10, 0), 0, 0);
    later_join(&w);
    EXPECT(ito_recv(cs, b2, 10, MSG_WAITALL), 0, 0);
    EXPECT(ito_read(cs, b2, 10), 0, 0);
    CHECK(close(cs) == 0);
    if (as >= 0)
        CHECK(close(as) == 0);

    STEP("tcp: accept flags, address truncation, a late client");
    static const int fl[] = { SOCK_CLOEXEC | SOCK_NONBLOCK, SOCK_CLOEXEC, SOCK_NONBLOCK };
    for (int i = 0; i < 3; i++) {
        int k = tcp_client(&la);
        int a = EXPECT_FD(ito_accept(l, NULL, NULL, fl[i]));
        if (a >= 0) {
            SOFT_EQ(!!(fcntl(a, F_GETFD) & FD_CLOEXEC), !!(fl[i] & SOCK_CLOEXEC));
            SOFT_EQ(!!(fcntl(a, F_GETFL) & O_NONBLOCK), !!(fl[i] & SOCK_NONBLOCK));
            close(a);
        }
        close(k);
    }
    {
        int k1 = tcp_client(&la), k2 = tcp_client(&la);
        char aa[32], ab[32];
        memset(aa, 0x55, sizeof aa);
        memset(ab, 0x55, sizeof ab);
        socklen_t l1 = 4, l2 = 4;
        int x1 = accept4(l, (struct sockaddr *)aa, &l1, 0);
        int x2 = EXPECT_FD(ito_accept(l, (struct sockaddr *)ab, &l2, 0));
        SOFT_EQ(l2, l1);   /* the full length, though only 4 bytes were written */
        SOFT(memcmp(aa + 4, ab + 4, 28) == 0);   /* nothing past the 4 bytes */
        SOFT(memcmp(aa, ab, 2) == 0);            /* the family */
        close(x1);
        if (x2 >= 0)
            close(x2);
        close(k1);
        close(k2);
    }
    int late = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(late >= 0);
    w = (struct later){ .op = OP_CONNECT, .fd = late, .sa = (struct sockaddr *)&la, .salen = sizeof la,
                        .delay_ns = 20 * MS };
    later_start(&w);
    int a = EXPECT_FD(ito_accept(l, NULL, NULL, 0));
    later_join(&w);
    SOFT_EQ(w.ret, 0);
    if (a >= 0)
        close(a);
    close(late);

    STEP("tcp: accept errors");
    int lnb = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    CHECK(lnb >= 0);
    struct sockaddr_in nba = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    CHECK(bind(lnb, (struct sockaddr *)&nba, sizeof nba) == 0 && listen(lnb, 4) == 0);
    SAMEX(accept4(lnb, NULL, NULL, 0), ito_accept(lnb, NULL, NULL, 0), -1, EAGAIN);
    SAME(accept4(lnb, NULL, NULL, SOCK_CLOEXEC), ito_accept(lnb, NULL, NULL, SOCK_CLOEXEC));
    SAME(accept4(l, NULL, NULL, 0x1), ito_accept(l, NULL, NULL, 0x1));   /* EINVAL: bad flags */
    SAME(accept4(lnb, NULL, NULL, 0x1), ito_accept(lnb, NULL, NULL, 0x1));
    int unl = socket(AF_INET, SOCK_STREAM, 0);   /* not listening: EINVAL */
    CHECK(unl >= 0);
    SAME(accept4(unl, NULL, NULL, 0), ito_accept(unl, NULL, NULL, 0));
    int udp = socket(AF_INET, SOCK_DGRAM, 0);   /* EOPNOTSUPP */
    CHECK(udp >= 0);
    SAME(accept4(udp, NULL, NULL, 0), ito_accept(udp, NULL, NULL, 0));
    CHECK(close(lnb) == 0 && close(unl) == 0 && close(udp) == 0);

    STEP("tcp: connect errors, non-blocking connect");
    /* A port bound but not listening (held, so nobody else takes it). */
    int holder = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(holder >= 0);
    struct sockaddr_in ca = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    CHECK(bind(holder, (struct sockaddr *)&ca, sizeof ca) == 0);
    len = sizeof ca;
    CHECK(getsockname(holder, (struct sockaddr *)&ca, &len) == 0);
    int k1 = socket(AF_INET, SOCK_STREAM, 0), k2 = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(k1 >= 0 && k2 >= 0);
    SAMEX(connect(k1, (struct sockaddr *)&ca, sizeof ca), ito_connect(k2, (struct sockaddr *)&ca, sizeof ca), -1,
           ECONNREFUSED);
    CHECK(close(k1) == 0 && close(k2) == 0);
    k1 = socket(AF_INET, SOCK_STREAM, 0);
    k2 = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(k1 >= 0 && k2 >= 0);
    SAME(connect(k1, (struct sockaddr *)&la, 3), ito_connect(k2, (struct sockaddr *)&la, 3));   /* EINVAL */
    struct sockaddr_un ua = { .sun_family = AF_UNIX };
    SAME(connect(k1, (struct sockaddr *)&ua, sizeof ua), ito_connect(k2, (struct sockaddr *)&ua, sizeof ua));
    CHECK(close(k1) == 0 && close(k2) == 0);
    CHECK(close(holder) == 0);
    int nb = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    CHECK(nb >= 0);
    test_set_errno(SENTINEL);
    int r = ito_connect(nb, (struct sockaddr *)&la, sizeof la);
    int e = test_errno();
    if (!(r == 0 || (r == -1 && e == EINPROGRESS)))
        report(c, __LINE__, "non-blocking ito_connect returned %d (%s)", r, ename(e));
    struct pollfd pf = { nb, POLLOUT, 0 };
    CHECK(poll(&pf, 1, 10000) == 1);
    int soerr = -1;
    len = sizeof soerr;
    CHECK(getsockopt(nb, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0);
    SOFT_EQ(soerr, 0);
    a = EXPECT_FD(ito_accept(l, NULL, NULL, 0));
    if (a >= 0) {
        EXPECT(ito_send(nb, "nb", 2, 0), 2, 0);
        EXPECT(ito_recv(a, b2, 2, MSG_WAITALL), 2, 0);
        close(a);
    }
    close(nb);
    CHECK(close(l) == 0);

    STEP("udp");
    int u1 = socket(AF_INET, SOCK_DGRAM, 0), u2 = socket(AF_INET, SOCK_DGRAM, 0), u3 = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(u1 >= 0 && u2 >= 0 && u3 >= 0);
    struct sockaddr_in ua1 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    CHECK(bind(u1, (struct sockaddr *)&ua1, sizeof ua1) == 0);
    len = sizeof ua1;
    CHECK(getsockname(u1, (struct sockaddr *)&ua1, &len) == 0);
    SAME(send(u3, "x", 1, 0), ito_send(u2, "x", 1, 0));   /* EDESTADDRREQ */
    EXPECT(ito_connect(u2, (struct sockaddr *)&ua1, sizeof ua1), 0, 0);
    EXPECT(ito_send(u2, "datagram", 8, 0), 8, 0);
    EXPECT(ito_recv(u1, b2, 4, 0), 4, 0);   /* truncated */
    w = (struct later){ .op = OP_SEND, .fd = u2, .buf = (char *)"late", .len = 4, .delay_ns = 20 * MS };
    later_start(&w);
    EXPECT(ito_recv(u1, b2, 100, 0), 4, 0);
    later_join(&w);
    CHECK(close(u1) == 0 && close(u2) == 0 && close(u3) == 0);
    (void)b1;
    free(data);
    free(got);
}

/* A message of two pieces, and where a received one lands. */
static struct msghdr msg_of(struct iovec v[2], char *a, size_t na, char *b, size_t nb, void *ctl, size_t nctl)
{
    v[0] = (struct iovec){ a, na };
    v[1] = (struct iovec){ b, nb };
    return (struct msghdr){ .msg_iov = v, .msg_iovlen = 2, .msg_control = ctl, .msg_controllen = nctl };
}

static void messages(struct ctx *c)
{
    char b1[8192], b2[8192];
    int s[2], t[2];
    struct iovec v1[2], v2[2];

    STEP("recvmsg, sendmsg: unix stream with a descriptor passed");
    pairs(SOCK_STREAM, s, t);
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } out, in1, in2;
    memset(&out, 0, sizeof out);
    out.h.cmsg_level = SOL_SOCKET;
    out.h.cmsg_type = SCM_RIGHTS;
    out.h.cmsg_len = CMSG_LEN(sizeof(int));
    int passed = open("/dev/null", O_RDONLY);
    CHECK(passed >= 0);
    memcpy(CMSG_DATA(&out.h), &passed, sizeof passed);
    struct msghdr m1 = msg_of(v1, (char *)"head", 4, (char *)"tail!", 5, &out, sizeof out);
    struct msghdr m2 = msg_of(v2, (char *)"head", 4, (char *)"tail!", 5, &out, sizeof out);
    SAMEX(sendmsg(t[0], &m1, 0), ito_sendmsg(s[0], &m2, 0), 9, 0);
    m1 = msg_of(v1, b1, 3, b1 + 3, 100, &in1, sizeof in1);
    m2 = msg_of(v2, b2, 3, b2 + 3, 100, &in2, sizeof in2);
    SAMEX_READ(recvmsg(t[1], &m1, 0), ito_recvmsg(s[1], &m2, 0), b1, b2, 9, 0);
    SOFT(memcmp(b2, "headtail!", 9) == 0);
    SOFT_EQ(m2.msg_controllen, m1.msg_controllen);
    SOFT_EQ(m2.msg_flags, m1.msg_flags);
    struct cmsghdr *ch1 = CMSG_FIRSTHDR(&m1), *ch2 = CMSG_FIRSTHDR(&m2);
    SOFT(ch1 && ch2 && ch2->cmsg_type == SCM_RIGHTS && ch2->cmsg_len == ch1->cmsg_len);
    if (ch1 && ch2) {
        int f1, f2;
        memcpy(&f1, CMSG_DATA(ch1), sizeof f1);
        memcpy(&f2, CMSG_DATA(ch2), sizeof f2);
        SOFT(fcntl(f2, F_GETFD) >= 0);   /* a descriptor of this process */
        close(f1);
        close(f2);
    }
    close(passed);
    m1 = msg_of(v1, b1, 10, b1 + 10, 10, NULL, 0);
    m2 = msg_of(v2, b2, 10, b2 + 10, 10, NULL, 0);
    SAMEX(recvmsg(t[1], &m1, MSG_DONTWAIT), ito_recvmsg(s[1], &m2, MSG_DONTWAIT), -1, EAGAIN);
    SAME(recvmsg(-1, &m1, 0), ito_recvmsg(-1, &m2, 0));   /* EBADF */


    STEP("recvmsg with MSG_WAITALL and a control buffer gathers pieces sent apart");
    {
        char ctl[64];
        struct later lw = { .op = OP_SEND, .fd = s[0], .buf = (char *)"0123456789", .len = 10, .chunks = 2,
                            .delay_ns = 10 * MS };
        later_start(&lw);
        m2 = msg_of(v2, b2, 4, b2 + 4, 6, ctl, sizeof ctl);
        EXPECT(ito_recvmsg(s[1], &m2, MSG_WAITALL), 10, 0);
        later_join(&lw);
        SOFT(memcmp(b2, "0123456789", 10) == 0);
    }

    STEP("recvmsg waits; sendmsg of 1 MiB to a slow reader is whole");
    struct later l = { .op = OP_SEND, .fd = s[0], .buf = (char *)"later", .len = 5, .delay_ns = 20 * MS };
    later_start(&l);
    m2 = msg_of(v2, b2, 2, b2 + 2, 100, NULL, 0);
    EXPECT(ito_recvmsg(s[1], &m2, 0), 5, 0);
    later_join(&l);
    SOFT(memcmp(b2, "later", 5) == 0);
    size_t big = 1u << 20;
    char *data = xmalloc(big), *got = xmalloc(big);
    fill(data, big, 9);
    struct later w = { .op = OP_READ, .fd = s[1], .buf = got, .len = big, .chunks = 8, .delay_ns = 2 * MS };
    later_start(&w);
    m2 = msg_of(v2, data, 1000, data + 1000, big - 1000, NULL, 0);
    EXPECT(ito_sendmsg(s[0], &m2, 0), (long)big, 0);
    later_join(&w);
    SOFT(memcmp(got, data, big) == 0);
    close4(s, t);

    STEP("recvmsg: a datagram truncated (MSG_TRUNC in msg_flags)");
    pairs(SOCK_DGRAM, s, t);
    SAMEX(send(t[0], data, 100, 0), ito_send(s[0], data, 100, 0), 100, 0);
    m1 = msg_of(v1, b1, 4, b1 + 4, 6, NULL, 0);
    m2 = msg_of(v2, b2, 4, b2 + 4, 6, NULL, 0);
    SAMEX_READ(recvmsg(t[1], &m1, 0), ito_recvmsg(s[1], &m2, 0), b1, b2, 10, 0);
    SOFT_EQ(m2.msg_flags & MSG_TRUNC, MSG_TRUNC);
    SOFT_EQ(m2.msg_flags, m1.msg_flags);
    close4(s, t);

    STEP("udp: sendmsg to an address, recvmsg of the sender's address, waiting");
    int u1 = socket(AF_INET, SOCK_DGRAM, 0), u2 = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(u1 >= 0 && u2 >= 0);
    struct sockaddr_in a1 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) }, a2 = a1;
    CHECK(bind(u1, (struct sockaddr *)&a1, sizeof a1) == 0 && bind(u2, (struct sockaddr *)&a2, sizeof a2) == 0);
    socklen_t len = sizeof a1;
    CHECK(getsockname(u1, (struct sockaddr *)&a1, &len) == 0);
    len = sizeof a2;
    CHECK(getsockname(u2, (struct sockaddr *)&a2, &len) == 0);
    m2 = msg_of(v2, (char *)"to-", 3, (char *)"u1", 2, NULL, 0);
    m2.msg_name = &a1;
    m2.msg_namelen = sizeof a1;
    EXPECT(ito_sendmsg(u2, &m2, 0), 5, 0);
    struct sockaddr_in from;
    memset(&from, 0, sizeof from);
    m2 = msg_of(v2, b2, 3, b2 + 3, 100, NULL, 0);
    m2.msg_name = &from;
    m2.msg_namelen = sizeof from;
    EXPECT(ito_recvmsg(u1, &m2, 0), 5, 0);
    SOFT(memcmp(b2, "to-u1", 5) == 0);
    SOFT_EQ(m2.msg_namelen, sizeof from);
    SOFT(same_addr(&from, &a2));
    CHECK(connect(u2, (struct sockaddr *)&a1, sizeof a1) == 0);
    w = (struct later){ .op = OP_SEND, .fd = u2, .buf = (char *)"late", .len = 4, .delay_ns = 20 * MS };
    later_start(&w);
    memset(&from, 0, sizeof from);
    m2 = msg_of(v2, b2, 1, b2 + 1, 100, NULL, 0);
    m2.msg_name = &from;
    m2.msg_namelen = sizeof from;
    EXPECT(ito_recvmsg(u1, &m2, 0), 4, 0);
    later_join(&w);
    SOFT(same_addr(&from, &a2));
    /* An empty error queue: the kernel answers at once (EAGAIN). */
    int u3 = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(u3 >= 0);
    m1 = msg_of(v1, b1, 10, b1 + 10, 10, NULL, 0);
    m2 = msg_of(v2, b2, 10, b2 + 10, 10, NULL, 0);
    SAMEX(recvmsg(u3, &m1, MSG_ERRQUEUE), ito_recvmsg(u1, &m2, MSG_ERRQUEUE), -1, EAGAIN);
    SAMEX(recv(u3, b1, 10, MSG_ERRQUEUE), ito_recv(u1, b2, 10, MSG_ERRQUEUE), -1, EAGAIN);
    CHECK(close(u1) == 0 && close(u2) == 0 && close(u3) == 0);
    free(data);
    free(got);
}

static void run(struct ctx *c)
{
    unix_sockets(c);
    tcp(c);
    messages(c);
}

const struct io_topic io_topic = {
    .name = "sockets",
    .run = run,
};
