/* SPDX-License-Identifier: MIT */
/* Blocking I/O on threads: read, write, recv, send, recvfrom, sendto,
 * recvmsg, sendmsg, accept and connect as POSIX and signal(7) describe
 * them — many threads waiting at once (in read; UDP servers in recvfrom and
 * recvmsg), a signal's handler interrupting a wait (EINTR, or a restart
 * under SA_RESTART), a write interrupted after part of its data, a socket
 * timeout that forbids a restart, a signal for the process ending a read
 * (the alarm() idiom), an ignored signal that ends nothing, cancellation of
 * a read (also while handlers write to a pipe of their own), non-blocking
 * descriptors and errors, and a small server whose threads accept, receive
 * and send. The poll, select and epoll families: io_poll.c. Built with
 * _FORTIFY_SOURCE, as distributions build programs (reads go through
 * __read_chk). On ito (the drop-in), with POSIX_EXPECT_FEW_KERNEL_THREADS set, the
 * waiting threads must also sit on a handful of kernel threads. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <time.h>

#include "conform.h"
#include "io_waits.h"

/* ------------------------------------------------ many waiting readers */

#define READERS 2000
static int shared_pipe[2];
static atomic_int readers_in, readers_done;

static void *read_one_byte(void *arg)
{
    char c;
    atomic_fetch_add(&readers_in, 1);
    CHECK_EQ(read(shared_pipe[0], &c, 1), 1);
    CHECK_EQ(c, 'x');
    atomic_fetch_add(&readers_done, 1);
    return NULL;
}

static void thousands_wait_in_read(void)
{
    CHECK_EQ(pipe(shared_pipe), 0);
    atomic_store(&readers_in, 0);
    atomic_store(&readers_done, 0);
    pthread_t *t = malloc(READERS * sizeof *t);
    CHECK(t != NULL);
    for (int i = 0; i < READERS; i++)
        t[i] = start(read_one_byte, NULL);
    WAIT_UNTIL(atomic_load(&readers_in) == READERS, 20000);
    conform_pause_us(50000);
    CHECK_EQ(atomic_load(&readers_done), 0);
    int kt = conform_kernel_threads();
    fprintf(stderr, "  %d readers waiting on %d kernel threads\n", READERS, kt);
    if (getenv("POSIX_EXPECT_FEW_KERNEL_THREADS"))
        CHECK(kt < 64);
    char buf[READERS];
    memset(buf, 'x', sizeof buf);
    for (size_t off = 0; off < sizeof buf;) {
        ssize_t w = write(shared_pipe[1], buf + off, sizeof buf - off);
        CHECK(w > 0);
        off += (size_t)w;
    }
    for (int i = 0; i < READERS; i++)
        OK(pthread_join(t[i], NULL));
    CHECK_EQ(atomic_load(&readers_done), READERS);
    free(t);
    close(shared_pipe[0]);
    close(shared_pipe[1]);
}

/* Datagram servers: each thread waits in recvfrom for a request on its own
 * UDP socket and answers the sender with sendto (the addresses through the
 * calls); then recvmsg and sendmsg with two buffers the same way. */
#define UDP_SERVERS 300
static atomic_int udp_in;

static void *udp_serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[64];
    struct sockaddr_in from;
    socklen_t len = sizeof from;
    atomic_fetch_add(&udp_in, 1);
    ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &len);
    CHECK(n > 0);
    CHECK_EQ(len, sizeof from);
    CHECK_EQ(sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, len), n);
    /* Again through recvmsg and sendmsg. */
    char a[3], b[61];
    struct iovec v[2] = { { a, sizeof a }, { b, sizeof b } };
    struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = v, .msg_iovlen = 2 };
    n = recvmsg(fd, &m, 0);
    CHECK(n > 3);
    CHECK_EQ(m.msg_namelen, sizeof from);
    v[1].iov_len = (size_t)n - 3;
    CHECK_EQ(sendmsg(fd, &m, 0), n);
    return NULL;
}

