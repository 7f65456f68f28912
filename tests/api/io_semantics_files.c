/* SPDX-License-Identifier: MIT */
/* ito/io.h against the C library (io_semantics.h): regular files and openat.
 * read/write/pread/pwrite/readv/writev (positions, holes, EOF, O_APPEND, files
 * mostly evicted from the page cache, > 8 iovecs and IOV_MAX), openat (flags,
 * modes, dirfd, FIFOs, EMFILE and the lowest free number), fsync and close. */
#include "io_semantics.h"

/* ------------------------------------------------------------ regular files */

static void files(struct ctx *c)
{
    enum { SZ = 20000 };
    char *data = xmalloc(SZ), *b1 = xmalloc(SZ), *b2 = xmalloc(SZ);
    fill(data, SZ, 1);
    char pa[64], pb[64];
    int fa = tmp_named(pa), fb = tmp_named(pb);   /* fa: libc, fb: ito */

    STEP("files: write, pwrite");
    SAMEX(write(fa, data, 10000), ito_write(fb, data, 10000), 10000, 0);
    TWIN_EQ(fa, fb);
    SAMEX(pwrite(fa, "abc", 3, 100), ito_pwrite(fb, "abc", 3, 100), 3, 0);
    TWIN_EQ(fa, fb);   /* the position stays at 10000 */
    SOFT_EQ(lseek(fb, 0, SEEK_CUR), 10000);
    /* Past the end: a hole, size 12003. */
    SAME(pwrite(fa, data + 7, 3, 12000), ito_pwrite(fb, data + 7, 3, 12000));
    TWIN_EQ(fa, fb);

    STEP("files: read, pread, EOF");
    CHECK(lseek(fa, 0, SEEK_SET) == 0 && lseek(fb, 0, SEEK_SET) == 0);
    SAMEX_READ(read(fa, b1, 4000), ito_read(fb, b2, 4000), b1, b2, 4000, 0);
    SOFT(memcmp(b2, data, 100) == 0 && memcmp(b2 + 100, "abc", 3) == 0 && memcmp(b2 + 103, data + 103, 3897) == 0);
    TWIN_EQ(fa, fb);   /* both at 4000 */
    /* A short read at the end, the position unchanged. */
    SAMEX_READ(pread(fa, b1, 100, 11950), ito_pread(fb, b2, 100, 11950), b1, b2, 53, 0);
    TWIN_EQ(fa, fb);
    SOFT_EQ(lseek(fb, 0, SEEK_CUR), 4000);
    SAMEX(pread(fa, b1, 100, 12003), ito_pread(fb, b2, 100, 12003), 0, 0);
    SAMEX(pread(fa, b1, 100, 50000), ito_pread(fb, b2, 100, 50000), 0, 0);
    CHECK(lseek(fa, 11990, SEEK_SET) == 11990 && lseek(fb, 11990, SEEK_SET) == 11990);
    SAMEX_READ(read(fa, b1, 100), ito_read(fb, b2, 100), b1, b2, 13, 0);
    SAMEX(read(fa, b1, 100), ito_read(fb, b2, 100), 0, 0);   /* at EOF */
    SAMEX(read(fa, b1, 100), ito_read(fb, b2, 100), 0, 0);
    TWIN_EQ(fa, fb);

    STEP("files: readv, writev");
    CHECK(lseek(fa, 5, SEEK_SET) == 5 && lseek(fb, 5, SEEK_SET) == 5);
    memset(b1, 0, SZ);
    memset(b2, 0, SZ);
    struct iovec va[4] = { { b1, 7 }, { b1 + 7, 0 }, { b1 + 7, 4096 }, { b1 + 5000, 13 } };
    struct iovec vb[4] = { { b2, 7 }, { b2 + 7, 0 }, { b2 + 7, 4096 }, { b2 + 5000, 13 } };
    SAMEX(readv(fa, va, 4), ito_readv(fb, vb, 4), 7 + 4096 + 13, 0);
    SOFT(memcmp(b1, b2, 5013) == 0);
    TWIN_EQ(fa, fb);
    CHECK(lseek(fa, 12003 - 10, SEEK_SET) > 0 && lseek(fb, 12003 - 10, SEEK_SET) > 0);
    SAMEX(readv(fa, va, 4), ito_readv(fb, vb, 4), 10, 0);   /* short, across iovecs */
    SOFT(memcmp(b1, b2, 5013) == 0);
    SAMEX(readv(fa, va, 4), ito_readv(fb, vb, 4), 0, 0);
    TWIN_EQ(fa, fb);
    CHECK(lseek(fa, 50, SEEK_SET) == 50 && lseek(fb, 50, SEEK_SET) == 50);
    struct iovec w[3] = { { data + 1000, 10 }, { data, 0 }, { data + 3000, 5000 } };
    SAMEX(writev(fa, w, 3), ito_writev(fb, w, 3), 5010, 0);
    TWIN_EQ(fa, fb);
    /* More iovecs than ito keeps on its stack, some empty, growing the file. */
    struct iovec w20[20], ra[20], rb[20];
    for (int i = 0; i < 20; i++) {
        w20[i] = (struct iovec){ data + i * 500, (size_t)(i % 3 == 1 ? 0 : 100 + i * 37) };
        ra[i] = (struct iovec){ b1 + i * 900, (size_t)(i % 4 == 2 ? 0 : 50 + i * 40) };
        rb[i] = (struct iovec){ b2 + i * 900, ra[i].iov_len };
    }
    CHECK(lseek(fa, 11000, SEEK_SET) == 11000 && lseek(fb, 11000, SEEK_SET) == 11000);
    SAME(writev(fa, w20, 20), ito_writev(fb, w20, 20));
    TWIN_EQ(fa, fb);
    CHECK(lseek(fa, 10950, SEEK_SET) == 10950 && lseek(fb, 10950, SEEK_SET) == 10950);
    memset(b1, 0, SZ);
    memset(b2, 0, SZ);
    SAME(readv(fa, ra, 20), ito_readv(fb, rb, 20));
    SOFT(memcmp(b1, b2, SZ) == 0);
    TWIN_EQ(fa, fb);

    STEP("files: zero counts");
    SAMEX(read(fa, b1, 0), ito_read(fb, b2, 0), 0, 0);
    SAMEX(write(fa, data, 0), ito_write(fb, data, 0), 0, 0);
    SAMEX(pread(fa, b1, 0, 3), ito_pread(fb, b2, 0, 3), 0, 0);
    SAMEX(pwrite(fa, data, 0, 3), ito_pwrite(fb, data, 0, 3), 0, 0);
    SAMEX(readv(fa, va, 0), ito_readv(fb, vb, 0), 0, 0);
    SAMEX(writev(fa, w, 0), ito_writev(fb, w, 0), 0, 0);
    TWIN_EQ(fa, fb);

    STEP("files: O_APPEND");
    int aa = open(pa, O_RDWR | O_APPEND), ab = open(pb, O_RDWR | O_APPEND);
    CHECK(aa >= 0 && ab >= 0);
    SAMEX(write(aa, "xyz", 3), ito_write(ab, "xyz", 3), 3, 0);
    TWIN_EQ(aa, ab);
    /* Linux appends even for pwrite on an O_APPEND descriptor. */
    SAME(pwrite(aa, "PQ", 2, 0), ito_pwrite(ab, "PQ", 2, 0));
    TWIN_EQ(aa, ab);
    SAME(writev(aa, w, 3), ito_writev(ab, w, 3));
    TWIN_EQ(aa, ab);
    CHECK(close(aa) == 0 && close(ab) == 0);

    STEP("files: wrong mode, directories, pipes");
    int ro = open(pa, O_RDONLY), wo = open(pb, O_WRONLY);
    CHECK(ro >= 0 && wo >= 0);
    SAME(write(ro, data, 1), ito_write(ro, data, 1));
    SAME(pwrite(ro, data, 1, 0), ito_pwrite(ro, data, 1, 0));
    SAME(writev(ro, w, 1), ito_writev(ro, w, 1));
    SAME(read(wo, b1, 1), ito_read(wo, b2, 1));
    SAME(pread(wo, b1, 1, 0), ito_pread(wo, b2, 1, 0));
    SAME(readv(wo, va, 1), ito_readv(wo, vb, 1));
    SAMEX(fsync(ro), ito_fsync(ro), 0, 0);
    int dir = open("/tmp", O_RDONLY | O_DIRECTORY);
    CHECK(dir >= 0);
    SAME(read(dir, b1, 10), ito_read(dir, b2, 10));   /* EISDIR */
    SAME(pread(dir, b1, 10, 0), ito_pread(dir, b2, 10, 0));
    SAMEX(fsync(dir), ito_fsync(dir), 0, 0);
    int p[2];
    CHECK(pipe(p) == 0);
    SAME(pread(p[0], b1, 1, 0), ito_pread(p[0], b2, 1, 0));   /* ESPIPE */
    SAME(pwrite(p[1], data, 1, 0), ito_pwrite(p[1], data, 1, 0));
    SAME(fsync(p[1]), ito_fsync(p[1]));   /* EINVAL */
    CHECK(close(ro) == 0 && close(wo) == 0 && close(p[0]) == 0 && close(p[1]) == 0);

    STEP("files: fsync, close");
    SAMEX(fsync(fa), ito_fsync(fb), 0, 0);
    int d = dup(fb);
    CHECK(d >= 0);
    EXPECT(ito_close(d), 0, 0);
    if (c->solo) {
        EXPECT(fcntl(d, F_GETFD), -1, EBADF);   /* really closed */
        EXPECT(ito_close(d), -1, EBADF);        /* twice */
    }
    /* Closing the writing end of a pipe: the reader sees EOF. */
    CHECK(pipe(p) == 0);
    EXPECT(ito_close(p[1]), 0, 0);
    EXPECT(ito_read(p[0], b2, 10), 0, 0);
    EXPECT(ito_close(p[0]), 0, 0);

    CHECK(close(fa) == 0 && close(fb) == 0 && close(dir) == 0);
    CHECK(unlink(pa) == 0 && unlink(pb) == 0);
    free(data);
    free(b1);
    free(b2);
}

