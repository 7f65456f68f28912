/* SPDX-License-Identifier: MIT */
/*
 * I/O calls that park the thread, not the vproc (include/ito/io.h).
 *
 * Each call keeps the exact semantics of its C-library namesake, which
 * io_uring alone does not give: io_uring waits even on a descriptor the
 * application made non-blocking, where the C library returns EAGAIN. So:
 *
 *   1. Try the operation without blocking (RWF_NOWAIT, MSG_DONTWAIT). When it
 *      completes — data was there, the peer had room, an error — that is the
 *      answer, at the cost of one system call like the C library's.
 *   2. It would block. If the descriptor is non-blocking (F_GETFL), make the
 *      plain call: the C library's answer, EAGAIN included. So does a write
 *      that cannot be tried without blocking (EOPNOTSUPP: eventfd), bracketed.
 *   3. Otherwise issue it on the vproc's ring and park (runtime/ring.c).
 *
 * Writes to a blocking pipe or stream socket write everything (POSIX), and so
 * do reads of files and memory devices (reads_fill); a partial try in step 1
 * continues on the ring with the rest. Socket timeouts (SO_RCVTIMEO,
 * SO_SNDTIMEO), which io_uring ignores, become linked timeouts that end the
 * call with EAGAIN (op_end). Calls that have no non-blocking form (accept,
 * connect) decide by F_GETFL first; openat, close and fsync go straight to
 * the ring.
 *
 * A thread of the POSIX face waits on the ring interruptibly (posix/io.c):
 * a signal or a cancellation for it cancels the operation (runtime/ring.c
 * waits until the kernel is done with it), and the call returns what it
 * had transferred, or fails with EINTR if nothing. ito's own threads never
 * wait interruptibly: for them none of these calls fails with EINTR.
 *
 * Foreign kernel threads, and every thread when the rings are off, make the
 * plain system call — inside ito_blocking_begin/end (runtime/carrier.c), so
 * that a call that blocks hands its vproc on. So does the one form io_uring
 * cannot do exactly (recv with MSG_PEEK|MSG_WAITALL).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ito.h>

#include "base/clock.h"
#include "base/libc.h"
#include "api/init.h"
#include "api/poll.h"
#include "runtime/critical.h"
#include "runtime/runtime.h"
#include "runtime/sanitizer.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"
#include "runtime/ring.h"

/* The ring of the calling ito thread's vproc, or NULL: make the plain call. */
static inline struct ito__ring *my_ring(void)
{
    if (ITO_UNLIKELY(!ito__initialized()) && ito__ensure_init())
        return NULL;
    /* The ring of the vproc the thread runs on now; if a time slice moves it
     * before it issues, it issues on that ring from another vproc, which the
     * ring's lock allows. */
    ito__critical_enter();
    struct ito__activation *a = ito__activation_self();
    struct ito__ring *r = a && a->vp->current ? a->vp->ring : NULL;
    ito__critical_exit();
    return r;
}

static ssize_t fail(int e)
{
    ito__errno_set(e);
    return -1;
}

/* errno as the caller had it (read before any switch), put back after a
 * success: the probing calls (the try, F_GETFL, getsockopt) may have changed
 * it, and the C library's calls leave it alone when they succeed. */
static inline long keep_errno(long r, int saved)
{
    if (r >= 0)
        ito__errno_set(saved);
    return r;
}

static inline bool would_block(int e) { return e == EAGAIN || e == EWOULDBLOCK; }

/* F_GETFL: 1 non-blocking, 0 blocking, -1 error (errno set). */
static int nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : (fl & O_NONBLOCK) != 0;
}

/* Lock `ring` and give a free SQE, for the caller to prepare and op_end to
 * issue. */
static struct io_uring_sqe *op_begin(struct ito__ring *ring)
{
    ito__critical_none();
    ito__spin_lock(&ring->lock);
    return ito__ring_sqe(ring);
}

