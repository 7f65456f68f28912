/* SPDX-License-Identifier: MIT */
/* ito/io.h against the C library (io_semantics.h): pipes, blocking and not
 * (EAGAIN, EPIPE with SIGPIPE ignored, writes larger than the pipe), and a
 * blocking writev of many iovecs into a full pipe (in a child process). */
#include "io_semantics.h"

/* ------------------------------------------------------------ pipes */

static void pipes(struct ctx *c)
{
    char b1[8192], b2[8192];
    int p[2], q[2];   /* p: ito, q: libc */

    STEP("pipes: blocking, short reads, EOF");
    CHECK(pipe(p) == 0 && pipe(q) == 0);
    SAMEX(write(q[1], "hello", 5), ito_write(p[1], "hello", 5), 5, 0);
    SAMEX_READ(read(q[0], b1, 100), ito_read(p[0], b2, 100), b1, b2, 5, 0);
    SAMEX(write(q[1], "hello", 0), ito_write(p[1], "hello", 0), 0, 0);
    SAMEX(read(q[0], b1, 0), ito_read(p[0], b2, 0), 0, 0);   /* empty, but asks nothing */
    struct iovec w[3] = { { (void *)"ab", 2 }, { (void *)"", 0 }, { (void *)"cdef", 4 } };
    SAMEX(writev(q[1], w, 3), ito_writev(p[1], w, 3), 6, 0);
    struct iovec ra[2] = { { b1, 4 }, { b1 + 4, 10 } }, rb[2] = { { b2, 4 }, { b2 + 4, 10 } };
    SAMEX(readv(q[0], ra, 2), ito_readv(p[0], rb, 2), 6, 0);
    SOFT(memcmp(b2, "abcdef", 6) == 0);

    /* The data comes 20 ms after the read starts. */
    struct later l = { .op = OP_WRITE, .fd = p[1], .buf = (char *)"late", .len = 4, .delay_ns = 20 * MS };
    later_start(&l);
    EXPECT(ito_read(p[0], b2, 100), 4, 0);
    later_join(&l);
    SOFT(memcmp(b2, "late", 4) == 0);
    l = (struct later){ .op = OP_WRITE, .fd = p[1], .buf = (char *)"late", .len = 4, .delay_ns = 20 * MS };
    later_start(&l);
    EXPECT(ito_readv(p[0], rb, 2), 4, 0);
    later_join(&l);

    /* A blocking write larger than the pipe writes everything (a slow reader). */
    size_t big = 1u << 20;
    char *data = xmalloc(big), *got = xmalloc(big);
    fill(data, big, 3);
    l = (struct later){ .op = OP_READ, .fd = p[0], .buf = got, .len = big, .chunks = 8, .delay_ns = 2 * MS };
    later_start(&l);
    EXPECT(ito_write(p[1], data, big), (long)big, 0);
    later_join(&l);
    SOFT(memcmp(got, data, big) == 0);

    /* EOF once the writers are gone; again and again. */
    CHECK(close(p[1]) == 0 && close(q[1]) == 0);
    SAMEX(read(q[0], b1, 10), ito_read(p[0], b2, 10), 0, 0);
    SAMEX(read(q[0], b1, 10), ito_read(p[0], b2, 10), 0, 0);
    SAMEX(readv(q[0], ra, 2), ito_readv(p[0], rb, 2), 0, 0);
    CHECK(close(p[0]) == 0 && close(q[0]) == 0);

    /* A writer blocked on a full pipe is released when the reader closes:
     * it returns what it wrote (or EPIPE had it written nothing). */
    CHECK(pipe(p) == 0);
    l = (struct later){ .op = OP_READ_CLOSE, .fd = p[0], .buf = got, .len = 10000, .delay_ns = 20 * MS };
    later_start(&l);
    test_set_errno(SENTINEL);
    long r = ito_write(p[1], data, big);
    int e = test_errno();
    later_join(&l);
    if (!((r > 0 && r < (long)big) || (r == -1 && e == EPIPE)))
        report(c, __LINE__, "a write released by the reader's close returned %ld (%s)", r, ename(e));
    EXPECT(ito_write(p[1], data, 1), -1, EPIPE);
    CHECK(close(p[1]) == 0);

    STEP("pipes: O_NONBLOCK");
    CHECK(pipe2(p, O_NONBLOCK) == 0 && pipe2(q, O_NONBLOCK) == 0);
    SAME(read(q[0], b1, 10), ito_read(p[0], b2, 10));   /* EAGAIN */
    EXPECT(ito_read(p[0], b2, 10), -1, EAGAIN);
    SAME(readv(q[0], ra, 2), ito_readv(p[0], rb, 2));
    SAMEX(write(q[1], data, 100), ito_write(p[1], data, 100), 100, 0);
    SAMEX_READ(read(q[0], b1, 1000), ito_read(p[0], b2, 1000), b1, b2, 100, 0);
    /* Fill both the same way, then: EAGAIN for a small write, a partial
     * write for a large one once some room is made. */
    for (ssize_t k; (k = write(q[1], data, 4096)) > 0;)
        CHECK(write(p[1], data, (size_t)k) == k);
    SAME(write(q[1], data, 1), ito_write(p[1], data, 1));
    EXPECT(ito_write(p[1], data, 1), -1, EAGAIN);
    SAME(writev(q[1], w, 3), ito_writev(p[1], w, 3));
    read_all(q[0], b1, 8192);
    read_all(p[0], b2, 8192);
    SAME(write(q[1], data, 100000), ito_write(p[1], data, 100000));
    SAME(write(q[1], data, 100000), ito_write(p[1], data, 100000));
    CHECK(close(p[0]) == 0 && close(p[1]) == 0 && close(q[0]) == 0 && close(q[1]) == 0);
    /* O_NONBLOCK set after the pipe was made. */
    CHECK(pipe(p) == 0);
    set_nonblock(p[0], true);
    EXPECT(ito_read(p[0], b2, 10), -1, EAGAIN);
    set_nonblock(p[0], false);
    set_nonblock(p[1], true);
    CHECK(write(p[1], "z", 1) == 1);
    EXPECT(ito_read(p[0], b2, 10), 1, 0);
    CHECK(close(p[0]) == 0 && close(p[1]) == 0);

    STEP("pipes: EPIPE");
    for (int nb = 0; nb < 2; nb++) {
        CHECK(pipe2(p, nb ? O_NONBLOCK : 0) == 0 && pipe2(q, nb ? O_NONBLOCK : 0) == 0);
        CHECK(close(p[0]) == 0 && close(q[0]) == 0);
        SAMEX(write(q[1], "x", 1), ito_write(p[1], "x", 1), -1, EPIPE);
        SAMEX(writev(q[1], w, 3), ito_writev(p[1], w, 3), -1, EPIPE);
        SAMEX(write(q[1], data, 200000), ito_write(p[1], data, 200000), -1, EPIPE);
        SAMEX(write(q[1], "x", 0), ito_write(p[1], "x", 0), 0, 0);
        CHECK(close(p[1]) == 0 && close(q[1]) == 0);
    }
    free(data);
    free(got);
}

