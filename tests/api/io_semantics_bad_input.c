/* SPDX-License-Identifier: MIT */
/* ito/io.h against the C library (io_semantics.h): bad input, EBADF, EINVAL
 * and EFAULT. */
#include "io_semantics.h"

/* Hide a size from the compiler (no warnings for deliberate nonsense). */
static __attribute__((noipa)) size_t opaque_size(size_t n) { return n; }
static __attribute__((noipa)) int opaque_int(int n) { return n; }

static void bad_input(struct ctx *c)
{
    char b[64];
    struct iovec iov = { b, sizeof b };
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

    STEP("bad input: EBADF");
    int fds[2] = { -1, c->dead };
    for (int i = 0; i < 2; i++) {
        int fd = fds[i];
        SAMEX(read(fd, b, 1), ito_read(fd, b, 1), -1, EBADF);
        SAMEX(write(fd, b, 1), ito_write(fd, b, 1), -1, EBADF);
        SAMEX(pread(fd, b, 1, 0), ito_pread(fd, b, 1, 0), -1, EBADF);
        SAMEX(pwrite(fd, b, 1, 0), ito_pwrite(fd, b, 1, 0), -1, EBADF);
        SAMEX(readv(fd, &iov, 1), ito_readv(fd, &iov, 1), -1, EBADF);
        SAMEX(writev(fd, &iov, 1), ito_writev(fd, &iov, 1), -1, EBADF);
        SAMEX(recv(fd, b, 1, 0), ito_recv(fd, b, 1, 0), -1, EBADF);
        SAMEX(recv(fd, b, 1, MSG_DONTWAIT), ito_recv(fd, b, 1, MSG_DONTWAIT), -1, EBADF);
        SAMEX(send(fd, b, 1, 0), ito_send(fd, b, 1, 0), -1, EBADF);
        SAMEX(accept4(fd, NULL, NULL, 0), ito_accept(fd, NULL, NULL, 0), -1, EBADF);
        SAMEX(accept4(fd, NULL, NULL, SOCK_CLOEXEC), ito_accept(fd, NULL, NULL, SOCK_CLOEXEC), -1, EBADF);
        SAMEX(connect(fd, (struct sockaddr *)&sa, sizeof sa), ito_connect(fd, (struct sockaddr *)&sa, sizeof sa),
               -1, EBADF);
        SAMEX(openat(fd, "x", O_RDONLY), ito_openat(fd, "x", O_RDONLY, 0), -1, EBADF);
        SAMEX(close(fd), ito_close(fd), -1, EBADF);
        SAMEX(fsync(fd), ito_fsync(fd), -1, EBADF);
        /* Two faults at once: which one is reported. */
        SAME(readv(fd, &iov, opaque_int(-1)), ito_readv(fd, &iov, opaque_int(-1)));
        SAME(writev(fd, &iov, opaque_int(IOV_MAX + 1)), ito_writev(fd, &iov, opaque_int(IOV_MAX + 1)));
        SAME(pread(fd, b, 1, -1), ito_pread(fd, b, 1, -1));
        SAME(pwrite(fd, b, 1, -1), ito_pwrite(fd, b, 1, -1));
    }

    STEP("bad input: EINVAL");
    int fa = tmp_fd(), fb = tmp_fd();
    char data[4096];
    fill(data, sizeof data, 6);
    write_all(fa, data, sizeof data);
    write_all(fb, data, sizeof data);
    CHECK(lseek(fa, 0, SEEK_SET) == 0 && lseek(fb, 0, SEEK_SET) == 0);
    SAMEX(pread(fa, b, 1, -1), ito_pread(fb, b, 1, -1), -1, EINVAL);
    SAMEX(pwrite(fa, b, 1, -1), ito_pwrite(fb, b, 1, -1), -1, EINVAL);
    SAMEX(pread(fa, b, 1, INT64_MIN), ito_pread(fb, b, 1, INT64_MIN), -1, EINVAL);
    SAMEX(readv(fa, &iov, opaque_int(-1)), ito_readv(fb, &iov, opaque_int(-1)), -1, EINVAL);
    SAMEX(readv(fa, &iov, opaque_int(IOV_MAX + 1)), ito_readv(fb, &iov, opaque_int(IOV_MAX + 1)), -1, EINVAL);
    SAMEX(writev(fa, &iov, opaque_int(-1)), ito_writev(fb, &iov, opaque_int(-1)), -1, EINVAL);
    SAMEX(writev(fa, &iov, opaque_int(IOV_MAX + 1)), ito_writev(fb, &iov, opaque_int(IOV_MAX + 1)), -1, EINVAL);
    SAMEX(readv(fa, &iov, opaque_int(INT_MIN)), ito_readv(fb, &iov, opaque_int(INT_MIN)), -1, EINVAL);
    /* iovcnt == IOV_MAX is fine. */
    struct iovec *many_a = calloc(IOV_MAX, sizeof *many_a), *many_b = calloc(IOV_MAX, sizeof *many_b);
    char *ma = calloc(IOV_MAX, 2), *mb = calloc(IOV_MAX, 2);
    CHECK(many_a && many_b && ma && mb);
    for (int i = 0; i < IOV_MAX; i++) {
        many_a[i] = (struct iovec){ ma + 2 * i, i % 5 == 0 ? 0 : 2 };
        many_b[i] = (struct iovec){ mb + 2 * i, many_a[i].iov_len };
    }
    SAME(readv(fa, many_a, IOV_MAX), ito_readv(fb, many_b, IOV_MAX));
    SOFT(memcmp(ma, mb, IOV_MAX * 2) == 0);
    SAME(writev(fa, many_a, IOV_MAX), ito_writev(fb, many_b, IOV_MAX));
    TWIN_EQ(fa, fb);
    free(many_a);
    free(many_b);
    free(ma);
    free(mb);
    if (!TEST_SANITIZED) {
        /* Lengths that run past the end of the address space (the
         * sanitizers would check the ranges). */
        struct iovec ov[2] = { { b, SSIZE_MAX }, { b, SSIZE_MAX } };
        SAME(readv(fa, ov, 2), ito_readv(fb, ov, 2));
        SAME(writev(fa, ov, 2), ito_writev(fb, ov, 2));
        SAME(read(fa, b, opaque_size(SIZE_MAX)), ito_read(fb, b, opaque_size(SIZE_MAX)));
        SAME(write(fa, b, opaque_size(SIZE_MAX)), ito_write(fb, b, opaque_size(SIZE_MAX)));
        SAME(pread(fa, b, opaque_size(SIZE_MAX), 0), ito_pread(fb, b, opaque_size(SIZE_MAX), 0));
        SAME(read(fa, b, opaque_size((size_t)SSIZE_MAX + 1)), ito_read(fb, b, opaque_size((size_t)SSIZE_MAX + 1)));
        TWIN_EQ(fa, fb);
    }

    STEP("bad input: EFAULT");
    CHECK(lseek(fa, 0, SEEK_SET) == 0 && lseek(fb, 0, SEEK_SET) == 0);
    struct iovec bv = { bad, 16 };
    SAMEX(read(fa, bad, 16), ito_read(fb, bad, 16), -1, EFAULT);
    SAMEX(pread(fa, bad, 16, 0), ito_pread(fb, bad, 16, 0), -1, EFAULT);
    SAMEX(readv(fa, &bv, 1), ito_readv(fb, &bv, 1), -1, EFAULT);
    SAMEX(write(fa, bad, 16), ito_write(fb, bad, 16), -1, EFAULT);
    SAMEX(pwrite(fa, bad, 16, 0), ito_pwrite(fb, bad, 16, 0), -1, EFAULT);
    SAMEX(writev(fa, &bv, 1), ito_writev(fb, &bv, 1), -1, EFAULT);
    TWIN_EQ(fa, fb);
    int p[2], q[2];
    CHECK(pipe(p) == 0 && pipe(q) == 0);
    CHECK(write(p[1], "data", 4) == 4 && write(q[1], "data", 4) == 4);
    SAMEX(read(q[0], bad, 4), ito_read(p[0], bad, 4), -1, EFAULT);
    SAMEX(write(q[1], bad, 4), ito_write(p[1], bad, 4), -1, EFAULT);
    SAMEX(readv(q[0], &bv, 1), ito_readv(p[0], &bv, 1), -1, EFAULT);
    CHECK(close(p[0]) == 0 && close(p[1]) == 0 && close(q[0]) == 0 && close(q[1]) == 0);
    int s[2], t[2];
    pairs(SOCK_STREAM, s, t);
    CHECK(send(s[0], "data", 4, 0) == 4 && send(t[0], "data", 4, 0) == 4);
    SAMEX(recv(t[1], bad, 4, 0), ito_recv(s[1], bad, 4, 0), -1, EFAULT);
    SAMEX(recv(t[1], bad, 4, MSG_WAITALL), ito_recv(s[1], bad, 4, MSG_WAITALL), -1, EFAULT);
    SAMEX(send(t[0], bad, 4, 0), ito_send(s[0], bad, 4, 0), -1, EFAULT);
    close4(s, t);
    if (!TEST_SANITIZED) {
        /* The sanitizers' interceptors read these arrays and strings first. */
        struct iovec *badv = (struct iovec *)bad;
        SAMEX(readv(fa, badv, 1), ito_readv(fb, badv, 1), -1, EFAULT);
        SAMEX(writev(fa, badv, 1), ito_writev(fb, badv, 1), -1, EFAULT);
        SAMEX(openat(AT_FDCWD, bad, O_RDONLY), ito_openat(AT_FDCWD, bad, O_RDONLY, 0), -1, EFAULT);
        int k1 = socket(AF_INET, SOCK_STREAM, 0), k2 = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(k1 >= 0 && k2 >= 0);
        SAMEX(connect(k1, (struct sockaddr *)bad, sizeof sa), ito_connect(k2, (struct sockaddr *)bad, sizeof sa),
               -1, EFAULT);
        CHECK(close(k1) == 0 && close(k2) == 0);
    }
    TWIN_EQ(fa, fb);
    CHECK(close(fa) == 0 && close(fb) == 0);
}

const struct io_topic io_topic = {
    .name = "bad_input",
    .run = bad_input,
};
