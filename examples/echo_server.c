/* SPDX-License-Identifier: MIT */
/* echo_server: a TCP echo server with one ito thread per connection, written
 * in plain blocking style. ito_accept, ito_read and ito_write park only the
 * calling thread while the kernel has nothing for it (ito/io.h: io_uring
 * underneath), so a thousand idle connections keep no vproc busy.
 *
 *   echo_server [PORT] [--max-conns N]
 *
 * Listens on 127.0.0.1:PORT (0, the default: any free port) and prints
 * "listening on 127.0.0.1:PORT" as its first line. On SIGINT or SIGTERM, or
 * once N connections have been accepted and have closed, it stops accepting,
 * waits for its connection threads, prints a summary and exits 0. A signal
 * also ends the connections still open: their reads see end of file.
 * echo_client is its load client (examples/README.md). */
#define _POSIX_C_SOURCE 200809L   /* sockets and signal masks, also with -std=c11 */
#include <ito.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* An open connection. Each is on a list so that a signal can end it. */
struct conn {
    int fd;
    struct conn *prev, *next;
};

/* The server's state, all under `lock`. */
static ito_mutex_t lock = ITO_MUTEX_INIT;
static ito_cond_t none_open = ITO_COND_INIT;  /* signalled when `open_count` drops to 0 */
static struct conn *open_conns;
static long open_count;
static unsigned long long conns_total, bytes_total;
static int listen_fd = -1;                     /* -1 once closed */
static bool stopping;                          /* a signal came */

/* Signals. A handler runs on whichever of ito's kernel threads the kernel
 * picks, in the middle of anything, and no ito call is async-signal-safe;
 * and a vproc sleeps with signals blocked, so in an idle process a handler
 * waits until some thread runs. Instead, SIGINT and SIGTERM stay blocked
 * everywhere and come as data from a signalfd, which a thread reads with
 * ito_read like any other descriptor. (A second signal changes nothing: the
 * shutdown is under way.) */