/* Issue the SQE prepared since op_begin, followed by a timeout of `timeout`
 * ns that cancels it (0: none; a socket timeout, which io_uring ignores), and
 * park until it completes. Returns its result: -errno on failure, -EAGAIN if
 * the timeout ended it (the kernel's answer to an expired socket timeout). */
static int op_end(struct ito__ring *ring, struct io_uring_sqe *sqe, uint64_t timeout)
{
    struct ito__io_req req = { .thread = ito__thread_self(), .ring = ring, .pending = 1 };
    io_uring_sqe_set_data(sqe, &req);
    struct __kernel_timespec ts;
    if (timeout) {
        /* Its own completion is not waited for: the kernel copies ts at
         * submission. */
        sqe->flags |= IOSQE_IO_LINK;
        ts = ito__ring_timespec(timeout);
        struct io_uring_sqe *t = ito__ring_sqe(ring);
        io_uring_prep_link_timeout(t, &ts, 0);
        io_uring_sqe_set_data64(t, 0);
    }
    int intr = ito__ring_wait(ring, &req);
    /* Cancelled: ECANCELED, or EINTR for an operation that a kernel worker
     * was running. By an interruption (the POSIX face's threads only), or
     * by the timeout. */
    bool cancelled = req.res == -ECANCELED || req.res == -EINTR;
    if (intr && cancelled)
        return -EINTR;
    if (timeout && cancelled)
        return -EAGAIN;
    return req.res;
}

/* ------------------------------------------------------------ read, write */

/* read(2) and friends clamp the count to this (linux/fs.h MAX_RW_COUNT). */
#define MAX_RW_COUNT ((size_t)(INT_MAX & ~4095))

static size_t iov_total(const struct iovec *iov, int cnt)
{
    size_t n = 0;
    for (int i = 0; i < cnt; i++)
        n += iov[i].iov_len;
    return n;
}

/* Drop the first `done` bytes of iov[0..*cnt) into `out` (room for *cnt). */
static const struct iovec *iov_advance(const struct iovec *iov, int *cnt, size_t done, struct iovec *out)
{
    int i = 0;
    while (i < *cnt && done >= iov[i].iov_len)
        done -= iov[i++].iov_len;
    int k = 0;
    for (; i < *cnt; i++, k++) {
        out[k] = iov[i];
        if (k == 0) {
            out[k].iov_base = (char *)out[k].iov_base + done;
            out[k].iov_len -= done;
        }
    }
    *cnt = k;
    return out;
}

/* The socket's SO_RCVTIMEO or SO_SNDTIMEO in ns (0: none, or not a socket),
 * for op_end. */
static uint64_t sock_timeout(int fd, int opt)
{
    struct timeval tv;
    socklen_t len = sizeof tv;
    if (getsockopt(fd, SOL_SOCKET, opt, &tv, &len) != 0)
        return 0;
    return (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
}

/* Whether a blocking read of fd fills the buffer (files, block devices, and
 * the memory devices — /dev/zero, /dev/urandom: character major 1 — which
 * may stop a non-blocking read early), rather than return what is there
 * (pipes, sockets, packet devices such as tun; terminals never answer
 * RWF_NOWAIT). */
static bool reads_fill(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return false;
    return S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) || (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1);
}

