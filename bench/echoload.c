/* SPDX-License-Identifier: MIT */
/*
 * echoload — the load generator of the echo-server benchmark (bench/echo.c
 * starts it as a child process, so that both servers face the same client).
 * One kernel thread, epoll, non-blocking sockets: C connections to
 * 127.0.0.1:PORT, each in a closed loop: send a message of M bytes, wait for
 * the whole echo (checked byte for byte), send the next one.
 *
 *   echoload --port P --conns C [--msg 64] [--warmup-ms W] [--duration-ms D]
 *            [--batch B] [--cpu K]
 *
 * Phases:
 *   setup:   connect in batches of B (default 500, below the listen backlog
 *            and tcp_max_syn_backlog); a batch is done when every connection
 *            of it has had one round trip (so the server has accepted it)
 *            before the next batch starts. No connection waits in a full
 *            accept queue, where a dropped SYN costs a 1 s retransmission.
 *   warm-up: all connections loop for W ms; nothing is counted.
 *   window:  D ms; the round trips that complete inside it give the
 *            throughput. The latency (send of the first byte to receipt of
 *            the last) of every round trip under way at some moment of the
 *            window — completed in it, or in flight at its end — goes to a
 *            log-linear histogram (32 buckets per power of two: under 3 %
 *            error). So a connection the server starves still counts, with
 *            the time it waited, rather than dropping out of the figures.
 *   drain:   no new messages; the ones in flight complete (their latency
 *            counts, see above); every connection is closed (the server then
 *            reads end of file).
 * Prints one JSON line: msgs_per_s, p50_us, p90_us, p99_us, p999_us, max_us,
 * mean_us, messages, bytes_sent (all phases: the server's echoed bytes must
 * match), setup_s, and "verified" (every echo was the message sent).
 * Fairness: "stalled_conns" counts the connections that completed no round
 * trip in the window, and
 * "fairness" is Jain's index of the round trips per connection (1: all
 * equal; 1/C: one connection got everything). In a closed loop the mean
 * latency is C / throughput whatever the server does (Little's law). A server
 * that stops answering fails the run (setup: 60 s; drain: 10 s).
 * --cpu K pins this process to CPU K (echo.c passes a CPU the server does not
 * use when there is one).
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "common.h"

enum { IDLE, CONNECTING, BUSY };

struct conn {
    int fd, state;
    uint32_t sent, got;          /* bytes of the current message */
    uint64_t seq, t_send;
    uint32_t done;               /* round trips completed in the window */
    unsigned char *out, *in;     /* the message sent, the echo so far */
};

static struct conn *conns;
static int nconns, msg = 64, epfd;
static bool looping;             /* a completed round trip starts the next */
static bool counting;            /* from the window's start on */
static uint64_t win_end;
static long long idle_count, bytes_sent, messages, samples;
static uint64_t lat_sum, lat_max;

/* ------------------------------------------------------------ histogram */

#define SUB_BITS 5
#define NBUCKETS (64 + 58 * 32)
static uint64_t hist[NBUCKETS];

static int bucket(uint64_t v)
{
    if (v < 64)
        return (int)v;
    int e = 63 - __builtin_clzll(v);   /* >= 6 */
    return 64 + (e - 6) * 32 + (int)((v >> (e - SUB_BITS)) & 31);
}

/* The middle of bucket i. */
static double bucket_mid(int i)
{
    if (i < 64)
        return i;
    int e = (i - 64) / 32 + 6, sub = (i - 64) % 32;
    double w = (double)(1ull << (e - SUB_BITS));
    return (32 + sub) * w + w / 2;
}

static double percentile_ns(double p)
{
    uint64_t total = 0, acc = 0;
    for (int i = 0; i < NBUCKETS; i++)
        total += hist[i];
    if (!total)
        return 0;
    uint64_t want = (uint64_t)(p * (double)total + 0.999999);
    if (want < 1)
        want = 1;
    for (int i = 0; i < NBUCKETS; i++) {
        acc += hist[i];
        if (acc >= want)
            return bucket_mid(i);
    }
    return bucket_mid(NBUCKETS - 1);
}

/* ------------------------------------------------------------ connections */

