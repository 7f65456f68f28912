/* SPDX-License-Identifier: MIT */
/* The harness of the io_semantics tests: ito/io.h against the C library.
 *
 * Every call of ito/io.h gives the return value and errno of its C-library
 * namesake, on regular files, pipes, Unix and TCP/UDP sockets and terminals,
 * for good and bad input alike. The C library is the oracle: most checks make
 * the libc call and the ito call on twin descriptors in the same state and
 * compare results, errno (set to a sentinel before each call, so the ito call
 * must set it) and the bytes moved.
 *
 * One test executable per topic (io_semantics_<topic>.c, which defines
 * io_topic); io_semantics.c is their common driver: the topic's checks run in
 * main (an ito thread), in a spawned ito thread, in a foreign kernel thread (a
 * pthread: the plain system call), and then in three ito threads and a
 * pthread at once. ctest runs each with the rings on and with ITO_IO_URING=0
 * (every ito thread makes the plain call).
 *
 * A mismatch is reported and counted, and the checks go on, so one run lists
 * every difference; the test fails at the end if there was any. A hang (a call
 * that blocks when libc would not) ends in SIGALRM, naming the last step.
 *
 * Helpers that must block (a reader draining a pipe, a late sender) are
 * pthreads, so that they progress however many vprocs the checks keep busy
 * (with the rings off an ito thread's I/O blocks its vproc). Timings are lower
 * bounds only: the machine is shared. */
#ifndef ITO_TESTS_IO_SEMANTICS_H
#define ITO_TESTS_IO_SEMANTICS_H

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

/* What one test checks: its io_semantics_<topic>.c defines io_topic. */
struct io_topic {
    const char *name;                   /* the topic: "files", "pipes", ... */
    void (*run)(struct ctx *c);         /* in every runner (c->solo: alone) */
    void (*main_rings)(struct ctx *c);  /* then in main only, when the rings are on */
    const char *child;                  /* first, in a child process: "name" ... */
    void (*child_run)(struct ctx *c);   /* ... runs this in its main and an ito thread */
};
extern const struct io_topic io_topic;

extern atomic_int failures;
extern _Atomic(const char *) last_step;
extern int dead_fd;   /* a descriptor number never open: soft RLIMIT_NOFILE - 1 and below */
extern char *bad;     /* a PROT_NONE page: a buffer the kernel answers EFAULT for */
extern bool rings;    /* ito_io_uring_active() */

#define STEP(s) atomic_store(&last_step, (s))

void report(const struct ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *ename(int e);
long same_(const struct ctx *c, int line, const char *lcs, long r1, int e1, const char *ics, long r2, int e2);

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

void fill(char *b, size_t n, unsigned seed);
char *xmalloc(size_t n);
uint64_t ms_since(uint64_t t0);
/* An unlinked temporary file in /tmp. */
int tmp_fd(void);
/* A temporary file in /tmp that keeps its name (path: 64 bytes). */
int tmp_named(char *path);
/* A fresh unused name under /tmp (path: 64 bytes). */
void tmp_name(char *path, const char *what);
void write_all(int fd, const char *b, size_t n);
void read_all(int fd, char *b, size_t n);
void set_nonblock(int fd, bool on);
/* Twin files must hold the same bytes and stand at the same position. */
void twin_eq_(const struct ctx *c, int line, int fa, int fb);
#define TWIN_EQ(fa, fb) twin_eq_(c, __LINE__, (fa), (fb))

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

void later_start(struct later *l);
void later_join(struct later *l);

#define MS 1000000ull

/* Sockets: a TCP listener on loopback (sa: its address), a client of it. */
int tcp_listener(struct sockaddr_in *sa, int type_flags);
int tcp_client(const struct sockaddr_in *sa);
bool same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b);
/* Two socket pairs of a type: s (ito) and t (libc). */
void pairs(int type, int s[2], int t[2]);
void close4(int s[2], int t[2]);

#endif
