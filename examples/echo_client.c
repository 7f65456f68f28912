/* SPDX-License-Identifier: MIT */
/* echo_client: the load client of echo_server. C ito threads each open a
 * connection and send M messages of S bytes, one at a time: each message is
 * written, its echo read back and checked byte by byte, and the round trip
 * timed. ito_connect, ito_write and ito_read park only the calling thread, so
 * the C connections wait on the network side by side on a few vprocs.
 *
 *   echo_client HOST PORT [--conns C] [--msgs M] [--size S]
 *
 * Prints the messages sent, messages per second, and the median and 99th
 * percentile round trip in µs; exits 1 on any error or a byte echoed wrong. */
#define _POSIX_C_SOURCE 200809L   /* sockets and getaddrinfo, also with -std=c11 */
#include <ito.h>

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* A message larger than this goes in pieces, each echoed before the next is
 * sent: neither side then ever has more than a piece in flight, so neither
 * fills its socket buffers while the other waits for it to read. */
#define PIECE (16 * 1024)

static struct addrinfo *server;         /* the server's addresses, set by main */
static long msgs = 1000;                /* messages per connection */
static size_t size = 64;                /* bytes per message */

struct worker {
    int id;
    uint64_t *rtt;                      /* [msgs]: each round trip, ns */
    int failed;
};

/* The bytes of message i of connection id: splitmix64's stream from a seed
 * made of both, so that the echo of another message or of another
 * connection's does not pass for this one's. */
static void fill(unsigned char *buf, int id, long i)
{
    uint64_t state = ((uint64_t)id << 40) ^ (uint64_t)i, z = 0;
    for (size_t j = 0; j < size; j++) {
        if (j % 8 == 0) {               /* the next 8 bytes */
            z = (state += 0x9e3779b97f4a7c15u);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
            z ^= z >> 31;
        }
        buf[j] = (unsigned char)(z >> (j % 8 * 8));
    }
}

/* Connect to the first of the server's addresses that answers. */
static int dial(void)
{
    int err = ECONNREFUSED;
    for (struct addrinfo *a = server; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (ito_connect(fd, a->ai_addr, a->ai_addrlen) == 0)   /* parks during the handshake */
            return fd;
        err = errno;
        ito_close(fd);
    }
    errno = err;
    return -1;
}

/* ito_write and ito_read may move fewer bytes than asked (as write(2) and
 * read(2) do): loop. 0, or -1 with errno (0 at end of file). */
static int write_all(int fd, const unsigned char *buf, size_t len)
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

static int read_all(int fd, unsigned char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = ito_read(fd, buf, len);
        if (n <= 0) {
            if (n == 0)
                errno = 0;              /* the server closed the connection */
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    unsigned char *out = malloc(size), *in = malloc(size);
    int fd = -1;
    if (!out || !in) {
        fprintf(stderr, "echo_client: connection %d: out of memory\n", w->id);
        w->failed = 1;
    } else if ((fd = dial()) < 0) {
        fprintf(stderr, "echo_client: connection %d: connect: %s\n", w->id, strerror(errno));
        w->failed = 1;
    } else {
        int one = 1;                    /* send each message at once, no Nagle delay */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    for (long i = 0; i < msgs && !w->failed; i++) {
        fill(out, w->id, i);
        uint64_t t0 = ito_now_ns();
        for (size_t off = 0; off < size; off += PIECE) {
            size_t n = size - off < PIECE ? size - off : PIECE;
            if (write_all(fd, out + off, n) < 0 || read_all(fd, in + off, n) < 0) {
                fprintf(stderr, "echo_client: connection %d, message %ld: %s\n", w->id, i,
                        errno ? strerror(errno) : "the server closed the connection");
                w->failed = 1;
                break;
            }
        }
        w->rtt[i] = ito_now_ns() - t0;
        for (size_t j = 0; j < size && !w->failed; j++)
            if (in[j] != out[j]) {
                fprintf(stderr, "echo_client: connection %d, message %ld, byte %zu: sent 0x%02x, got 0x%02x\n",
                        w->id, i, j, out[j], in[j]);
                w->failed = 1;
            }
    }
    if (fd >= 0)
        ito_close(fd);
    free(out);
    free(in);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int usage(void)
{
    fprintf(stderr, "usage: echo_client HOST PORT [--conns C] [--msgs M] [--size S]\n");
    return 2;
}

int main(int argc, char **argv)
{
    long conns = 8;
    if (argc < 3 || argc % 2 == 0)
        return usage();
    for (int i = 3; i < argc; i += 2) {
        char *end;
        long v = strtol(argv[i + 1], &end, 10);
        if (*end || v < 1 || v > 100 * 1000 * 1000)
            return usage();
        if (strcmp(argv[i], "--conns") == 0)
            conns = v;
        else if (strcmp(argv[i], "--msgs") == 0)
            msgs = v;
        else if (strcmp(argv[i], "--size") == 0)
            size = (size_t)v;
        else
            return usage();
    }

    /* Resolve once, before any thread runs (getaddrinfo may block). */
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    int gai = getaddrinfo(argv[1], argv[2], &hints, &server);
    if (gai != 0) {
        fprintf(stderr, "echo_client: %s port %s: %s\n", argv[1], argv[2], gai_strerror(gai));
        return 1;
    }

    struct worker *w = calloc((size_t)conns, sizeof *w);
    ito_thread_t *t = calloc((size_t)conns, sizeof *t);
    uint64_t *rtt = calloc((size_t)conns * (size_t)msgs, sizeof *rtt);
    if (!w || !t || !rtt) {
        fprintf(stderr, "echo_client: out of memory\n");
        return 1;
    }
    uint64_t t0 = ito_now_ns();
    for (long i = 0; i < conns; i++) {
        w[i] = (struct worker){ .id = (int)i, .rtt = rtt + i * msgs };
        int err = ito_spawn(&t[i], NULL, run, &w[i]);
        if (err) {
            fprintf(stderr, "echo_client: spawn: %s\n", strerror(err));
            return 1;
        }
    }
    int failed = 0;
    for (long i = 0; i < conns; i++) {
        ito_join(t[i], NULL);
        failed |= w[i].failed;
    }
    double secs = (double)(ito_now_ns() - t0) / 1e9;
    if (failed)
        return 1;

    long total = conns * msgs;
    qsort(rtt, (size_t)total, sizeof *rtt, cmp_u64);
    printf("%ld messages of %zu bytes on %ld connection%s in %.3f s: %.0f messages/s\n", total, size, conns,
           conns == 1 ? "" : "s", secs, (double)total / secs);
    printf("round trip: median %.1f us, p99 %.1f us\n", (double)rtt[total / 2] / 1e3,
           (double)rtt[total * 99 / 100] / 1e3);
    freeaddrinfo(server);
    return 0;
}