/* A blocking writev of 20 iovecs into a pipe that is full when it starts, with
 * a slow reader: libc writes everything. (ito continues a partial write with
 * the rest of the iovecs; this once overran a copy of them on the stack, so
 * it runs in a child process, where a crash cannot hide the other checks.) */
static void writev_many(struct ctx *c)
{
    STEP("pipes: writev of 20 iovecs into a full pipe");
    int p[2];
    CHECK(pipe(p) == 0);
    size_t per = 8192, total = 20 * per;
    char *data = xmalloc(total), *got = xmalloc(total + 65536 * 4);
    fill(data, total, 7);
    set_nonblock(p[1], true);
    size_t pre = 0;
    for (ssize_t r; (r = write(p[1], data, 4096)) > 0;)
        pre += (size_t)r;
    set_nonblock(p[1], false);
    struct iovec v20[20];
    for (int i = 0; i < 20; i++)
        v20[i] = (struct iovec){ data + (size_t)i * per, per };
    struct later l = { .op = OP_READ, .fd = p[0], .buf = got, .len = pre + total, .chunks = 64, .delay_ns = 1 * MS };
    later_start(&l);
    EXPECT(ito_writev(p[1], v20, 20), (long)total, 0);
    later_join(&l);
    SOFT(memcmp(got + pre, data, total) == 0);
    CHECK(close(p[0]) == 0 && close(p[1]) == 0);
    free(data);
    free(got);
}

const struct io_topic io_topic = {
    .name = "pipes",
    .run = pipes,
    .child = "writev-many",
    .child_run = writev_many,
};
