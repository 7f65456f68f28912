/* ito/io.h: every call gives the return value and errno of its C-library
 * namesake, on regular files, pipes, Unix and TCP/UDP sockets and terminals,
 * for good and bad input alike. The C library is the oracle: most checks make
 * the libc call and the ito call on twin descriptors in the same state and
 * compare results, errno (set to a sentinel before each call, so the ito call
 * must set it) and the bytes moved.
 *
 * Covered: read/write/pread/pwrite/readv/writev on files (positions, holes,
 * EOF, O_APPEND, files mostly evicted from the page cache, > 8 iovecs and
 * IOV_MAX), openat (flags, modes, dirfd, FIFOs, EMFILE and the lowest free
 * number), fsync and close; pipes blocking and not (EAGAIN, EPIPE with
 * SIGPIPE ignored, writes larger than the pipe); Unix stream, datagram and
 * seqpacket sockets and TCP/UDP (MSG_PEEK, MSG_DONTWAIT, MSG_WAITALL, EOF,
 * accept4 flags, connect errors, SO_RCVTIMEO/SO_SNDTIMEO); terminals; eventfd,
 * timerfd, /dev/zero, /dev/null; poll; EBADF, EINVAL and EFAULT; and, from
 * an ito thread with the rings on, calls that signals do not interrupt.
 *
 * The same checks run in main (an ito thread), in a spawned ito thread, in a
 * foreign kernel thread (a pthread: the plain system call), and then in
 * several ito threads and a pthread at once. ctest runs the test with the
 * rings on and with ITO_IO_URING=0 (every ito thread makes the plain call).
 *
 * A mismatch is reported and counted, and the checks go on, so one run lists
 * every difference; the test fails at the end if there was any. A hang (a call
 * that blocks when libc would not) ends in SIGALRM, naming the last step.
 *
 * Helpers that must block (a reader draining a pipe, a late sender) are
 * pthreads, so that they progress however many vprocs the checks keep busy
 * (with the rings off an ito thread's I/O blocks its vproc). Timings are lower
 * bounds only: the machine is shared. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <termios.h>

#include "common.h"

/* An errno value no call sets: what errno holds before each call. */
#define SENTINEL 9999

struct ctx {
    const char *who;   /* where the checks run, for the messages */
    bool solo;         /* nothing else runs: fd numbers and rlimits may be checked */
    int dead;          /* a descriptor number never open, this runner's own (TSan
                          tracks each number: a close of one shared by runners
                          would be a race to it) */
};

static atomic_int failures;
static _Atomic(const char *) last_step = "start";
static int dead_fd;   /* a descriptor number never open: soft RLIMIT_NOFILE - 1 and below */
static char *bad;     /* a PROT_NONE page: a buffer the kernel answers EFAULT for */
static bool rings;    /* ito_io_uring_active() */
static atomic_int uniq;

#define STEP(s) atomic_store(&last_step, (s))

static void report(const struct ctx *c, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(const struct ctx *c, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s] io_semantics.c:%d: %s\n", c->who, line, msg);
    atomic_fetch_add(&failures, 1);
}

static const char *ename(int e) { return e == SENTINEL ? "errno not set" : strerrorname_np(e) ? strerrorname_np(e) : "?"; }

static long same_(const struct ctx *c, int line, const char *lcs, long r1, int e1, const char *ics, long r2,
                  int e2)
{
    if (r1 == -1 && e1 == SENTINEL)
        report(c, line, "the oracle %s failed without setting errno", lcs);
    if (r1 != r2)
        report(c, line, "%s returned %ld (%s); %s returned %ld (%s)", ics, r2, r2 < 0 ? ename(e2) : "-", lcs, r1,
               r1 < 0 ? ename(e1) : "-");
    else if (r1 == -1 && e1 != e2)
        report(c, line, "%s failed with %s; %s failed with %s", ics, ename(e2), lcs, ename(e1));
    return r2;
}

/* The libc call lc and the ito call ic: the same result, and the same errno
 * when they fail. Evaluates to ic's result. */