/* A large read of a file only partly in the page cache returns everything
 * (a regular file gives a short read only at its end; a non-blocking first
 * try stops where the cache does). */
static void evict(int fd)
{
    CHECK(fsync(fd) == 0);
    CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    char b[4096];
    CHECK(pread(fd, b, sizeof b, 0) == (ssize_t)sizeof b);   /* the start is cached again */
}

static void cold_files(struct ctx *c)
{
    size_t n = (size_t)test_scaled(8 << 20);
    if (n < (1u << 20))
        n = 1u << 20;
    char *data = xmalloc(n), *b1 = xmalloc(n), *b2 = xmalloc(n);
    fill(data, n, 2);
    int fa = tmp_fd(), fb = tmp_fd();
    write_all(fa, data, n);
    write_all(fb, data, n);

    STEP("cold files: read");
    evict(fa);
    evict(fb);
    CHECK(lseek(fa, 0, SEEK_SET) == 0 && lseek(fb, 0, SEEK_SET) == 0);
    SAMEX_READ(read(fa, b1, n), ito_read(fb, b2, n), b1, b2, (long)n, 0);
    TWIN_EQ(fa, fb);

    STEP("cold files: pread");
    evict(fa);
    evict(fb);
    SAMEX_READ(pread(fa, b1, n, 0), ito_pread(fb, b2, n, 0), b1, b2, (long)n, 0);

    STEP("cold files: readv");
    evict(fa);
    evict(fb);
    CHECK(lseek(fa, 0, SEEK_SET) == 0 && lseek(fb, 0, SEEK_SET) == 0);
    struct iovec va[2] = { { b1, n / 2 }, { b1 + n / 2, n - n / 2 } };
    struct iovec vb[2] = { { b2, n / 2 }, { b2 + n / 2, n - n / 2 } };
    SAMEX(readv(fa, va, 2), ito_readv(fb, vb, 2), (long)n, 0);
    SOFT(memcmp(b2, data, n) == 0);
    TWIN_EQ(fa, fb);
    CHECK(close(fa) == 0 && close(fb) == 0);
    free(data);
    free(b1);
    free(b2);
}

