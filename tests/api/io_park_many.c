/* SPDX-License-Identifier: MIT */
/* ito/io.h parks the calling ito thread, not its vproc (io_park.h): many
 * threads blocked.
 *
 *   - Thousands of threads blocked at once, one pipe each; all complete.
 *   - A ping-pong of 10,000 round trips over two pipes.
 *   - A TCP echo server on loopback: a thread per connection, 50 clients of
 *     100 messages each; every byte checked. */
#include "io_park.h"

/* ------------------------------------------------ many blocked at once */

struct reader {
    int fd;
    uint64_t got;
    long r;
};
static atomic_long readers_started, readers_done;

static void *reader_fn(void *a)
{
    struct reader *r = a;
    atomic_fetch_add(&readers_started, 1);
    r->r = ito_read(r->fd, &r->got, sizeof r->got);
    atomic_fetch_add(&readers_done, 1);
    return NULL;
}

static void many_blocked(void)
{
    begin("many threads blocked at once", 60);
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    }
    long n = test_scaled(10000);
    long fit = rl.rlim_cur == RLIM_INFINITY ? n : ((long)rl.rlim_cur - 64) / 2;
    if (n > fit)
        n = fit;
    CHECK(n > 0);
    printf("io_park: %ld threads blocked in ito_read at once (RLIMIT_NOFILE %ld)\n", n,
           rl.rlim_cur == RLIM_INFINITY ? -1L : (long)rl.rlim_cur);
    fflush(stdout);
    struct reader *rs = calloc((size_t)n, sizeof *rs);
    int *wfd = calloc((size_t)n, sizeof *wfd);
    ito_thread_t *ts = calloc((size_t)n, sizeof *ts);
    CHECK(rs && wfd && ts);
    for (long i = 0; i < n; i++) {
        int p[2];
        CHECK(pipe(p) == 0);
        rs[i].fd = p[0];
        wfd[i] = p[1];
    }
    atomic_store(&readers_started, 0);
    atomic_store(&readers_done, 0);
    for (long i = 0; i < n; i++)
        OK(ito_spawn(&ts[i], NULL, reader_fn, &rs[i]));
    WAIT_UNTIL(atomic_load(&readers_started) == n, 60);
    ito_sleep_ns(10 * MS);
    CHECK_EQ(atomic_load(&readers_done), 0);
    /* Release them in a scattered order. */
    uint64_t seed = 42;
    long *order = malloc((size_t)n * sizeof *order);
    CHECK(order);
    for (long i = 0; i < n; i++)
        order[i] = i;
    for (long i = n - 1; i > 0; i--) {
        long j = (long)(test_rand(&seed) % (uint64_t)(i + 1));
        long t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (long k = 0; k < n; k++) {
        long i = order[k];
        uint64_t v = 0x1000000000ull + (uint64_t)i;
        CHECK(write(wfd[i], &v, sizeof v) == (ssize_t)sizeof v);
    }
    for (long i = 0; i < n; i++) {
        OK(ito_join(ts[i], NULL));
        CHECK_EQ(rs[i].r, 8);
        CHECK_EQ(rs[i].got, 0x1000000000ull + (uint64_t)i);
        close(rs[i].fd);
        close(wfd[i]);
    }
    free(order);
    free(rs);
    free(wfd);
    free(ts);
}

/* ------------------------------------------------ ping-pong */

static int ab[2], ba[2];
static long rounds;

/* A message: one length byte, then len bytes of a pattern of round i. */
static size_t msg_make(char *m, long i)
{
    size_t len = 1 + (size_t)(i % 61);
    m[0] = (char)len;
    for (size_t k = 0; k < len; k++)
        m[1 + k] = (char)(i * 7 + (long)k);
    return len + 1;
}

static void *pong_fn(void *a)
{
    char m[128];
    for (long i = 0; i < rounds; i++) {
        ito_read_full(ab[0], m, 1);
        size_t len = (size_t)(unsigned char)m[0];
        ito_read_full(ab[0], m + 1, len);
        for (size_t k = 0; k < len; k++)
            m[1 + k] = (char)(m[1 + k] + 1);
        ito_write_full(ba[1], m, len + 1);
    }
    return NULL;
}

static void *ping_fn(void *a)
{
    char m[128], r[128];
    for (long i = 0; i < rounds; i++) {
        size_t n = msg_make(m, i);
        CHECK_EQ(ito_write(ab[1], m, n), (long)n);   /* < PIPE_BUF: all at once */
        ito_read_full(ba[0], r, n);
        CHECK_EQ(r[0], m[0]);
        for (size_t k = 1; k < n; k++)
            CHECK_EQ((unsigned char)r[k], (unsigned char)(m[k] + 1));
    }
    return NULL;
}