/* Read or write through an iovec at `off` (-1: the file position). */
static ssize_t rw_(bool write, int fd, const struct iovec *iov, int cnt, off_t off)
{
    struct ito__ring *ring = my_ring();
    if (!ring)
        return ITO_BLOCKING(write ? ito__libc_pwritev2(fd, iov, cnt, off, 0)
                                  : ito__libc_preadv2(fd, iov, cnt, off, 0));

    /* 1. Without blocking. */
    ssize_t r = write ? ito__libc_pwritev2(fd, iov, cnt, off, RWF_NOWAIT)
                      : ito__libc_preadv2(fd, iov, cnt, off, RWF_NOWAIT);
    if (r < 0 && !would_block(errno) && errno != EOPNOTSUPP)
        return -1;
    /* A descriptor with no non-blocking write (eventfd, some character
     * devices) would go to one of io_uring's kernel workers, a thread
     * wake-up per write; such writes almost never wait, so make the plain
     * call, bracketed in case this one does. */
    if (r < 0 && write && errno == EOPNOTSUPP)
        return ITO_BLOCKING(ito__libc_pwritev2(fd, iov, cnt, off, 0));
    size_t total = iov_total(iov, cnt);
    size_t done = r > 0 ? (size_t)r : 0;
    if (r >= 0 && (done == total || (!write && (r == 0 || !reads_fill(fd)))))
        return r;   /* complete, end of file, or a short read where short reads are the rule */

    /* 2. A non-blocking descriptor answers like the C library. */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return done ? (ssize_t)done : -1;
    if (fl & O_NONBLOCK) {
        if (done)
            return (ssize_t)done;
        return write ? ito__libc_pwritev2(fd, iov, cnt, off, 0) : ito__libc_preadv2(fd, iov, cnt, off, 0);
    }

    /* 3. Wait on the ring until everything is transferred (writes; reads of
     *    files) or anything is (other reads). A socket is always open for
     *    reading and writing: one end of a pipe, say, has no socket timeout
     *    to look up. */
    uint64_t timeout = (fl & O_ACCMODE) == O_RDWR ? sock_timeout(fd, write ? SO_SNDTIMEO : SO_RCVTIMEO) : 0;
    /* A read goes on only after a try that stopped early (reads_fill above):
     * on the ring the kernel's own blocking read has the C library's answer. */
    bool all = write || done > 0;
    struct iovec *rest = NULL;
    for (;;) {
        int n = cnt;
        const struct iovec *v = iov;
        if (done) {
            if (!rest && !(rest = malloc((size_t)cnt * sizeof *rest)))
                return (ssize_t)done;   /* a short transfer, as after a signal */
            v = iov_advance(iov, &n, done, rest);
        }
        ring = my_ring();   /* the thread may have moved since the last round */
        struct io_uring_sqe *sqe = op_begin(ring);
        off_t at = off < 0 ? -1 : off + (off_t)done;
        if (write)
            io_uring_prep_writev(sqe, fd, v, (unsigned)n, (uint64_t)at);
        else
            io_uring_prep_readv(sqe, fd, v, (unsigned)n, (uint64_t)at);
        int res = op_end(ring, sqe, timeout);
        if (res < 0) {
            free(rest);
            return done ? (ssize_t)done : fail(-res);
        }
        done += (size_t)res;
        if (!all || done == total || res == 0) {
            free(rest);
            return (ssize_t)done;
        }
    }
}

static ssize_t rw(bool write, int fd, const struct iovec *iov, int cnt, off_t off)
{
    int saved = errno;
    return keep_errno(rw_(write, fd, iov, cnt, off), saved);
}

/* Without a ring the single-buffer calls are the plain ones: readv-style
 * calls differ from them on bad buffers (a partial transfer, not EFAULT).
 * So are counts beyond MAX_RW_COUNT, which only a bad buffer or a 2 GiB one
 * can have: read(2) checks such a range as a whole. */
ITO_API ssize_t ito_read(int fd, void *buf, size_t count)
{
    if (!my_ring() || count > MAX_RW_COUNT)
        return ITO_BLOCKING(ito__libc_read(fd, buf, count));
    struct iovec v = { buf, count };
    return rw(false, fd, &v, 1, -1);
}

ITO_API ssize_t ito_write(int fd, const void *buf, size_t count)
{
    if (!my_ring() || count > MAX_RW_COUNT)
        return ITO_BLOCKING(ito__libc_write(fd, buf, count));
    struct iovec v = { (void *)buf, count };
    return rw(true, fd, &v, 1, -1);
}

ITO_API ssize_t ito_pread(int fd, void *buf, size_t count, off_t offset)
{
    if (!my_ring() || offset < 0 || count > MAX_RW_COUNT)
        return ITO_BLOCKING(ito__libc_pread(fd, buf, count, offset));
    struct iovec v = { buf, count };
    return rw(false, fd, &v, 1, offset);
}