/* ------------------------------------------------------------ openat */

static void opens(struct ctx *c)
{
    char pa[64], pb[64], missing[64];
    tmp_name(pa, "oa");
    tmp_name(pb, "ob");
    tmp_name(missing, "missing");

    STEP("openat: O_CREAT|O_EXCL, mode, flags");
    int fa = EXPECT_FD(openat(AT_FDCWD, pa, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0666));
    int fb = EXPECT_FD(ito_openat(AT_FDCWD, pb, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0666));
    if (fa < 0 || fb < 0)
        return;
    SOFT_EQ(fcntl(fb, F_GETFL), fcntl(fa, F_GETFL));
    SOFT_EQ(fcntl(fb, F_GETFD), fcntl(fa, F_GETFD));
    SOFT(fcntl(fb, F_GETFD) & FD_CLOEXEC);
    struct stat sa, sb;
    CHECK(fstat(fa, &sa) == 0 && fstat(fb, &sb) == 0);
    SOFT_EQ(sb.st_mode, sa.st_mode);   /* the umask (022) applies */
    SOFT_EQ(sb.st_mode & 0777, 0644);
    SAME(openat(AT_FDCWD, pa, O_CREAT | O_EXCL | O_RDWR, 0600), ito_openat(AT_FDCWD, pa, O_CREAT | O_EXCL | O_RDWR, 0600));
    SAME(openat(AT_FDCWD, pb, O_CREAT | O_EXCL | O_WRONLY, 0600), ito_openat(AT_FDCWD, pb, O_CREAT | O_EXCL | O_WRONLY, 0600));
    SAME(openat(AT_FDCWD, missing, O_RDONLY), ito_openat(AT_FDCWD, missing, O_RDONLY, 0));   /* ENOENT */
    SAME(openat(AT_FDCWD, "/tmp/ito_no_such_dir/x", O_RDWR | O_CREAT, 0600),
         ito_openat(AT_FDCWD, "/tmp/ito_no_such_dir/x", O_RDWR | O_CREAT, 0600));
    char pathdir[80];
    snprintf(pathdir, sizeof pathdir, "%s/x", pa);
    SAME(openat(AT_FDCWD, pathdir, O_RDONLY), ito_openat(AT_FDCWD, pathdir, O_RDONLY, 0));   /* ENOTDIR */
    SAME(openat(AT_FDCWD, pa, O_RDONLY | O_DIRECTORY), ito_openat(AT_FDCWD, pa, O_RDONLY | O_DIRECTORY, 0));
    SAME(openat(AT_FDCWD, "/tmp", O_WRONLY), ito_openat(AT_FDCWD, "/tmp", O_WRONLY, 0));   /* EISDIR */
    char longname[PATH_MAX + 10];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    SAME(openat(AT_FDCWD, longname, O_RDONLY), ito_openat(AT_FDCWD, longname, O_RDONLY, 0));   /* ENAMETOOLONG */
    SAME(openat(AT_FDCWD, "", O_RDONLY), ito_openat(AT_FDCWD, "", O_RDONLY, 0));   /* ENOENT */

    /* The same flags read back, for a few combinations. */
    static const int flagsets[] = { O_RDONLY, O_WRONLY | O_APPEND, O_RDWR | O_NONBLOCK, O_RDONLY | O_NOATIME,
                                    O_RDWR | O_SYNC, O_WRONLY | O_DSYNC | O_CLOEXEC };
    for (size_t i = 0; i < sizeof flagsets / sizeof flagsets[0]; i++) {
        int a = openat(AT_FDCWD, pa, flagsets[i]);
        int b = EXPECT_FD(ito_openat(AT_FDCWD, pb, flagsets[i], 0));
        if (a >= 0 && b >= 0) {
            SOFT_EQ(fcntl(b, F_GETFL), fcntl(a, F_GETFL));
            SOFT_EQ(fcntl(b, F_GETFD), fcntl(a, F_GETFD));
        }
        if (a >= 0)
            close(a);
        if (b >= 0)
            close(b);
    }

    STEP("openat: O_TRUNC, dirfd");
    write_all(fb, "0123456789", 10);
    int t = EXPECT_FD(ito_openat(AT_FDCWD, pb, O_WRONLY | O_TRUNC, 0));
    CHECK(fstat(fb, &sb) == 0);
    SOFT_EQ(sb.st_size, 0);
    if (t >= 0)
        close(t);
    int dir = open("/tmp", O_RDONLY | O_DIRECTORY);
    CHECK(dir >= 0);
    t = EXPECT_FD(ito_openat(dir, pb + 5, O_RDONLY, 0));   /* relative to /tmp */
    if (t >= 0) {
        struct stat st;
        CHECK(fstat(t, &st) == 0);
        SOFT(st.st_ino == sb.st_ino && st.st_dev == sb.st_dev);
        close(t);
    }
    SAME(openat(dir, missing + 5, O_RDONLY), ito_openat(dir, missing + 5, O_RDONLY, 0));
    SAME(openat(fa, "x", O_RDONLY), ito_openat(fa, "x", O_RDONLY, 0));   /* dirfd not a directory: ENOTDIR */
    SAME(openat(-1, "x", O_RDONLY), ito_openat(-1, "x", O_RDONLY, 0));   /* EBADF */
    SAME(openat(c->dead, "x", O_RDONLY), ito_openat(c->dead, "x", O_RDONLY, 0));
    t = EXPECT_FD(ito_openat(-1, pb, O_RDONLY, 0));   /* an absolute path ignores dirfd */
    if (t >= 0)
        close(t);
    CHECK(close(dir) == 0);

    if (c->solo) {
        STEP("openat: the lowest free descriptor, EMFILE");
        int a = openat(AT_FDCWD, pa, O_RDONLY);
        CHECK(a >= 0 && close(a) == 0);
        int b = EXPECT_FD(ito_openat(AT_FDCWD, pb, O_RDONLY, 0));
        SOFT_EQ(b, a);
        if (b >= 0)
            close(b);
        /* No descriptor left under the soft limit. */
        struct rlimit rl, low;
        CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
        low = rl;
        low.rlim_cur = (rlim_t)a;
        CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
        SAME(openat(AT_FDCWD, pa, O_RDONLY), ito_openat(AT_FDCWD, pb, O_RDONLY, 0));
        CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    }

    STEP("openat: FIFOs");
    char fifo[64];
    tmp_name(fifo, "fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    /* Non-blocking: a reader opens at once, a writer without a reader gets ENXIO. */
    t = EXPECT_FD(ito_openat(AT_FDCWD, fifo, O_RDONLY | O_NONBLOCK, 0));
    if (t >= 0)
        close(t);
    SAME(openat(AT_FDCWD, fifo, O_WRONLY | O_NONBLOCK), ito_openat(AT_FDCWD, fifo, O_WRONLY | O_NONBLOCK, 0));
    /* Blocking: the open waits for a writer (which comes 20 ms later). */
    struct later l = { .op = OP_OPEN, .path = fifo, .flags = O_WRONLY, .delay_ns = 20 * MS };
    uint64_t t0 = ito_now_ns();   /* before the writer's clock starts */
    later_start(&l);
    t = EXPECT_FD(ito_openat(AT_FDCWD, fifo, O_RDONLY, 0));
    uint64_t el = ms_since(t0);
    if (el < 15)
        report(c, __LINE__, "ito_openat(FIFO, O_RDONLY) returned after %llu ms, before any writer",
               (unsigned long long)el);
    later_join(&l);
    CHECK(l.ret >= 0);
    write_all((int)l.ret, "fifo", 4);
    close((int)l.ret);
    if (t >= 0) {
        char b[8];
        EXPECT(ito_read(t, b, sizeof b), 4, 0);
        EXPECT(ito_read(t, b, sizeof b), 0, 0);
        close(t);
    }
    /* A writer waits for a reader likewise. */
    l = (struct later){ .op = OP_OPEN, .path = fifo, .flags = O_RDONLY, .delay_ns = 20 * MS };
    t0 = ito_now_ns();
    later_start(&l);
    t = EXPECT_FD(ito_openat(AT_FDCWD, fifo, O_WRONLY, 0));
    el = ms_since(t0);
    if (t >= 0 && el < 15)
        report(c, __LINE__, "ito_openat(FIFO, O_WRONLY) returned after %llu ms, before any reader",
               (unsigned long long)el);
    if (t < 0)
        t = open(fifo, O_WRONLY);   /* release the reader */
    later_join(&l);
    CHECK(l.ret >= 0 && t >= 0);
    EXPECT(ito_write(t, "w", 1), 1, 0);
    close(t);
    char wb[4];
    EXPECT(ito_read((int)l.ret, wb, sizeof wb), 1, 0);
    close((int)l.ret);
    CHECK(unlink(fifo) == 0);

    CHECK(close(fa) == 0 && close(fb) == 0);
    CHECK(unlink(pa) == 0 && unlink(pb) == 0);
}

static void run(struct ctx *c)
{
    files(c);
    cold_files(c);
    opens(c);
}

const struct io_topic io_topic = {
    .name = "files",
    .run = run,
};