/* Ask servers lo..hi-1 and check that each answers from its own socket. */
static void udp_ask(int me, const struct sockaddr_in *addr, int round, int lo, int hi)
{
    for (int i = lo; i < hi; i++) {
        char req[32];
        int n = snprintf(req, sizeof req, "req-%d-%d", round, i);
        CHECK_EQ(sendto(me, req, (size_t)n, 0, (const struct sockaddr *)&addr[i], sizeof addr[i]), n);
    }
    for (int i = lo; i < hi; i++) {
        char got[64];
        struct sockaddr_in from;
        socklen_t len = sizeof from;
        ssize_t n = recvfrom(me, got, sizeof got - 1, 0, (struct sockaddr *)&from, &len);
        CHECK(n > 0);
        got[n] = 0;
        int r = -1, k = -1;
        CHECK_EQ(sscanf(got, "req-%d-%d", &r, &k), 2);
        CHECK_EQ(r, round);
        CHECK(k >= lo && k < hi);
        CHECK_EQ(from.sin_port, addr[k].sin_port);   /* answered by the socket asked */
    }
}

static void udp_servers_wait_in_recvfrom_and_recvmsg(void)
{
    int fds[UDP_SERVERS];
    struct sockaddr_in addr[UDP_SERVERS];
    pthread_t t[UDP_SERVERS];
    atomic_store(&udp_in, 0);
    for (int i = 0; i < UDP_SERVERS; i++) {
        fds[i] = socket(AF_INET, SOCK_DGRAM, 0);
        CHECK(fds[i] >= 0);
        addr[i] = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof addr[i];
        CHECK_EQ(bind(fds[i], (struct sockaddr *)&addr[i], len), 0);
        CHECK_EQ(getsockname(fds[i], (struct sockaddr *)&addr[i], &len), 0);
        t[i] = start(udp_serve, (void *)(intptr_t)fds[i]);
    }
    WAIT_UNTIL(atomic_load(&udp_in) == UDP_SERVERS, 20000);
    conform_pause_us(50000);
    int kt = conform_kernel_threads();
    fprintf(stderr, "  %d servers waiting in recvfrom on %d kernel threads\n", UDP_SERVERS, kt);
    if (getenv("POSIX_EXPECT_FEW_KERNEL_THREADS"))
        CHECK(kt < 64);
    int me = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(me >= 0);
    struct timeval tv = { 10, 0 };
    CHECK_EQ(setsockopt(me, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    /* In batches, so that the answers fit in this socket's receive buffer. */
    for (int round = 0; round < 2; round++)
        for (int lo = 0; lo < UDP_SERVERS; lo += 20)
            udp_ask(me, addr, round, lo, lo + 20 < UDP_SERVERS ? lo + 20 : UDP_SERVERS);
    for (int i = 0; i < UDP_SERVERS; i++) {
        OK(pthread_join(t[i], NULL));
        close(fds[i]);
    }
    close(me);
}

/* ------------------------------------------------ signals */

static void *read_restarts(void *arg)
{
    char c = 0;
    atomic_store(&reached, 1);
    errno = 1234;
    CHECK_EQ(read(p[0], &c, 1), 1);   /* SA_RESTART: the handler runs, the read goes on */
    CHECK_EQ(c, 'r');
    CHECK_EQ(errno, 1234);            /* a call that succeeds leaves errno alone, restarted or not */
    return NULL;
}

static void read_restarts_under_sa_restart(void)
{
    install(SA_RESTART);
    CHECK_EQ(pipe(p), 0);
    atomic_store(&reached, 0);
    pthread_t t = start(read_restarts, NULL);
    WAIT_UNTIL(atomic_load(&reached), 5000);
    conform_pause_us(20000);
    OK(pthread_kill(t, SIGUSR1));
    WAIT_UNTIL(atomic_load(&handled) == 1, 5000);
    conform_pause_us(20000);
    CHECK_EQ(write(p[1], "r", 1), 1);
    OK(pthread_join(t, NULL));
    close(p[0]);
    close(p[1]);
}

/* A call interrupted by a handler without SA_RESTART: -1 and EINTR
 * (io_waits.h's interrupt). */
static void *recv_interrupted(void *arg)
{
    char c;
    FAILS_INTERRUPTED(recv(p[0], &c, 1, 0));
    atomic_store(&finished, 1);
    return NULL;
}

static void *recvmsg_interrupted(void *arg)
{
    char c;
    struct iovec v = { &c, 1 };
    struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
    FAILS_INTERRUPTED(recvmsg(p[0], &m, 0));
    atomic_store(&finished, 1);
    return NULL;
}

static void recv_fails_with_eintr_without_sa_restart(void) { interrupt(recv_interrupted, 0, 1); }
static void recvmsg_fails_with_eintr_without_sa_restart(void) { interrupt(recvmsg_interrupted, 0, 1); }

/* A blocking write of more than the pipe holds, interrupted once part is
 * written: it returns that part, and the reader gets exactly those bytes. */
#define BIG (4u << 20)
static atomic_long written;

static void *write_big(void *arg)
{
    char *buf = calloc(1, BIG);
    CHECK(buf != NULL);
    atomic_store(&reached, 1);
    ssize_t w = write(p[1], buf, BIG);
    atomic_store(&written, (long)w);
    atomic_store(&finished, 1);
    free(buf);
    return NULL;
}

static void write_interrupted_returns_what_it_wrote(void)
{
    install(0);
    CHECK_EQ(pipe(p), 0);
    atomic_store(&reached, 0);
    atomic_store(&finished, 0);
    pthread_t t = start(write_big, NULL);
    WAIT_UNTIL(atomic_load(&reached), 5000);
    conform_pause_us(50000);
    for (int i = 0; i < 500 && !atomic_load(&finished); i++) {
        OK(pthread_kill(t, SIGUSR1));
        conform_pause_us(10000);
    }
    OK(pthread_join(t, NULL));
    long w = atomic_load(&written);
    CHECK(w > 0);
    CHECK(w < (long)BIG);
    /* Everything it said it wrote is in the pipe, and nothing more. */
    CHECK_EQ(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
    long got = 0;
    char buf[65536];
    ssize_t r;
    while ((r = read(p[0], buf, sizeof buf)) > 0)
        got += r;
    CHECK_EQ(r, -1);
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(got, w);
    close(p[0]);
    close(p[1]);
}

/* A socket with a receive timeout: a signal ends the wait with EINTR even
 * under SA_RESTART (signal(7)), at once, not when the timeout expires. */
static void *recv_timed(void *arg)
{
    char c;
    atomic_store(&reached, 1);
    uint64_t t0 = conform_now(CLOCK_MONOTONIC);
    errno = 0;
    CHECK_EQ(recv(p[0], &c, 1, 0), -1);
    CHECK_EQ(errno, EINTR);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 < 1500000000ull);
    atomic_store(&finished, 1);
    return NULL;
}

static void timed_socket_never_restarts(void)
{
    install(SA_RESTART);
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, p), 0);
    struct timeval tv = { 3, 0 };
    CHECK_EQ(setsockopt(p[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    atomic_store(&reached, 0);
    atomic_store(&finished, 0);
    pthread_t t = start(recv_timed, NULL);
    WAIT_UNTIL(atomic_load(&reached), 5000);
    conform_pause_us(200000);
    OK(pthread_kill(t, SIGUSR1));
    OK(pthread_join(t, NULL));
    close(p[0]);
    close(p[1]);
}

/* A signal sent to the process (a timer's), while its only thread waits
 * in read: the alarm() idiom. The handler runs and read fails with EINTR. */
static void process_signal_interrupts_read(void)
{
    install(0);
    CHECK_EQ(pipe(p), 0);
    timer_t timer = conform_signal_timer(SIGUSR1, 200000000u, 0);
    char c;
    errno = 0;
    CHECK_EQ(read(p[0], &c, 1), -1);
    CHECK_EQ(errno, EINTR);
    CHECK_EQ(atomic_load(&handled), 1);
    CHECK_EQ(timer_delete(timer), 0);
    close(p[0]);
    close(p[1]);
}

/* A signal whose action is to ignore it is discarded: it never ends a wait. */
static void *poll_times_out(void *arg)
{
    struct pollfd pf = { .fd = p[0], .events = POLLIN };
    atomic_store(&reached, 1);
    CHECK_EQ(poll(&pf, 1, 300), 0);
    return NULL;
}

static void ignored_signal_does_not_interrupt(void)
{
    signal(SIGUSR1, SIG_IGN);
    CHECK_EQ(pipe(p), 0);
    atomic_store(&reached, 0);
    pthread_t t = start(poll_times_out, NULL);
    WAIT_UNTIL(atomic_load(&reached), 5000);
    conform_pause_us(50000);
    OK(pthread_kill(t, SIGUSR1));
    OK(pthread_kill(t, SIGWINCH));   /* ignored by default */
    OK(pthread_join(t, NULL));
    signal(SIGUSR1, SIG_DFL);
    close(p[0]);
    close(p[1]);
}

/* ------------------------------------------------ cancellation */

static atomic_int cleaned;
static void cleanup(void *arg) { atomic_store(&cleaned, 1); }

static void *read_forever(void *arg)
{
    char c;
    pthread_cleanup_push(cleanup, NULL);
    atomic_store(&reached, 1);
    ssize_t r = read(p[0], &c, 1);
    CHECK(!"read returned");
    (void)r;
    pthread_cleanup_pop(0);
    return NULL;
}

/* A handler that writes to a pipe of its own (the self-pipe trick) while
 * a thread waits in read: the read stays a cancellation point. */
static int self_pipe[2];
static void write_self_pipe(int sig)
{
    int saved = errno;
    ssize_t w = write(self_pipe[1], "!", 1);
    (void)w;
    errno = saved;
}

static void read_stays_cancellable_under_handlers(void)
{
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(pipe2(self_pipe, O_NONBLOCK), 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = write_self_pipe;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR2, &sa, NULL), 0);
    timer_t timer = conform_signal_timer(SIGUSR2, 200000u, 200000u);
    atomic_store(&reached, 0);
    atomic_store(&cleaned, 0);
    pthread_t t = start(read_forever, NULL);
    WAIT_UNTIL(atomic_load(&reached), 5000);
    conform_pause_us(300000);
    uint64_t t0 = conform_now(CLOCK_MONOTONIC);
    OK(pthread_cancel(t));
    void *ret;
    OK(pthread_join(t, &ret));
    CHECK(ret == PTHREAD_CANCELED);
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 < 2000000000ull);
    CHECK_EQ(timer_delete(timer), 0);
    signal(SIGUSR2, SIG_IGN);   /* one may still be pending */
    close(self_pipe[0]);
    close(self_pipe[1]);
    close(p[0]);
    close(p[1]);
}

static void read_is_a_cancellation_point(void)
{
    CHECK_EQ(pipe(p), 0);
    atomic_store(&reached, 0);
    atomic_store(&cleaned, 0);
    pthread_t t = start(read_forever, NULL);
    WAIT_UNTIL(atomic_load(&reached), 5000);
    conform_pause_us(20000);
    OK(pthread_cancel(t));
    void *ret;
    OK(pthread_join(t, &ret));
    CHECK(ret == PTHREAD_CANCELED);
    CHECK_EQ(atomic_load(&cleaned), 1);
    /* The pipe is still whole: a byte written now is there to read. */
    CHECK_EQ(write(p[1], "z", 1), 1);
    char c;
    CHECK_EQ(read(p[0], &c, 1), 1);
    CHECK_EQ(c, 'z');
    close(p[0]);
    close(p[1]);
}

/* ------------------------------------------------ descriptors and errors */

static void *nonblocking_calls(void *arg)
{
    CHECK_EQ(pipe2(p, O_NONBLOCK), 0);
    char c;
    FAILS_ERRNO(read(p[0], &c, 1), EAGAIN);
    int s[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s), 0);
    FAILS_ERRNO(recv(s[0], &c, 1, 0), EAGAIN);
    FAILS_ERRNO(recvfrom(s[0], &c, 1, 0, NULL, NULL), EAGAIN);
    FAILS_ERRNO(accept(s[0], NULL, NULL), EINVAL);   /* not listening */
    FAILS_ERRNO(read(-1, &c, 1), EBADF);
    FAILS_ERRNO(write(-1, &c, 1), EBADF);
    FAILS_ERRNO(send(p[0], &c, 1, 0), ENOTSOCK);
    FAILS_ERRNO(pread(p[0], &c, 1, 0), ESPIPE);
    /* poll with nothing ready and no time: 0 at once. */
    struct pollfd pf = { .fd = p[0], .events = POLLIN };
    CHECK_EQ(poll(&pf, 1, 0), 0);
    /* errno is left alone by a call that succeeds. */
    CHECK_EQ(write(p[1], "a", 1), 1);
    errno = 12345;
    CHECK_EQ(read(p[0], &c, 1), 1);
    CHECK_EQ(errno, 12345);
    close(s[0]);
    close(s[1]);
    close(p[0]);
    close(p[1]);
    return NULL;
}