static void watch(struct conn *c, int op, uint32_t events)
{
    struct epoll_event ev = { .events = events, .data.u32 = (uint32_t)(c - conns) };
    if (epoll_ctl(epfd, op, c->fd, &ev) != 0)
        bench_fail("epoll_ctl: %s", strerror(errno));
}

static void fill(struct conn *c)
{
    uint64_t id = (uint64_t)(c - conns);
    for (int i = 0; i < msg; i++)
        c->out[i] = (unsigned char)(id * 131 + c->seq * 7 + (uint64_t)i);
    memcpy(c->out, &c->seq, msg >= 8 ? 8 : (size_t)msg);
}

static void flush_out(struct conn *c)
{
    while (c->sent < (uint32_t)msg) {
        ssize_t r = send(c->fd, c->out + c->sent, (size_t)msg - c->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                watch(c, EPOLL_CTL_MOD, EPOLLIN | EPOLLOUT);
                return;
            }
            bench_fail("connection %d: send: %s", (int)(c - conns), strerror(errno));
        }
        c->sent += (uint32_t)r;
        bytes_sent += r;
    }
}

static void start_msg(struct conn *c)
{
    c->seq++;
    fill(c);
    c->sent = c->got = 0;
    c->state = BUSY;
    c->t_send = bench_now_ns();
    flush_out(c);
}

static void on_echo_done(struct conn *c, uint64_t now)
{
    if (memcmp(c->in, c->out, (size_t)msg) != 0) {
        json_begin(bench_exp, bench_impl);
        json_str("error", "an echo differs from the message sent");
        json_bool("verified", false);
        json_int("connection", c - conns);
        json_int("seq", (long long)c->seq);
        json_end();
        exit(3);
    }
    if (counting && c->t_send < win_end) {
        uint64_t l = now - c->t_send;
        hist[bucket(l)]++;
        lat_sum += l;
        if (l > lat_max)
            lat_max = l;
        samples++;
    }
    if (counting && now < win_end) {
        messages++;
        c->done++;
    }
    if (looping) {
        start_msg(c);
    } else {
        c->state = IDLE;
        idle_count++;
    }
}