static void ping_pong(void)
{
    begin("ping-pong over two pipes", 30);
    rounds = test_scaled(10000);
    CHECK(pipe(ab) == 0 && pipe(ba) == 0);
    ito_thread_t a, b;
    OK(ito_spawn(&b, NULL, pong_fn, NULL));
    OK(ito_spawn(&a, NULL, ping_fn, NULL));
    OK(ito_join(a, NULL));
    OK(ito_join(b, NULL));
    CHECK(close(ab[0]) == 0 && close(ab[1]) == 0 && close(ba[0]) == 0 && close(ba[1]) == 0);
}

/* ------------------------------------------------ TCP echo */

enum { CLIENTS = 50 };
static long messages;
static int listener;
static struct sockaddr_in laddr;
static atomic_long echoed;

static void *echo_fn(void *a)
{
    int fd = (int)(intptr_t)a;
    char buf[4096];
    for (;;) {
        ssize_t r = ito_recv(fd, buf, sizeof buf, 0);
        CHECK(r >= 0);
        if (r == 0)
            break;
        CHECK_EQ(ito_send(fd, buf, (size_t)r, 0), r);
        atomic_fetch_add(&echoed, r);
    }
    OK(ito_close(fd));
    return NULL;
}

static void *server_fn(void *a)
{
    ito_thread_t ts[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        int fd = ito_accept(listener, NULL, NULL, SOCK_CLOEXEC);
        CHECK(fd >= 0);
        OK(ito_spawn(&ts[i], NULL, echo_fn, (void *)(intptr_t)fd));
    }
    for (int i = 0; i < CLIENTS; i++)
        OK(ito_join(ts[i], NULL));
    return NULL;
}

static void *client_fn(void *a)
{
    int id = (int)(intptr_t)a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    CHECK_EQ(ito_connect(fd, (struct sockaddr *)&laddr, sizeof laddr), 0);
    char *out = malloc(4000), *in = malloc(4000);
    CHECK(out && in);
    for (long m = 0; m < messages; m++) {
        size_t len = 1 + (size_t)((id * 31 + m * 17) % 3999);
        fill(out, len, (unsigned)(id * 1000 + m));
        CHECK_EQ(ito_send(fd, out, len, 0), (long)len);
        memset(in, 0, len);
        if (m % 2) {
            CHECK_EQ(ito_recv(fd, in, len, MSG_WAITALL), (long)len);
        } else {
            for (size_t got = 0; got < len;) {
                ssize_t r = ito_recv(fd, in + got, len - got, 0);
                CHECK(r > 0);
                got += (size_t)r;
            }
        }
        CHECK(memcmp(in, out, len) == 0);
    }
    CHECK(shutdown(fd, SHUT_WR) == 0);
    char ch;
    CHECK_EQ(ito_recv(fd, &ch, 1, 0), 0);   /* the server closed */
    OK(ito_close(fd));
    free(out);
    free(in);
    return NULL;
}

static void tcp_echo(void)
{
    begin("TCP echo", 60);
    messages = test_scaled(100);
    listener = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(listener >= 0);
    memset(&laddr, 0, sizeof laddr);
    laddr.sin_family = AF_INET;
    laddr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(listener, (struct sockaddr *)&laddr, sizeof laddr) == 0 && listen(listener, 128) == 0);
    socklen_t len = sizeof laddr;
    CHECK(getsockname(listener, (struct sockaddr *)&laddr, &len) == 0);
    ito_thread_t srv, cl[CLIENTS];
    OK(ito_spawn(&srv, NULL, server_fn, NULL));
    for (int i = 0; i < CLIENTS; i++)
        OK(ito_spawn(&cl[i], NULL, client_fn, (void *)(intptr_t)i));
    for (int i = 0; i < CLIENTS; i++)
        OK(ito_join(cl[i], NULL));
    OK(ito_join(srv, NULL));
    close(listener);
    long want = 0;
    for (int id = 0; id < CLIENTS; id++)
        for (long m = 0; m < messages; m++)
            want += 1 + (id * 31 + m * 17) % 3999;
    CHECK_EQ(atomic_load(&echoed), want);
}

int main(void)
{
    park_start("io_park_many");
    many_blocked();
    ping_pong();
    tcp_echo();
    alarm(0);
    printf("io_park_many: all passed\n");
    return 0;
}