static void *signal_watcher(void *arg)
{
    int sfd = (int)(intptr_t)arg;
    struct signalfd_siginfo si;
    while (ito_read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {   /* parks until a signal comes */
        ito_mutex_lock(&lock);
        stopping = true;
        if (listen_fd >= 0)
            shutdown(listen_fd, SHUT_RD);   /* main's ito_accept fails: no more connections */
        /* Each connection's next read sees end of file: its thread echoes
         * what it has read and closes. */
        for (struct conn *c = open_conns; c; c = c->next)
            shutdown(c->fd, SHUT_RD);
        ito_mutex_unlock(&lock);
    }
    return arg;
}

/* ito_write may write less than asked (as write(2) does): loop. */
static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = ito_write(fd, buf, len);
        if (n < 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* One connection's thread: echo until the client closes its end. */
static void *serve(void *arg)
{
    struct conn *c = arg;
    char buf[16 * 1024];                /* on the thread's stack (256 KiB by default) */
    unsigned long long bytes = 0;
    for (;;) {
        ssize_t n = ito_read(c->fd, buf, sizeof buf);   /* parks while there is nothing to read */
        if (n == 0)
            break;                      /* end of file: the client is done */
        if (n < 0 || write_all(c->fd, buf, (size_t)n) < 0) {
            /* Read errno at once, before anything else that may switch. */
            fprintf(stderr, "echo_server: connection: %s\n", strerror(errno));
            break;
        }
        bytes += (unsigned long long)n;
    }
    ito_mutex_lock(&lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        open_conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    bytes_total += bytes;
    /* Closed under the lock, so that the watcher never shuts down a number
     * that accept has already handed out again. */
    ito_close(c->fd);
    if (--open_count == 0)
        ito_cond_broadcast(&none_open);
    ito_mutex_unlock(&lock);
    free(c);
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: echo_server [PORT] [--max-conns N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    long port = 0, max_conns = 0;       /* max_conns 0: no limit */
    for (int i = 1; i < argc; i++) {
        char *end;
        if (strcmp(argv[i], "--max-conns") == 0 && i + 1 < argc) {
            max_conns = strtol(argv[++i], &end, 10);
            if (*end || max_conns < 1)
                return usage();
        } else {
            port = strtol(argv[i], &end, 10);
            if (*end || port < 0 || port > 65535)
                return usage();
        }
    }

    /* Before the first ito call, so that every kernel thread ito starts
     * and every ito thread inherit the mask: SIGINT and SIGTERM are blocked
     * everywhere, and wait in the signalfd. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    sigprocmask(SIG_BLOCK, &stop_signals, NULL);
    int sfd = signalfd(-1, &stop_signals, SFD_CLOEXEC);
    if (sfd < 0) {
        perror("echo_server: signalfd");
        return 1;
    }
    /* A client that goes away while we write to it must not kill the
     * process with SIGPIPE: the write fails with EPIPE instead. */
    signal(SIGPIPE, SIG_IGN);

    /* The listening socket: blocking, as are the sockets accept returns;
     * ito_accept parks the thread until a client comes. */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        perror("echo_server: socket");
        return 1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);   /* INADDR_ANY to serve other machines */
    socklen_t len = sizeof addr;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
        fprintf(stderr, "echo_server: port %ld: %s\n", port, strerror(errno));
        return 1;
    }
    listen_fd = fd;
    printf("listening on 127.0.0.1:%u\n", ntohs(addr.sin_port));
    fflush(stdout);                     /* a script waits for this line */

    /* main is an ito thread from its first ito call on. The watcher and the
     * connection threads are detached: nobody joins them, the count of open
     * connections tells when they are done. */
    ito_attr_t detached;
    ito_attr_init(&detached);
    ito_attr_set_detached(&detached, true);
    int err = ito_spawn(NULL, &detached, signal_watcher, (void *)(intptr_t)sfd);
    if (err) {
        fprintf(stderr, "echo_server: spawn: %s\n", strerror(err));
        return 1;
    }

    int status = 0;
    long accepted = 0;
    while (max_conns == 0 || accepted < max_conns) {
        int cfd = ito_accept(fd, NULL, NULL, SOCK_CLOEXEC);   /* parks until a client comes */
        if (cfd < 0) {
            int e = errno;
            ito_mutex_lock(&lock);
            bool stop = stopping;
            ito_mutex_unlock(&lock);
            if (stop)
                break;                  /* the watcher shut the socket down */
            if (e == ECONNABORTED)
                continue;               /* the client gave up before we took it */
            fprintf(stderr, "echo_server: accept: %s\n", strerror(e));
            if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
                ito_sleep_ns(100 * 1000 * 1000);   /* out of resources: let connections close */
                continue;
            }
            status = 1;
            break;
        }
        /* An echo answers small messages: send them at once, no Nagle delay. */
        setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = malloc(sizeof *c);
        if (!c) {
            fprintf(stderr, "echo_server: out of memory\n");
            ito_close(cfd);
            continue;
        }
        c->fd = cfd;
        c->prev = NULL;
        ito_mutex_lock(&lock);
        c->next = open_conns;           /* on the list before its thread runs */
        if (open_conns)
            open_conns->prev = c;
        open_conns = c;
        if (stopping)
            shutdown(cfd, SHUT_RD);     /* accepted as the signal came: end it too */
        open_count++;
        conns_total++;
        ito_mutex_unlock(&lock);
        err = ito_spawn(NULL, &detached, serve, c);
        if (err) {
            /* No thread for it: close it as serve would have. */
            fprintf(stderr, "echo_server: spawn: %s\n", strerror(err));
            shutdown(cfd, SHUT_RD);
            serve(c);
        }
        accepted++;
    }

    /* Stop accepting, then wait for the connection threads. */
    ito_mutex_lock(&lock);
    ito_close(fd);
    listen_fd = -1;
    while (open_count > 0)
        ito_cond_wait(&none_open, &lock);
    printf("echo_server: %llu connections, %llu bytes echoed\n", conns_total, bytes_total);
    ito_mutex_unlock(&lock);
    return status;
}