ITO_API ssize_t ito_pwrite(int fd, const void *buf, size_t count, off_t offset)
{
    if (!my_ring() || offset < 0 || count > MAX_RW_COUNT)
        return ITO_BLOCKING(ito__libc_pwrite(fd, buf, count, offset));
    struct iovec v = { (void *)buf, count };
    return rw(true, fd, &v, 1, offset);
}

/* A bad iovcnt is reported by the first try (step 1), in the kernel's order
 * of checks (EBADF before EINVAL). */
ITO_API ssize_t ito_readv(int fd, const struct iovec *iov, int iovcnt) { return rw(false, fd, iov, iovcnt, -1); }

ITO_API ssize_t ito_writev(int fd, const struct iovec *iov, int iovcnt) { return rw(true, fd, iov, iovcnt, -1); }

/* ------------------------------------------------------------ sockets */

static bool stream_socket(int fd)
{
    int type = 0;
    socklen_t len = sizeof type;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

/* Receives the kernel never makes wait (an empty error queue, no urgent
 * byte: EAGAIN or EINVAL at once): the plain call, never the ring's, which
 * would wait for one. */
#define NEVER_WAITS (MSG_ERRQUEUE | MSG_OOB)

/* recv or send; like rw, with MSG_DONTWAIT as the try. A send on a stream
 * socket goes on until complete. A recv with MSG_WAITALL (or MSG_PEEK) goes to
 * the ring whole, which implements them. */
static ssize_t sr_(bool send_, int fd, void *buf, size_t len, int flags)
{
    struct ito__ring *ring = my_ring();
    if (!ring || (flags & (MSG_DONTWAIT | NEVER_WAITS)))
        return ITO_BLOCKING(send_ ? ito__libc_send(fd, buf, len, flags) : ito__libc_recv(fd, buf, len, flags));

    size_t done = 0;
    bool whole = !send_ && (flags & (MSG_WAITALL | MSG_PEEK));
    if (!send_ && (flags & MSG_PEEK) && (flags & MSG_WAITALL))
        /* io_uring's MSG_WAITALL retries append what MSG_PEEK saw again:
         * the plain call, as a blocking call. */
        return ITO_BLOCKING(ito__libc_recv(fd, buf, len, flags));
    if (!whole) {
        ssize_t r = send_ ? ito__libc_send(fd, buf, len, flags | MSG_DONTWAIT)
                          : ito__libc_recv(fd, buf, len, flags | MSG_DONTWAIT);
        if (r < 0 && !would_block(errno))
            return -1;
        done = r > 0 ? (size_t)r : 0;
        if (r >= 0 && (done == len || !send_ || !stream_socket(fd)))
            return r;   /* complete, or a send of records, which is never split */
    }

    int nb = nonblocking(fd);
    if (nb != 0) {
        if (done || nb < 0)
            return done ? (ssize_t)done : -1;
        return send_ ? ito__libc_send(fd, buf, len, flags) : ito__libc_recv(fd, buf, len, flags);
    }

    uint64_t timeout = sock_timeout(fd, send_ ? SO_SNDTIMEO : SO_RCVTIMEO);
    if (!send_ && (flags & MSG_WAITALL) && !stream_socket(fd))
        flags &= ~MSG_WAITALL;   /* records are never merged; io_uring's retries would */
    for (;;) {
        ring = my_ring();
        struct io_uring_sqe *sqe = op_begin(ring);
        if (send_)
            io_uring_prep_send(sqe, fd, (char *)buf + done, len - done, flags);
        else
            io_uring_prep_recv(sqe, fd, (char *)buf + done, len - done, flags);
        int res = op_end(ring, sqe, timeout);
        if (res < 0)
            return done ? (ssize_t)done : fail(-res);
        done += (size_t)res;
        if (!send_ || done == len || res == 0)
            return (ssize_t)done;
    }
}

static ssize_t sr(bool send_, int fd, void *buf, size_t len, int flags)
{
    int saved = errno;
    return keep_errno(sr_(send_, fd, buf, len, flags), saved);
}

ITO_API ssize_t ito_recv(int fd, void *buf, size_t len, int flags) { return sr(false, fd, buf, len, flags); }

ITO_API ssize_t ito_send(int fd, const void *buf, size_t len, int flags)
{
    return sr(true, fd, (void *)buf, len, flags);
}

/* recvmsg or sendmsg; like sr_. A sendmsg on a stream socket goes on until
 * every byte is sent, its ancillary data with the first part only; so does
 * a recvmsg with MSG_WAITALL (the ring's own retry stops short where a
 * control buffer is given), its ancillary data and address from the first
 * part. The ring's recvmsg writes back msg_namelen, msg_controllen and
 * msg_flags as recvmsg(2) does. */
static ssize_t msg_(bool send_, int fd, struct msghdr *msg, int flags)
{
    struct ito__ring *ring = my_ring();
    if (!ring || (flags & (MSG_DONTWAIT | NEVER_WAITS)) || !msg || (msg->msg_iovlen && !msg->msg_iov) ||
        (!send_ && (flags & (MSG_PEEK | MSG_WAITALL)) == (MSG_PEEK | MSG_WAITALL)))
        return ITO_BLOCKING(send_ ? ito__libc_sendmsg(fd, msg, flags) : ito__libc_recvmsg(fd, msg, flags));

    size_t done = 0;
    bool whole = !send_ && (flags & (MSG_WAITALL | MSG_PEEK));
    if (!whole) {
        /* (A try that would block writes nothing back.) */
        ssize_t r = send_ ? ito__libc_sendmsg(fd, msg, flags | MSG_DONTWAIT)
                          : ito__libc_recvmsg(fd, msg, flags | MSG_DONTWAIT);
        if (r < 0 && !would_block(errno))
            return -1;
        done = r > 0 ? (size_t)r : 0;
        if (r >= 0 && (!send_ || done == iov_total(msg->msg_iov, (int)msg->msg_iovlen) || !stream_socket(fd)))
            return r;
    }

    int nb = nonblocking(fd);
    if (nb != 0) {
        if (done || nb < 0)
            return done ? (ssize_t)done : -1;
        return send_ ? ito__libc_sendmsg(fd, msg, flags) : ito__libc_recvmsg(fd, msg, flags);
    }

    uint64_t timeout = sock_timeout(fd, send_ ? SO_SNDTIMEO : SO_RCVTIMEO);
    bool stream = stream_socket(fd);
    if (!send_ && (flags & MSG_WAITALL) && !stream)
        flags &= ~MSG_WAITALL;   /* records are never merged; io_uring's retries would */
    bool all = send_ || (flags & MSG_WAITALL);   /* (and stream: see above) */
    size_t total = 0;   /* (counted once the kernel has taken the iovec: a bad one is its to report) */
    struct msghdr part = *msg;
    struct iovec *rest = NULL;
    for (;;) {
        struct msghdr *m = msg;
        if (done) {   /* the rest, without the ancillary data and address of the first part */
            if (!rest && !(rest = malloc(msg->msg_iovlen * sizeof *rest)))
                return (ssize_t)done;   /* a short transfer, as after a signal */
            int n = (int)msg->msg_iovlen;
            part.msg_iov = (struct iovec *)iov_advance(msg->msg_iov, &n, done, rest);
            part.msg_iovlen = (size_t)n;
            part.msg_control = NULL;
            part.msg_controllen = 0;
            part.msg_name = NULL;
            part.msg_namelen = 0;
            m = &part;
        }
        ring = my_ring();
        struct io_uring_sqe *sqe = op_begin(ring);
        if (send_)
            io_uring_prep_sendmsg(sqe, fd, m, (unsigned)flags);
        else
            io_uring_prep_recvmsg(sqe, fd, m, (unsigned)flags);
        int res = op_end(ring, sqe, timeout);
        if (res < 0) {
            free(rest);
            return done ? (ssize_t)done : fail(-res);
        }
        done += (size_t)res;
        if (all && !total)
            total = iov_total(msg->msg_iov, (int)msg->msg_iovlen);
        if (!all || done >= total || res == 0) {
            free(rest);
            return (ssize_t)done;
        }
    }
}

ITO_API ssize_t ito_recvmsg(int fd, struct msghdr *msg, int flags)
{
    int saved = errno;
    return keep_errno(msg_(false, fd, msg, flags), saved);
}

ITO_API ssize_t ito_sendmsg(int fd, const struct msghdr *msg, int flags)
{
    int saved = errno;
    return keep_errno(msg_(true, fd, (struct msghdr *)msg, flags), saved);
}

static int accept_(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags)
{
    struct ito__ring *ring = my_ring();
    int nb = ring ? nonblocking(fd) : 1;
    if (nb < 0)
        return -1;
    if (nb)
        return ITO_BLOCKING(ito__libc_accept4(fd, addr, addrlen, flags));
    uint64_t timeout = sock_timeout(fd, SO_RCVTIMEO);
    struct io_uring_sqe *sqe = op_begin(ring);
    io_uring_prep_accept(sqe, fd, addr, addrlen, flags);
    int res = op_end(ring, sqe, timeout);
    return res < 0 ? (int)fail(-res) : res;
}

static int connect_(int fd, const struct sockaddr *addr, socklen_t addrlen)
{
    struct ito__ring *ring = my_ring();
    int nb = ring ? nonblocking(fd) : 1;
    if (nb < 0)
        return -1;
    if (nb)
        return ring ? ito__libc_connect(fd, addr, addrlen) : ITO_BLOCKING(ito__libc_connect(fd, addr, addrlen));
    uint64_t timeout = sock_timeout(fd, SO_SNDTIMEO);
    struct io_uring_sqe *sqe = op_begin(ring);
    io_uring_prep_connect(sqe, fd, addr, addrlen);
    int res = op_end(ring, sqe, timeout);
    if (timeout && res == -EAGAIN) {
        /* SO_SNDTIMEO expired: the kernel's connect(2) then answers
         * EINPROGRESS for TCP (the handshake goes on) and EAGAIN for a Unix
         * socket (the listener's backlog stayed full). */
        int domain = 0;
        socklen_t len = sizeof domain;
        getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len);
        res = domain == AF_UNIX ? -EAGAIN : -EINPROGRESS;
    }
    return res < 0 ? (int)fail(-res) : 0;
}