static void on_event(struct conn *c, uint32_t ev)
{
    if (c->state == CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err)
            bench_fail("connection %d: connect: %s", (int)(c - conns), strerror(err));
        if (!(ev & EPOLLOUT))
            return;
        watch(c, EPOLL_CTL_MOD, EPOLLIN);
        start_msg(c);
        return;
    }
    if (ev & EPOLLOUT) {
        if (c->sent == (uint32_t)msg)
            watch(c, EPOLL_CTL_MOD, EPOLLIN);
        else
            flush_out(c);
    }
    if (!(ev & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        return;
    for (;;) {
        ssize_t r = recv(c->fd, c->in + c->got, (size_t)msg - c->got, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (r < 0)
            bench_fail("connection %d: recv: %s", (int)(c - conns), strerror(errno));
        if (r == 0)
            bench_fail("connection %d: the server closed it (state %d, %u of %d bytes back)", (int)(c - conns),
                       c->state, c->got, msg);
        if (c->state != BUSY)
            bench_fail("connection %d: %zd bytes nobody asked for", (int)(c - conns), r);
        c->got += (uint32_t)r;
        if (c->got == (uint32_t)msg) {
            on_echo_done(c, bench_now_ns());
            return;
        }
    }
}

/* Handle events until `until` (ns) or, with want_idle >= 0, until idle_count
 * reaches it. Returns false if `until` passed first. */
static bool pump(uint64_t until, long long want_idle)
{
    static struct epoll_event evs[1024];
    for (;;) {
        if (want_idle >= 0 && idle_count >= want_idle)
            return true;
        uint64_t now = bench_now_ns();
        if (now >= until)
            return want_idle < 0;
        int ms = (int)((until - now + 999999) / 1000000);
        int n = epoll_wait(epfd, evs, 1024, ms > 100 ? 100 : ms);
        if (n < 0 && errno != EINTR)
            bench_fail("epoll_wait: %s", strerror(errno));
        for (int i = 0; i < n; i++)
            on_event(&conns[evs[i].data.u32], evs[i].events);
    }
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--port", "--conns", "--msg", "--warmup-ms", "--duration-ms", "--batch",
                                         "--cpu", NULL };
    bench_exp = "echoload";
    bench_impl = "epoll";
    args_check(argc, argv, known);
    int port = (int)arg_int(argc, argv, "--port", 0);
    nconns = (int)arg_int(argc, argv, "--conns", 100);
    msg = (int)arg_int(argc, argv, "--msg", 64);
    long long warm_ms = arg_int(argc, argv, "--warmup-ms", 500), dur_ms = arg_int(argc, argv, "--duration-ms", 2000);
    int batch = (int)arg_int(argc, argv, "--batch", 500);
    int cpu = (int)arg_int(argc, argv, "--cpu", -1);
    if (port <= 0 || port > 65535 || nconns < 1 || msg < 1 || msg > 65536 || warm_ms < 0 || dur_ms < 1 || batch < 1)
        bench_fail("bad arguments (--port 1..65535, --conns >= 1, --msg 1..65536, --duration-ms >= 1)");
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0)
            bench_fail("sched_setaffinity(CPU %d): %s", cpu, strerror(errno));
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    conns = xmalloc((size_t)nconns * sizeof *conns);
    unsigned char *bufs = xmalloc((size_t)nconns * 2 * (size_t)msg);
    if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        bench_fail("epoll_create1: %s", strerror(errno));
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    /* setup: batches, each finished by one round trip per connection */
    uint64_t t_setup = bench_now_ns(), setup_deadline = t_setup + 60000000000ull;
    for (int b = 0; b < nconns; b += batch) {
        int e = b + batch < nconns ? b + batch : nconns;
        for (int i = b; i < e; i++) {
            struct conn *c = &conns[i];
            *c = (struct conn){ .out = bufs + (size_t)i * 2 * (size_t)msg };
            c->in = c->out + msg;
            c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (c->fd < 0)
                bench_fail("socket (connection %d): %s", i, strerror(errno));
            int one = 1;
            setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS)
                bench_fail("connect (connection %d): %s", i, strerror(errno));
            c->state = CONNECTING;
            watch(c, EPOLL_CTL_ADD, EPOLLOUT);
        }
        if (!pump(setup_deadline, e))
            bench_fail("setup: %lld of %d connections made a round trip in 60 s", idle_count, e);
    }
    double setup_s = (double)(bench_now_ns() - t_setup) / 1e9;

    /* warm-up, then the window */
    looping = true;
    idle_count = 0;
    for (int i = 0; i < nconns; i++)
        start_msg(&conns[i]);
    uint64_t t0 = bench_now_ns() + (uint64_t)warm_ms * 1000000u;
    pump(t0, -1);
    counting = true;
    win_end = t0 + (uint64_t)dur_ms * 1000000u;
    pump(win_end, -1);
    uint64_t t1 = bench_now_ns();
    looping = false;
    /* drain */
    if (!pump(t1 + 10000000000ull, nconns))
        bench_fail("drain: %lld of %d connections got their echo within 10 s", idle_count, nconns);
    for (int i = 0; i < nconns; i++)
        close(conns[i].fd);

    double span_s = (double)(win_end - t0) / 1e9, sum = 0, sq = 0;
    int stalled = 0;
    for (int i = 0; i < nconns; i++) {
        sum += conns[i].done;
        sq += (double)conns[i].done * conns[i].done;
        stalled += conns[i].done == 0;
    }
    json_begin(bench_exp, bench_impl);
    json_int("conns", nconns);
    json_int("msg_bytes", msg);
    json_num("setup_s", setup_s);
    json_num("warmup_s", (double)warm_ms / 1e3);
    json_num("duration_s", span_s);
    json_int("messages", messages);
    json_int("bytes_sent", bytes_sent);
    json_num("msgs_per_s", (double)messages / span_s);
    json_int("latency_samples", samples);
    json_num("mean_us", samples ? (double)lat_sum / (double)samples / 1e3 : 0);
    json_num("p50_us", percentile_ns(0.50) / 1e3);
    json_num("p90_us", percentile_ns(0.90) / 1e3);
    json_num("p99_us", percentile_ns(0.99) / 1e3);
    json_num("p999_us", percentile_ns(0.999) / 1e3);
    json_num("max_us", (double)lat_max / 1e3);
    json_int("stalled_conns", stalled);
    json_num("fairness", sq > 0 ? sum * sum / ((double)nconns * sq) : 0);
    json_int("client_cpu", cpu);
    json_bool("verified", true);
    json_end();
    return 0;
}