#define SAME(lc, ic)                                                                    \
    ({                                                                                  \
        CALL_BOTH_(lc, ic);                                                             \
        same_(c, __LINE__, #lc, r1_, e1_, #ic, r2_, e2_);                               \
    })

/* Call lc then ic, each from a sentinel errno: declares r1_, e1_, r2_, e2_. */
#define CALL_BOTH_(lc, ic)                                                              \
    test_set_errno(SENTINEL);                                                           \
    long r1_ = (long)(lc);                                                              \
    int e1_ = test_errno();                                                             \
    test_set_errno(SENTINEL);                                                           \
    long r2_ = (long)(ic);                                                              \
    int e2_ = test_errno()

/* Like SAME for reads: also the bytes read into b1 (libc) and b2 (ito). */
#define SAME_READ(lc, ic, b1, b2)                                                       \
    ({                                                                                  \
        long rr_ = SAME(lc, ic);                                                        \
        if (rr_ > 0 && memcmp((b1), (b2), (size_t)rr_) != 0)                            \
            report(c, __LINE__, "%s read other bytes than %s", #ic, #lc);               \
        rr_;                                                                            \
    })

/* SAME, where the libc call must also give want (and werr when want is -1):
 * a check of the test itself; a difference of ito's is reported once, by SAME. */
#define SAMEX(lc, ic, want, werr)                                                       \
    ({                                                                                  \
        CALL_BOTH_(lc, ic);                                                             \
        long w_ = (long)(want);                                                         \
        if (r1_ != w_ || (w_ == -1 && e1_ != (werr)))                                   \
            report(c, __LINE__, "the oracle %s returned %ld (%s), expected %ld (%s)",   \
                   #lc, r1_, r1_ < 0 ? ename(e1_) : "-", w_, w_ < 0 ? ename(werr) : "-"); \
        same_(c, __LINE__, #lc, r1_, e1_, #ic, r2_, e2_);                               \
    })

#define SAMEX_READ(lc, ic, b1, b2, want, werr)                                          \
    ({                                                                                  \
        long rr_ = SAMEX(lc, ic, want, werr);                                           \
        if (rr_ > 0 && memcmp((b1), (b2), (size_t)rr_) != 0)                            \
            report(c, __LINE__, "%s read other bytes than %s", #ic, #lc);               \
        rr_;                                                                            \
    })

/* A call (libc or ito) must return want, and fail with werr when want is -1. */
#define EXPECT(call, want, werr)                                                        \
    ({                                                                                  \
        test_set_errno(SENTINEL);                                                       \
        long r_ = (long)(call);                                                         \
        int e_ = test_errno();                                                          \
        long w_ = (long)(want);                                                         \
        if (r_ != w_ || (w_ == -1 && e_ != (werr)))                                     \
            report(c, __LINE__, "%s returned %ld (%s), expected %ld (%s)", #call, r_,   \
                   r_ < 0 ? ename(e_) : "-", w_, w_ < 0 ? ename(werr) : "-");           \
        r_;                                                                             \
    })

/* A call that returns a descriptor must succeed. */
#define EXPECT_FD(call)                                                                 \
    ({                                                                                  \
        test_set_errno(SENTINEL);                                                       \
        long r_ = (long)(call);                                                         \
        int e_ = test_errno();                                                          \
        if (r_ < 0)                                                                     \
            report(c, __LINE__, "%s failed: %s", #call, ename(e_));                     \
        (int)r_;                                                                        \
    })

#define SOFT(cond)                                                                      \
    do {                                                                                \
        if (!(cond))                                                                    \
            report(c, __LINE__, "check failed: %s", #cond);                             \
    } while (0)

#define SOFT_EQ(a, b)                                                                   \
    do {                                                                                \
        long long va_ = (long long)(a), vb_ = (long long)(b);                           \
        if (va_ != vb_)                                                                 \
            report(c, __LINE__, "%s == %s failed (%lld vs %lld)", #a, #b, va_, vb_);    \
    } while (0)

static void fill(char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (char)(seed * 131u + i * 7u + (i >> 9));
}

static char *xmalloc(size_t n)
{
    char *p = malloc(n);
    CHECK(p);
    return p;
}

static uint64_t ms_since(uint64_t t0) { return (ito_now_ns() - t0) / 1000000u; }

/* An unlinked temporary file in /tmp. */
static int tmp_fd(void)
{
    char p[] = "/tmp/ito_io_XXXXXX";
    int fd = mkstemp(p);
    CHECK(fd >= 0);
    CHECK(unlink(p) == 0);
    return fd;
}

/* A temporary file in /tmp that keeps its name (path: 64 bytes). */
static int tmp_named(char *path)
{
    strcpy(path, "/tmp/ito_io_XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    return fd;
}

/* A fresh unused name under /tmp (path: 64 bytes). */
static void tmp_name(char *path, const char *what)
{
    snprintf(path, 64, "/tmp/ito_io_%s_%d_%d", what, (int)getpid(), atomic_fetch_add(&uniq, 1));
}

static void write_all(int fd, const char *b, size_t n)
{
    while (n) {
        ssize_t r = write(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        CHECK(r > 0);
        b += r;
        n -= (size_t)r;
    }
}

static void read_all(int fd, char *b, size_t n)
{
    while (n) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        CHECK(r > 0);
        b += r;
        n -= (size_t)r;
    }
}

static void set_nonblock(int fd, bool on)
{
    int fl = fcntl(fd, F_GETFL);
    CHECK(fl >= 0);
    CHECK(fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) == 0);
}

/* Twin files must hold the same bytes and stand at the same position. */
static void twin_eq_(const struct ctx *c, int line, int fa, int fb)
{
    struct stat sa, sb;
    CHECK(fstat(fa, &sa) == 0 && fstat(fb, &sb) == 0);
    off_t pa = lseek(fa, 0, SEEK_CUR), pb = lseek(fb, 0, SEEK_CUR);
    if (pa != pb)
        report(c, line, "file positions differ: libc %ld, ito %ld", (long)pa, (long)pb);
    if (sa.st_size != sb.st_size) {
        report(c, line, "file sizes differ: libc %ld, ito %ld", (long)sa.st_size, (long)sb.st_size);
        return;
    }
    char *a = xmalloc((size_t)sa.st_size + 1), *b = xmalloc((size_t)sa.st_size + 1);
    CHECK(pread(fa, a, (size_t)sa.st_size, 0) == sa.st_size);
    CHECK(pread(fb, b, (size_t)sa.st_size, 0) == sa.st_size);
    if (memcmp(a, b, (size_t)sa.st_size) != 0)
        report(c, line, "file contents differ");
    free(a);
    free(b);
}
#define TWIN_EQ(fa, fb) twin_eq_(c, __LINE__, (fa), (fb))

/* ------------------------------------------------------------ helpers */

/* Something done by another thread after a delay. */
enum op { OP_WRITE, OP_SEND, OP_READ, OP_READ_CLOSE, OP_CLOSE, OP_SHUT_WR, OP_CONNECT, OP_OPEN };

struct later {
    enum op op;
    int fd;
    char *buf;             /* OP_WRITE/SEND: the bytes; OP_READ: where they go */
    size_t len;
    int chunks;            /* split into this many pieces, a delay before each */
    uint64_t delay_ns;
    const struct sockaddr *sa;   /* OP_CONNECT */
    socklen_t salen;
    const char *path;      /* OP_OPEN */
    int flags;
    long ret;              /* OP_OPEN: the descriptor; OP_CONNECT: connect's result */
    bool ito;              /* run in an ito thread (must not block), else a pthread */
    pthread_t p;
    ito_thread_t t;
};

static void *later_fn(void *a)
{
    struct later *l = a;
    int chunks = l->chunks > 0 ? l->chunks : 1;
    size_t done = 0;
    for (int i = 0; i < chunks; i++) {
        ito_sleep_ns(l->delay_ns);
        size_t part = i == chunks - 1 ? l->len - done : l->len / (size_t)chunks;
        switch (l->op) {
        case OP_WRITE:
            write_all(l->fd, l->buf + done, part);
            break;
        case OP_SEND:
            for (size_t k = 0; k < part;) {
                ssize_t r = send(l->fd, l->buf + done + k, part - k, MSG_NOSIGNAL);
                CHECK(r > 0);
                k += (size_t)r;
            }
            break;
        case OP_READ:
            read_all(l->fd, l->buf + done, part);
            break;
        case OP_READ_CLOSE:   /* read, wait as long again, close */
            read_all(l->fd, l->buf + done, part);
            ito_sleep_ns(l->delay_ns);
            CHECK(close(l->fd) == 0);
            break;
        case OP_CLOSE:
            CHECK(close(l->fd) == 0);
            break;
        case OP_SHUT_WR:
            CHECK(shutdown(l->fd, SHUT_WR) == 0);
            break;
        case OP_CONNECT:
            l->ret = connect(l->fd, l->sa, l->salen);
            break;
        case OP_OPEN:
            l->ret = open(l->path, l->flags);
            break;
        }
        done += part;
    }
    return NULL;
}

static void later_start(struct later *l)
{
    if (l->ito)
        OK(ito_spawn(&l->t, NULL, later_fn, l));
    else
        CHECK_EQ(pthread_create(&l->p, NULL, later_fn, l), 0);
}

static void later_join(struct later *l)
{
    if (l->ito)
        OK(ito_join(l->t, NULL));
    else
        CHECK_EQ(pthread_join(l->p, NULL), 0);
}

#define MS 1000000ull

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

/* ------------------------------------------------------------ sockets */

static int tcp_listener(struct sockaddr_in *sa, int type_flags)
{
    int l = socket(AF_INET, SOCK_STREAM | type_flags, 0);
    CHECK(l >= 0);
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(l, (struct sockaddr *)sa, sizeof *sa) == 0);
    CHECK(listen(l, 64) == 0);
    socklen_t len = sizeof *sa;
    CHECK(getsockname(l, (struct sockaddr *)sa, &len) == 0);
    return l;
}

static int tcp_client(const struct sockaddr_in *sa)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(s >= 0);
    CHECK(connect(s, (const struct sockaddr *)sa, sizeof *sa) == 0);
    return s;
}

static bool same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
    return a->sin_family == b->sin_family && a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
}

/* Two socket pairs of a type: s (ito) and t (libc). */
static void pairs(int type, int s[2], int t[2])
{
    CHECK(socketpair(AF_UNIX, type, 0, s) == 0);
    CHECK(socketpair(AF_UNIX, type, 0, t) == 0);
}

static void close4(int s[2], int t[2])
{
    CHECK(close(s[0]) == 0 && close(s[1]) == 0 && close(t[0]) == 0 && close(t[1]) == 0);
}

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

/* SO_RCVTIMEO and SO_SNDTIMEO: a blocking call gives up with EAGAIN after
 * the timeout (30 ms). The twin used by ito is released 300 ms later, so an
 * ito call that ignores the timeout returns late with data (a mismatch), not
 * never. */
static void drain_nb(int fd)
{
    char b[65536];
    while (recv(fd, b, sizeof b, MSG_DONTWAIT) > 0) {
    }
}

static void socket_timeouts(struct ctx *c)
{
    char b1[64], b2[64];
    struct timeval tv = { 0, 30000 };
    int s[2], t[2];

    STEP("socket timeouts: SO_RCVTIMEO");
    pairs(SOCK_STREAM, s, t);
    CHECK(setsockopt(s[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
    CHECK(setsockopt(t[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
    for (int k = 0; k < 3; k++) {
        /* Enough to end any of the calls, MSG_WAITALL's included. */
        static char late[sizeof b2];
        struct later l = { .op = OP_SEND, .fd = s[0], .buf = late, .len = sizeof late, .delay_ns = 300 * MS };
        later_start(&l);
        if (k == 0)
            SAMEX(recv(t[1], b1, sizeof b1, 0), ito_recv(s[1], b2, sizeof b2, 0), -1, EAGAIN);
        else if (k == 1)
            SAMEX(recv(t[1], b1, sizeof b1, MSG_WAITALL), ito_recv(s[1], b2, sizeof b2, MSG_WAITALL), -1, EAGAIN);
        else
            SAMEX(read(t[1], b1, sizeof b1), ito_read(s[1], b2, sizeof b2), -1, EAGAIN);
        later_join(&l);
        drain_nb(s[1]);
    }

    STEP("socket timeouts: a partial MSG_WAITALL");
    /* Part of the data came: the timeout ends the call with what there is. */
    CHECK(send(s[0], "0123456789", 10, 0) == 10 && send(t[0], "0123456789", 10, 0) == 10);
    {
        static char rest[sizeof b2 - 10];
        struct later l = { .op = OP_SEND, .fd = s[0], .buf = rest, .len = sizeof rest, .delay_ns = 300 * MS };
        later_start(&l);
        SAMEX_READ(recv(t[1], b1, sizeof b1, MSG_WAITALL), ito_recv(s[1], b2, sizeof b2, MSG_WAITALL), b1, b2, 10, 0);
        later_join(&l);
        drain_nb(s[1]);
    }
    close4(s, t);

    STEP("socket timeouts: SO_SNDTIMEO");
    pairs(SOCK_STREAM, s, t);
    CHECK(setsockopt(s[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    CHECK(setsockopt(t[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    char blk[4096];
    memset(blk, 's', sizeof blk);
    for (int k = 0; k < 2; k++) {
        set_nonblock(s[0], true);
        set_nonblock(t[0], true);
        size_t queued = 0;
        for (ssize_t r; (r = send(s[0], blk, sizeof blk, 0)) > 0;)
            queued += (size_t)r;
        while (send(t[0], blk, sizeof blk, 0) > 0) {
        }
        set_nonblock(s[0], false);
        set_nonblock(t[0], false);
        char *sink = xmalloc(queued);
        struct later l = { .op = OP_READ, .fd = s[1], .buf = sink, .len = queued, .delay_ns = 300 * MS };
        later_start(&l);
        if (k == 0)
            SAMEX(send(t[0], "x", 1, 0), ito_send(s[0], "x", 1, 0), -1, EAGAIN);
        else
            SAMEX(write(t[0], "x", 1), ito_write(s[0], "x", 1), -1, EAGAIN);
        later_join(&l);
        free(sink);
        drain_nb(s[1]);
        drain_nb(t[1]);
    }
    /* A large send into a full socket, after some room is made: the part
     * that fits, when the timeout ends it. */
    {
        set_nonblock(s[0], true);
        set_nonblock(t[0], true);
        while (send(s[0], blk, sizeof blk, 0) > 0) {
        }
        while (send(t[0], blk, sizeof blk, 0) > 0) {
        }
        set_nonblock(s[0], false);
        set_nonblock(t[0], false);
        char room[8192];
        CHECK(recv(s[1], room, sizeof room, MSG_WAITALL) == (ssize_t)sizeof room);
        CHECK(recv(t[1], room, sizeof room, MSG_WAITALL) == (ssize_t)sizeof room);
        size_t n = 1u << 20;
        char *big = xmalloc(n), *sink = xmalloc(4u << 20);
        memset(big, 'b', n);
        /* The ito twin is drained 300 ms later, should it not time out. */
        struct later l = { .op = OP_READ, .fd = s[1], .buf = sink, .len = 65536, .delay_ns = 300 * MS };
        later_start(&l);
        long r = SAME(send(t[0], big, n, 0), ito_send(s[0], big, n, 0));
        later_join(&l);
        SOFT(r > 0 && r < (long)n);
        drain_nb(s[1]);
        drain_nb(t[1]);
        free(big);
        free(sink);
    }
    close4(s, t);

    STEP("socket timeouts: accept");
    struct sockaddr_in la, lb;
    int l1 = tcp_listener(&la, 0), l2 = tcp_listener(&lb, 0);
    CHECK(setsockopt(l1, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
    CHECK(setsockopt(l2, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
    int k = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(k >= 0);
    struct later l = { .op = OP_CONNECT, .fd = k, .sa = (struct sockaddr *)&lb, .salen = sizeof lb,
                       .delay_ns = 300 * MS };
    later_start(&l);
    long a = SAMEX(accept4(l1, NULL, NULL, 0), ito_accept(l2, NULL, NULL, 0), -1, EAGAIN);
    later_join(&l);
    if (a >= 0)
        close((int)a);
    CHECK(close(k) == 0 && close(l1) == 0 && close(l2) == 0);

    STEP("socket timeouts: connect");
    /* A TCP listener whose accept queue is full drops new SYNs: a blocking
     * connect waits, and SO_SNDTIMEO ends it with EINPROGRESS (the
     * handshake goes on). */
    struct sockaddr_in fa;
    int fl = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fl >= 0);
    memset(&fa, 0, sizeof fa);
    fa.sin_family = AF_INET;
    fa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fl, (struct sockaddr *)&fa, sizeof fa) == 0 && listen(fl, 0) == 0);
    socklen_t len = sizeof fa;
    CHECK(getsockname(fl, (struct sockaddr *)&fa, &len) == 0);
    enum { NFILL = 8 };
    int fill_fds[NFILL];
    for (int i = 0; i < NFILL; i++) {
        fill_fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        CHECK(fill_fds[i] >= 0);
        (void)!connect(fill_fds[i], (struct sockaddr *)&fa, sizeof fa);
    }
    ito_sleep_ns(20 * MS);
    int k1 = socket(AF_INET, SOCK_STREAM, 0), k2 = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(k1 >= 0 && k2 >= 0);
    CHECK(setsockopt(k1, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    CHECK(setsockopt(k2, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    SAME(connect(k1, (struct sockaddr *)&fa, sizeof fa), ito_connect(k2, (struct sockaddr *)&fa, sizeof fa));
    CHECK(close(k1) == 0 && close(k2) == 0);
    for (int i = 0; i < NFILL; i++)
        CHECK(close(fill_fds[i]) == 0);
    CHECK(close(fl) == 0);
    /* A Unix listener with a full backlog: EAGAIN after the timeout. */
    char path[64];
    tmp_name(path, "full");
    struct sockaddr_un ua = { .sun_family = AF_UNIX };
    strcpy(ua.sun_path, path);
    int ul = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(ul >= 0);
    CHECK(bind(ul, (struct sockaddr *)&ua, sizeof ua) == 0 && listen(ul, 0) == 0);
    int ufill[4], nuf = 0;
    for (int i = 0; i < 4; i++) {
        int f = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        CHECK(f >= 0);
        if (connect(f, (struct sockaddr *)&ua, sizeof ua) == 0)
            ufill[nuf++] = f;
        else
            close(f);
    }
    k1 = socket(AF_UNIX, SOCK_STREAM, 0);
    k2 = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(k1 >= 0 && k2 >= 0);
    CHECK(setsockopt(k1, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    CHECK(setsockopt(k2, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0);
    SAME(connect(k1, (struct sockaddr *)&ua, sizeof ua), ito_connect(k2, (struct sockaddr *)&ua, sizeof ua));
    CHECK(close(k1) == 0 && close(k2) == 0);
    for (int i = 0; i < nuf; i++)
        CHECK(close(ufill[i]) == 0);
    CHECK(close(ul) == 0 && unlink(path) == 0);
}

/* io.h: the calls are not interrupted by signals. From an ito thread with
 * the rings on (the plain calls made otherwise fail with EINTR, as in the C
 * library, for a handler installed without SA_RESTART). */
static void on_usr1(int sig) { (void)sig; }

struct signaller {
    atomic_int stop;
    pthread_t p;
};

static void *signaller_fn(void *a)
{
    struct signaller *sg = a;
    while (!atomic_load(&sg->stop)) {
        kill(getpid(), SIGUSR1);
        usleep(2000);
    }
    return NULL;
}

static void signals(struct ctx *c)
{
    STEP("signals do not interrupt parked calls");
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;   /* no SA_RESTART */
    CHECK(sigaction(SIGUSR1, &sa, &old) == 0);
    struct signaller sg = { 0 };
    CHECK_EQ(pthread_create(&sg.p, NULL, signaller_fn, &sg), 0);
    char b[16];
    int p[2];
    CHECK(pipe(p) == 0);
    struct later l = { .op = OP_WRITE, .fd = p[1], .buf = (char *)"sig", .len = 3, .delay_ns = 50 * MS };
    later_start(&l);
    EXPECT(ito_read(p[0], b, sizeof b), 3, 0);
    later_join(&l);
    struct pollfd pf = { p[0], POLLIN, 0 };
    l = (struct later){ .op = OP_WRITE, .fd = p[1], .buf = (char *)"sig", .len = 3, .delay_ns = 50 * MS };
    later_start(&l);
    EXPECT(ito_poll(&pf, 1, 5000), 1, 0);
    later_join(&l);
    EXPECT(ito_read(p[0], b, sizeof b), 3, 0);
    uint64_t t0 = ito_now_ns();
    EXPECT(ito_poll(&pf, 1, 50), 0, 0);
    SOFT(ms_since(t0) >= 50);
    int s[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
    l = (struct later){ .op = OP_SEND, .fd = s[0], .buf = (char *)"sig", .len = 3, .delay_ns = 50 * MS };
    later_start(&l);
    EXPECT(ito_recv(s[1], b, 3, MSG_WAITALL), 3, 0);
    later_join(&l);
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m >= 0) {
        char name[128];
        CHECK(grantpt(m) == 0 && unlockpt(m) == 0 && ptsname_r(m, name, sizeof name) == 0);
        int t = open(name, O_RDWR | O_NOCTTY);
        CHECK(t >= 0);
        struct termios tio;
        CHECK(tcgetattr(t, &tio) == 0);
        cfmakeraw(&tio);
        CHECK(tcsetattr(t, TCSANOW, &tio) == 0);
        l = (struct later){ .op = OP_WRITE, .fd = m, .buf = (char *)"s", .len = 1, .delay_ns = 50 * MS };
        later_start(&l);
        EXPECT(ito_read(t, b, 1), 1, 0);
        later_join(&l);
        CHECK(close(t) == 0 && close(m) == 0);
    }
    atomic_store(&sg.stop, 1);
    CHECK_EQ(pthread_join(sg.p, NULL), 0);
    CHECK(sigaction(SIGUSR1, &old, NULL) == 0);
    CHECK(close(p[0]) == 0 && close(p[1]) == 0 && close(s[0]) == 0 && close(s[1]) == 0);
}

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

/* ------------------------------------------------------------ bad input */

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

/* ------------------------------------------------------------ in a child */

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

static void *writev_many_runner(void *a)
{
    writev_many(a);
    return NULL;
}

/* Run one of the checks above in a child process (argv[1] = its name). */
static void in_child(const char *name)
{
    static char err[16384];
    int st = test_run_self(name, err, sizeof err);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char sb[128];
        fprintf(stderr, "io_semantics: the check \"%s\" in a child process %s; its stderr:\n%s\n", name,
                test_status_str(st, sb, sizeof sb), err);
        atomic_fetch_add(&failures, 1);
    }
}

/* ------------------------------------------------------------ driver */

static void run_all(struct ctx *c)
{
    files(c);
    cold_files(c);
    opens(c);
    pipes(c);
    unix_sockets(c);
    tcp(c);
    if (c->solo)   /* each may take 300 ms, when the timeouts are not kept */
        socket_timeouts(c);
    others(c);
    terminals(c);
    polls(c);
    bad_input(c);
}

static void *runner(void *a)
{
    run_all(a);
    return NULL;
}

static void on_alarm(int sig)
{
    const char *s = atomic_load(&last_step);
    char msg[256];
    int n = snprintf(msg, sizeof msg, "io_semantics: timed out; last step started: %s\n", s);
    if (n > 0)
        (void)!write(2, msg, (size_t)n);
    abort();
}

int main(int argc, char **argv)
{
    /* As the brief of io.h asks: compare with SIGPIPE ignored. */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    umask(022);
    rings = ito_io_uring_active();
    if (argc == 1)
        printf("io_uring active: %s\n", rings ? "yes" : "no");
    fflush(stdout);

    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    dead_fd = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 100000 ? 99999 : (int)rl.rlim_cur - 1;
    for (int i = 0; i < 8; i++)
        CHECK(fcntl(dead_fd - i, F_GETFD) == -1 && errno == EBADF);
    bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(bad != MAP_FAILED);

    if (argc > 1 && strcmp(argv[1], "writev-many") == 0) {
        alarm(TEST_SANITIZED ? 30 : 10);
        struct ctx cm = { "child: main", true, dead_fd }, ci = { "child: ito thread", true, dead_fd };
        writev_many(&cm);
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, writev_many_runner, &ci));
        OK(ito_join(t, NULL));
        return atomic_load(&failures) ? 1 : 0;
    }
    in_child("writev-many");
    alarm(TEST_SANITIZED ? 240 : 100);

    struct ctx cm = { "main", true, dead_fd };
    run_all(&cm);
    if (rings)
        signals(&cm);

    struct ctx ci = { "ito thread", true, dead_fd };
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, runner, &ci));
    OK(ito_join(t, NULL));

    struct ctx cf = { "foreign pthread", true, dead_fd };
    pthread_t pt;
    CHECK_EQ(pthread_create(&pt, NULL, runner, &cf), 0);
    CHECK_EQ(pthread_join(pt, NULL), 0);

    /* All at once: three ito threads and a pthread. */
    enum { NC = 3 };
    struct ctx cc[NC] = { { "concurrent ito 0", false, dead_fd - 1 },
                          { "concurrent ito 1", false, dead_fd - 2 },
                          { "concurrent ito 2", false, dead_fd - 3 } };
    struct ctx ccf = { "concurrent foreign", false, dead_fd - 4 };
    ito_thread_t ts[NC];
    for (int i = 0; i < NC; i++)
        OK(ito_spawn(&ts[i], NULL, runner, &cc[i]));
    CHECK_EQ(pthread_create(&pt, NULL, runner, &ccf), 0);
    for (int i = 0; i < NC; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(pthread_join(pt, NULL), 0);

    int f = atomic_load(&failures);
    if (f) {
        fprintf(stderr, "io_semantics: %d mismatch(es) with the C library (io_uring %s)\n", f, rings ? "on" : "off");
        return 1;
    }
    printf("io_semantics: all checks passed\n");
    return 0;
}