ITO_API int ito_accept(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags)
{
    int saved = errno;
    return (int)keep_errno(accept_(fd, addr, addrlen, flags), saved);
}

ITO_API int ito_connect(int fd, const struct sockaddr *addr, socklen_t addrlen)
{
    int saved = errno;
    return (int)keep_errno(connect_(fd, addr, addrlen), saved);
}

/* ------------------------------------------------------------ poll */

/* Wait on the ring until one of fds may be ready or the deadline passes:
 * one POLL_ADD per descriptor and a TIMEOUT, all pointing at one request; the
 * first completion cancels the rest (ring.c, cancel_rest), and the thread
 * wakes when all have completed — never while the kernel may still write
 * into its stack. */
static int poll_wait(struct ito__ring *ring, const struct pollfd *fds, nfds_t nfds, uint64_t deadline)
{
    struct ito__io_req req = { .thread = ito__thread_self(), .ring = ring };
    req.cancel_rest = true;
    struct __kernel_timespec ts;
    ito__critical_none();
    ito__spin_lock(&ring->lock);
    for (nfds_t i = 0; i < nfds; i++) {
        if (fds[i].fd < 0)
            continue;
        struct io_uring_sqe *sqe = ito__ring_sqe(ring);
        /* POLLERR, POLLHUP and POLLNVAL are always reported. */
        io_uring_prep_poll_add(sqe, fds[i].fd, (unsigned)(uint16_t)fds[i].events);
        io_uring_sqe_set_data(sqe, &req);
        req.pending++;
    }
    if (deadline) {
        uint64_t now = ito__now_ns();
        ts = ito__ring_timespec(deadline > now ? deadline - now : 0);
        struct io_uring_sqe *sqe = ito__ring_sqe(ring);
        io_uring_prep_timeout(sqe, &ts, 0, 0);
        io_uring_sqe_set_data(sqe, &req);
        req.pending++;
    }
    return ito__ring_wait(ring, &req);   /* unlocks */
}