static void nonblocking_descriptors_and_errors(void) { on_thread(nonblocking_calls, NULL); }

/* ------------------------------------------------ a small server */

#define CLIENTS 200
#define ROUNDS 20
static int listener;
static struct sockaddr_un addr;

static void *serve_one(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[64];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof buf, 0)) > 0)
        CHECK_EQ(send(fd, buf, (size_t)n, 0), n);
    CHECK_EQ(n, 0);
    close(fd);
    return NULL;
}

static void *acceptor(void *arg)
{
    pthread_t t[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        CHECK(fd >= 0);
        t[i] = start(serve_one, (void *)(intptr_t)fd);
    }
    for (int i = 0; i < CLIENTS; i++)
        OK(pthread_join(t[i], NULL));
    return NULL;
}

static void *client(void *arg)
{
    int id = (int)(intptr_t)arg;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    CHECK_EQ(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    for (int r = 0; r < ROUNDS; r++) {
        char out[32], in[32];
        int len = snprintf(out, sizeof out, "client %d round %d", id, r);
        CHECK_EQ(send(fd, out, (size_t)len, 0), len);
        int got = 0;
        while (got < len) {
            ssize_t n = read(fd, in + got, (size_t)(len - got));
            CHECK(n > 0);
            got += (int)n;
        }
        CHECK(!memcmp(in, out, (size_t)len));
    }
    close(fd);
    return NULL;
}

static void server_threads_accept_receive_and_send(void)
{
    listener = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(listener >= 0);
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    /* An abstract name: nothing left behind in the file system. */
    snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "posix-io-%d", (int)getpid());
    CHECK_EQ(bind(listener, (struct sockaddr *)&addr, sizeof addr), 0);
    CHECK_EQ(listen(listener, 16), 0);
    pthread_t a = start(acceptor, NULL);
    pthread_t c[CLIENTS];
    for (int i = 0; i < CLIENTS; i++)
        c[i] = start(client, (void *)(intptr_t)i);
    for (int i = 0; i < CLIENTS; i++)
        OK(pthread_join(c[i], NULL));
    OK(pthread_join(a, NULL));
    close(listener);
}

int main(void)
{
    RUN_CASE(thousands_wait_in_read, 60);
    RUN_CASE(udp_servers_wait_in_recvfrom_and_recvmsg, 60);
    RUN_CASE(read_restarts_under_sa_restart, 10);
    RUN_CASE(recv_fails_with_eintr_without_sa_restart, 10);
    RUN_CASE(recvmsg_fails_with_eintr_without_sa_restart, 10);
    RUN_CASE(write_interrupted_returns_what_it_wrote, 10);
    RUN_CASE(timed_socket_never_restarts, 10);
    RUN_CASE(process_signal_interrupts_read, 10);
    RUN_CASE(ignored_signal_does_not_interrupt, 10);
    RUN_CASE(read_is_a_cancellation_point, 10);
    RUN_CASE(read_stays_cancellable_under_handlers, 10);
    RUN_CASE(nonblocking_descriptors_and_errors, 10);
    RUN_CASE(server_threads_accept_receive_and_send, 60);
    puts("io: ok");
    return 0;
}