ITO_API int ito_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms)
{
    if (!my_ring() || timeout_ms == 0)
        return ITO_BLOCKING(ito__libc_poll(fds, nfds, timeout_ms));
    return ito__poll_until(fds, nfds, timeout_ms < 0 ? 0 : ito__now_ns() + (uint64_t)timeout_ms * 1000000u);
}

int ito__poll_until(struct pollfd *fds, nfds_t nfds, uint64_t deadline)
{
    if (!my_ring()) {
        /* The plain call, its timeout in ms rounded up. */
        uint64_t now = ito__now_ns(), left = deadline > now ? deadline - now : 0;
        int ms = !deadline ? -1 : left / 1000000u >= INT_MAX ? INT_MAX : (int)((left + 999999u) / 1000000u);
        return ITO_BLOCKING(ito__libc_poll(fds, nfds, ms));
    }
    for (;;) {
        /* The answer always comes from poll itself: exact revents. A poll
         * that waits for nothing still ends with EINTR when a signal comes
         * during the system call — ito's own poke (the monitor or a policy
         * asking this vproc to look or give way) most often: nothing was
         * ready yet, as far as this call is concerned. */
        int r = ito__libc_poll(fds, nfds, 0);
        if (r < 0 && errno == EINTR)
            r = 0;
        if (r != 0)
            return r;
        if (deadline && ito__now_ns() >= deadline)
            return 0;
        bool any = false;
        for (nfds_t i = 0; i < nfds && !any; i++)
            any = fds[i].fd >= 0;
        if (!any) {
            /* Nothing to watch: a sleep (forever: until the process ends). */
            if (ito__sleep_until(deadline) == EINTR)
                return (int)fail(EINTR);
            if (deadline)
                return 0;
            continue;
        }
        if (poll_wait(my_ring(), fds, nfds, deadline) == EINTR) {
            /* Interrupted (the POSIX face's threads only): what is ready
             * now, or EINTR. */
            r = ito__libc_poll(fds, nfds, 0);
            return r != 0 ? r : (int)fail(EINTR);
        }
    }
}

/* ------------------------------------------------------------ files */

ITO_API int ito_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    struct ito__ring *ring = my_ring();
    if (!ring)
        return ITO_BLOCKING(openat(dirfd, path, flags, mode));
    struct io_uring_sqe *sqe = op_begin(ring);
    io_uring_prep_openat(sqe, dirfd, path, flags, mode);
    /* In a kernel worker from the start: io_uring's first, non-blocking try
     * would open a FIFO as if O_NONBLOCK were given. */
    sqe->flags |= IOSQE_ASYNC;
    int res = op_end(ring, sqe, 0);
    return res < 0 ? (int)fail(-res) : res;
}

ITO_API int ito_close(int fd)
{
    struct ito__ring *ring = my_ring();
    if (!ring || ITO_TSAN_BUILD)
        /* ThreadSanitizer must see the close (its interceptor forgets the
         * descriptor's history), or it reports races on a reused number. */
        return ITO_BLOCKING(close(fd));
    struct io_uring_sqe *sqe = op_begin(ring);
    io_uring_prep_close(sqe, fd);
    int res = op_end(ring, sqe, 0);
    return res < 0 ? (int)fail(-res) : 0;
}

ITO_API int ito_fsync(int fd)
{
    struct ito__ring *ring = my_ring();
    if (!ring)
        return ITO_BLOCKING(fsync(fd));
    struct io_uring_sqe *sqe = op_begin(ring);
    io_uring_prep_fsync(sqe, fd, 0);
    int res = op_end(ring, sqe, 0);
    return res < 0 ? (int)fail(-res) : 0;
}

ITO_API bool ito_io_uring_active(void)
{
    return ito__ensure_init() == 0 && ito__rings_on;
}
