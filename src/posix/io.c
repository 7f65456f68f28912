/* SPDX-License-Identifier: MIT */
/*
 * Blocking I/O in code nobody annotated: read, write, recv, send, accept,
 * connect, poll, select and their kin.
 *
 * The C library's versions block in the kernel, and the kernel thread with
 * them: the vproc runs nothing else until the monitor notices the carrier
 * is blocked and hands the vproc to a spare (runtime/carrier.c) — a kernel
 * thread per blocked call, and a tick of lost time each. On an ito thread
 * these calls are ito's own I/O calls (api/io.c): tried at once without
 * blocking, and when they would block, issued on the vproc's io_uring ring
 * while the thread parks; thousands of threads can wait in them on a
 * handful of kernel threads. Their answers are the C library's (errors,
 * short counts, EAGAIN on a non-blocking descriptor, socket timeouts).
 *
 * What the kernel's blocking call does besides, these do too:
 *   - They are cancellation points (posix/cancel.c): the wait is
 *     interruptible, a cancellation ends it and the thread unwinds.
 *   - A signal sent to the thread interrupts the wait (posix/signal.c). The
 *     ring's operation is cancelled — unless it completed first, and then
 *     its result is returned, data is never lost — and the handler runs.
 *     Then, as signal(7) says of the kernel's calls: the call starts again
 *     if every handler that ran had SA_RESTART and the call is one the
 *     kernel restarts (reads, writes, recv, send, accept); it fails with
 *     EINTR otherwise, and always for poll and select. A call that had
 *     transferred part of its data returns that count instead. connect
 *     fails with EINTR whatever the handler's flags, as POSIX specifies; the
 *     connection goes on (Linux would restart it under SA_RESTART).
 *   - select is poll on the descriptors of its sets; recvfrom and sendto
 *     with an address are recvmsg and sendmsg with one buffer; ppoll and
 *     pselect are poll and select to the ns, their signal mask the
 *     thread's while they wait.
 *
 * What stays the C library's: a kernel thread ito did not create, and the
 * initial thread before ito has started (a program that never makes a
 * thread pays nothing); every thread when the rings are off (ITO_IO_URING=0,
 * valgrind, an old kernel): then a call that blocks is a carrier asleep
 * outside any bracket (it stays interruptible by the thread's signals),
 * whose vproc the monitor takes (runtime/carrier.c), and the call's return
 * is a safe point where the thread leaves a kernel thread so robbed
 * (LIBC_CALL); select on descriptors beyond FD_SETSIZE — a blocking call
 * of those is a blocked carrier too. So is epoll_wait, on purpose: an
 * event loop's one thread that waits in the kernel costs less than a round
 * trip through the ring (parked on the epoll descriptor, redis-server under
 * redis-benchmark served a request in 42-43 us against 26-28 us on the C
 * library's threads, 2-CPU machine). The kernel ends poll, select and
 * epoll waits with EINTR at any handler, ito's own pokes included, and
 * never restarts them: on an ito thread those waits go through
 * posix/kernel_wait.c, which waits again after an EINTR that no handler of
 * the program's caused. Calls made inside the C library itself (stdio's
 * reads and writes) never come here.
 *
 * A signal handler may call these (read and write are async-signal-safe):
 * on a descriptor that is ready they make one system call, as the C
 * library's; one that would block parks the thread the handler interrupted
 * — or, if the handler interrupted ito's own code (a critical section: it
 * may hold a ring's lock), is the system call itself, which blocks its
 * kernel thread and is no cancellation point (the C library's would act on
 * a pending cancellation by unwinding through ito's frames).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <limits.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ito.h>

#include "api/poll.h"
#include "base/libc.h"
#include "posix/posix.h"
#include "runtime/critical.h"
#include "runtime/ring.h"
#include "runtime/sigmask.h"
#include "runtime/thread.h"
#include "runtime/vproc.h"

/* glibc declares the socket calls' address arguments as transparent
 * unions (with _GNU_SOURCE, which ito is built with): the pointer inside. */
#define ADDR(a) ((a).__sockaddr__)

/* Whether the caller's blocking I/O goes through ito's calls: an ito thread,
 * with the rings on. */
static inline bool parks(void) { return ito__thread_self() && ito__rings_on; }

/* Inside ito's own code (a signal handler that interrupted it, on any
 * kernel thread: it may hold a ring's lock): the system call itself —
 * neither parking nor the C library's call, a cancellation point that would
 * unwind through ito's frames. */
static inline bool in_ito(void) { return ITO_UNLIKELY(ito__critical_depth() > 0); }
/* (In libito-pthread base/libc.h's ito__libc_* are those system calls.) */

/* The C library's call `name` (of symbol version `version`) with args, for
 * a thread that does not park: then a safe point (runtime/critical.h). With
 * the rings off an ito thread sleeps in these calls outside any section,
 * and the monitor may take its vproc meanwhile (runtime/carrier.c): the
 * thread is given up as the call returns, its result and errno kept. */
#define LIBC_CALL(name, version, ...)                                                   \
    ({                                                                                  \
        __auto_type r_ = ITO__POSIX_LIBC(name, version)(__VA_ARGS__);                   \
        returned();                                                                     \
        r_;                                                                             \
    })

static inline void returned(void)
{
    if (ITO_UNLIKELY(ito__arch_critical_get() == ITO__CRITICAL_ATTENTION)) {
        int e = errno;
        ito__critical_point();
        errno = e;   /* (the thread's, wherever it runs now) */
    }
}

enum restart { RESTARTS, NEVER_RESTARTS };

/* Whether fd is a socket with a timeout for `opt` (SO_RCVTIMEO or
 * SO_SNDTIMEO): then a call on it that a signal interrupts is never
 * restarted (signal(7)). */
static bool timed_socket(int fd, int opt)
{
    struct timeval tv = { 0, 0 };
    socklen_t len = sizeof tv;
    return opt && getsockopt(fd, SOL_SOCKET, opt, &tv, &len) == 0 && (tv.tv_sec || tv.tv_usec);
}

/* After one try of a call made as a cancellation point (cp from
 * ito__posix_cp_enter): true if the call must be made again (interrupted by
 * handlers that all had SA_RESTART, or by nothing), with errno as the caller
 * had it (e0); otherwise *r is the answer, with errno. fd and opt: the
 * socket timeout that forbids a restart. */
static bool again(void *cp, ssize_t *r, enum restart restart, int fd, int opt, int e0)
{
    bool intr = *r < 0 && errno == EINTR;
    int saved = errno;
    int c = ito__posix_cp_leave(cp, intr ? EINTR : 0);
    if (!intr) {
        errno = saved;   /* (a handler that ran may have changed it) */
        return false;
    }
    if (c == ITO__CP_AGAIN || (c == ITO__CP_RESTART && restart == RESTARTS && !timed_socket(fd, opt))) {
        errno = e0;
        return true;
    }
    errno = EINTR;
    return false;
}

/* The body of each call: `expr` (an ito call) as a cancellation point,
 * again while `again` says so. */
#define PARKING_CALL(restart, fd, opt, expr)                                            \
    int e0_ = errno;                                                                    \
    for (;;) {                                                                          \
        void *cp_ = ito__posix_cp_enter();                                              \
        ssize_t r_ = (expr);                                                            \
        if (!again(cp_, &r_, restart, fd, opt, e0_))                                    \
            return r_;                                                                  \
    }

/* Counts beyond what one read or write transfers (linux/fs.h MAX_RW_COUNT):
 * only a bad buffer or one of 2 GiB has them, and the C library's call
 * judges them (ito's makes the plain call, uninterruptibly). */
#define MAX_RW_COUNT ((size_t)(INT_MAX & ~4095))

ITO_POSIX_API ssize_t read(int fd, void *buf, size_t n)
{
    if (in_ito())
        return ito__libc_read(fd, buf, n);
    if (!parks() || n > MAX_RW_COUNT)
        return LIBC_CALL(read, "GLIBC_2.2.5", fd, buf, n);
    PARKING_CALL(RESTARTS, fd, SO_RCVTIMEO, ito_read(fd, buf, n));
}

ITO_POSIX_API ssize_t write(int fd, const void *buf, size_t n)
{
    if (in_ito())
        return ito__libc_write(fd, buf, n);
    if (!parks() || n > MAX_RW_COUNT)
        return LIBC_CALL(write, "GLIBC_2.2.5", fd, buf, n);
    PARKING_CALL(RESTARTS, fd, SO_SNDTIMEO, ito_write(fd, buf, n));
}

ITO_POSIX_API ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    if (in_ito())
        return ito__libc_pread(fd, buf, n, off);
    if (!parks() || n > MAX_RW_COUNT)
        return LIBC_CALL(pread, "GLIBC_2.2.5", fd, buf, n, off);
    PARKING_CALL(RESTARTS, fd, 0, ito_pread(fd, buf, n, off));
}

ITO_POSIX_API ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    if (in_ito())
        return ito__libc_pwrite(fd, buf, n, off);
    if (!parks() || n > MAX_RW_COUNT)
        return LIBC_CALL(pwrite, "GLIBC_2.2.5", fd, buf, n, off);
    PARKING_CALL(RESTARTS, fd, 0, ito_pwrite(fd, buf, n, off));
}

/* The names programs built with 64-bit file offsets call (the same
 * functions on a 64-bit system). */
ITO_POSIX_API ssize_t pread64(int fd, void *buf, size_t n, off_t off) { return pread(fd, buf, n, off); }
ITO_POSIX_API ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) { return pwrite(fd, buf, n, off); }

/* Programs built with _FORTIFY_SOURCE call these: the C library's checks
 * (a count beyond the buffer ends the program), then the call. */
void __chk_fail(void) __attribute__((noreturn));
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, __SOCKADDR_ARG addr, socklen_t *len);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout_ms, size_t fdslen);

ITO_POSIX_API ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    if (n > buflen)
        __chk_fail();
    return read(fd, buf, n);
}

ITO_POSIX_API ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    if (n > buflen)
        __chk_fail();
    return pread(fd, buf, n, off);
}

ITO_POSIX_API ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    return __pread_chk(fd, buf, n, off, buflen);
}

ITO_POSIX_API ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    if (in_ito())
        return ito__libc_preadv2(fd, iov, cnt, -1, 0);
    if (!parks())
        return LIBC_CALL(readv, "GLIBC_2.2.5", fd, iov, cnt);
    PARKING_CALL(RESTARTS, fd, SO_RCVTIMEO, ito_readv(fd, iov, cnt));
}

ITO_POSIX_API ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    if (in_ito())
        return ito__libc_pwritev2(fd, iov, cnt, -1, 0);
    if (!parks())
        return LIBC_CALL(writev, "GLIBC_2.2.5", fd, iov, cnt);
    PARKING_CALL(RESTARTS, fd, SO_SNDTIMEO, ito_writev(fd, iov, cnt));
}

/* recv with both MSG_PEEK and MSG_WAITALL: the one form ito's recv makes as
 * a plain call (api/io.c); the C library's is interruptible. */
#define PEEK_ALL (MSG_PEEK | MSG_WAITALL)

ITO_POSIX_API ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    if (in_ito())
        return ito__libc_recv(fd, buf, n, flags);
    if (!parks() || (flags & PEEK_ALL) == PEEK_ALL)
        return LIBC_CALL(recv, "GLIBC_2.2.5", fd, buf, n, flags);
    PARKING_CALL(RESTARTS, fd, SO_RCVTIMEO, ito_recv(fd, buf, n, flags));
}

ITO_POSIX_API ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    if (n > buflen)
        __chk_fail();
    return recv(fd, buf, n, flags);
}

ITO_POSIX_API ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    if (in_ito())
        return ito__libc_send(fd, buf, n, flags);
    if (!parks())
        return LIBC_CALL(send, "GLIBC_2.2.5", fd, buf, n, flags);
    PARKING_CALL(RESTARTS, fd, SO_SNDTIMEO, ito_send(fd, buf, n, flags));
}

ITO_POSIX_API ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    if (in_ito())
        return ito__libc_recvmsg(fd, msg, flags);
    if (!parks() || !msg || (flags & PEEK_ALL) == PEEK_ALL)
        return LIBC_CALL(recvmsg, "GLIBC_2.2.5", fd, msg, flags);
    PARKING_CALL(RESTARTS, fd, SO_RCVTIMEO, ito_recvmsg(fd, msg, flags));
}

ITO_POSIX_API ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    if (in_ito())
        return ito__libc_sendmsg(fd, msg, flags);
    if (!parks() || !msg)
        return LIBC_CALL(sendmsg, "GLIBC_2.2.5", fd, msg, flags);
    PARKING_CALL(RESTARTS, fd, SO_SNDTIMEO, ito_sendmsg(fd, msg, flags));
}

/* recvfrom with an address is recvmsg with one buffer and msg_name; the
 * address's length comes back as recvfrom(2) gives it (the whole length,
 * also when the address was cut short). */
static ssize_t recv_from(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *len)
{
    struct iovec v = { buf, n };
    struct msghdr m = { .msg_name = addr, .msg_namelen = *len, .msg_iov = &v, .msg_iovlen = 1 };
    ssize_t r = ito_recvmsg(fd, &m, flags);
    if (r >= 0)
        *len = m.msg_namelen;
    return r;
}

static ssize_t send_to(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t len)
{
    struct iovec v = { (void *)buf, n };
    struct msghdr m = { .msg_name = (void *)addr, .msg_namelen = len, .msg_iov = &v, .msg_iovlen = 1 };
    return ito_sendmsg(fd, &m, flags);
}

/* Without an address these are recv and send. An address without its
 * length (EFAULT, or a length the kernel ignores) is the C library's to
 * judge. */
ITO_POSIX_API ssize_t recvfrom(int fd, void *buf, size_t n, int flags, __SOCKADDR_ARG addr, socklen_t *len)
{
    if (in_ito())
        return syscall(SYS_recvfrom, fd, buf, n, flags, ADDR(addr), len);
    if (!parks() || (flags & PEEK_ALL) == PEEK_ALL || (ADDR(addr) && (!len || (int)*len < 0)) || n > MAX_RW_COUNT)
        return LIBC_CALL(recvfrom, "GLIBC_2.2.5", fd, buf, n, flags, addr, len);
    if (ADDR(addr)) {
        PARKING_CALL(RESTARTS, fd, SO_RCVTIMEO, recv_from(fd, buf, n, flags, ADDR(addr), len));
    }
    PARKING_CALL(RESTARTS, fd, SO_RCVTIMEO, ito_recv(fd, buf, n, flags));
}

ITO_POSIX_API ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, __SOCKADDR_ARG addr,
                                     socklen_t *len)
{
    if (n > buflen)
        __chk_fail();
    return recvfrom(fd, buf, n, flags, addr, len);
}

ITO_POSIX_API ssize_t sendto(int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG addr, socklen_t len)
{
    if (in_ito())
        return syscall(SYS_sendto, fd, buf, n, flags, ADDR(addr), len);
    if (!parks() || n > MAX_RW_COUNT)
        return LIBC_CALL(sendto, "GLIBC_2.2.5", fd, buf, n, flags, addr, len);
    if (ADDR(addr)) {
        PARKING_CALL(RESTARTS, fd, SO_SNDTIMEO, send_to(fd, buf, n, flags, ADDR(addr), len));
    }
    PARKING_CALL(RESTARTS, fd, SO_SNDTIMEO, ito_send(fd, buf, n, flags));
}

ITO_POSIX_API int accept4(int fd, __SOCKADDR_ARG addr, socklen_t *len, int flags)
{
    if (in_ito())
        return ito__libc_accept4(fd, ADDR(addr), len, flags);
    if (!parks())
        return LIBC_CALL(accept4, "GLIBC_2.10", fd, addr, len, flags);
    PARKING_CALL(RESTARTS, fd, SO_RCVTIMEO, ito_accept(fd, ADDR(addr), len, flags));
}

ITO_POSIX_API int accept(int fd, __SOCKADDR_ARG addr, socklen_t *len)
{
    if (in_ito())
        return ito__libc_accept4(fd, ADDR(addr), len, 0);
    if (!parks())
        return LIBC_CALL(accept, "GLIBC_2.2.5", fd, addr, len);
    PARKING_CALL(RESTARTS, fd, SO_RCVTIMEO, ito_accept(fd, ADDR(addr), len, 0));
}

ITO_POSIX_API int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len)
{
    if (in_ito())
        return ito__libc_connect(fd, ADDR(addr), len);
    if (!parks())
        return LIBC_CALL(connect, "GLIBC_2.2.5", fd, addr, len);
    PARKING_CALL(NEVER_RESTARTS, fd, 0, ito_connect(fd, ADDR(addr), len));
}

/* A timeout's deadline: 0 for none (wait for ever). */
static uint64_t deadline_in(uint64_t ns)
{
    return ns >= UINT64_MAX / 2 ? 0 : ito_now_ns() + ns;   /* (0 ns: now, already past) */
}

/* The waits of poll and select on an ito thread that does not park (the
 * rings are off; for select, also sets beyond what poll is given): the C
 * library's system call, made again after an EINTR of ito's own
 * (posix/kernel_wait.c), until `deadline` (0: for ever). */
static uint64_t kernel_deadline(uint64_t deadline) { return deadline ? deadline : ITO__POSIX_NO_DEADLINE; }

struct poll_args {
    struct pollfd *fds;
    nfds_t n;
};

static int poll_once(void *arg, const sigset_t *mask, uint64_t deadline)
{
    struct poll_args *a = arg;
    struct timespec ts;
    return ITO__POSIX_LIBC(ppoll, "GLIBC_2.4")(a->fds, a->n, ito__posix_time_left(deadline, &ts), mask);
}

static int poll_in_kernel(struct pollfd *fds, nfds_t n, uint64_t deadline)
{
    struct poll_args a = { fds, n };
    return ito__posix_kernel_wait(poll_once, &a, kernel_deadline(deadline));
}

struct select_args {
    int n;
    fd_set *rd, *wr, *ex;
};

static int select_once(void *arg, const sigset_t *mask, uint64_t deadline)
{
    struct select_args *a = arg;
    struct timespec ts;
    /* (On EINTR the kernel leaves the sets as they were: the next try
     * waits on the same ones.) */
    return ITO__POSIX_LIBC(pselect, "GLIBC_2.2.5")(a->n, a->rd, a->wr, a->ex, ito__posix_time_left(deadline, &ts),
                                                   mask);
}

static int select_in_kernel(int n, fd_set *rd, fd_set *wr, fd_set *ex, uint64_t deadline)
{
    struct select_args a = { n, rd, wr, ex };
    return ito__posix_kernel_wait(select_once, &a, kernel_deadline(deadline));
}

ITO_POSIX_API int poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
    if (in_ito())
        return ito__libc_poll(fds, n, timeout_ms);
    if (!parks() && (timeout_ms == 0 || !ito__thread_self()))
        return LIBC_CALL(poll, "GLIBC_2.2.5", fds, n, timeout_ms);
    if (!parks())
        return poll_in_kernel(fds, n, timeout_ms < 0 ? 0 : deadline_in((uint64_t)timeout_ms * 1000000u));
    PARKING_CALL(NEVER_RESTARTS, -1, 0, ito_poll(fds, n, timeout_ms));
}

ITO_POSIX_API int __poll_chk(struct pollfd *fds, nfds_t n, int timeout_ms, size_t fdslen)
{
    if (fdslen / sizeof *fds < n)
        __chk_fail();
    return poll(fds, n, timeout_ms);
}

/* select, as poll: one pollfd per descriptor named in a set; the kernel's
 * own mapping of poll's events back onto the sets (fs/select.c: readable
 * also on a hang-up or an error, writable also on an error, exceptional on
 * POLLPRI). Errors as select's: EBADF for a descriptor that is not open
 * (found by the first look, before any wait). */
#define SELECT_IN (POLLIN | POLLRDNORM | POLLRDBAND | POLLHUP | POLLERR)
#define SELECT_OUT (POLLOUT | POLLWRNORM | POLLWRBAND | POLLERR)

/* select's work until `deadline` (ito_now_ns's clock; 0: for ever). */
static int select_until(int n, fd_set *rd, fd_set *wr, fd_set *ex, uint64_t deadline)
{
    struct pollfd p[FD_SETSIZE];
    nfds_t k = 0;
    for (int fd = 0; fd < n; fd++) {
        short ev = (short)((rd && FD_ISSET(fd, rd) ? POLLIN : 0) | (wr && FD_ISSET(fd, wr) ? POLLOUT : 0) |
                           (ex && FD_ISSET(fd, ex) ? POLLPRI : 0));
        if (ev)
            p[k++] = (struct pollfd){ .fd = fd, .events = ev };
    }
    int r = ito__poll_until(p, k, deadline);
    if (r < 0)
        return r;   /* EINTR (the sets are left as they were, as the kernel leaves them) */
    int count = 0;
    for (nfds_t i = 0; i < k; i++) {
        if (p[i].revents & POLLNVAL) {
            errno = EBADF;
            return -1;
        }
    }
    for (nfds_t i = 0; i < k; i++) {
        int fd = p[i].fd;
        short got = p[i].revents;
        if (rd && FD_ISSET(fd, rd) && !(got & SELECT_IN))
            FD_CLR(fd, rd);
        if (wr && FD_ISSET(fd, wr) && !(got & SELECT_OUT))
            FD_CLR(fd, wr);
        if (ex && FD_ISSET(fd, ex) && !(got & POLLPRI))
            FD_CLR(fd, ex);
        count += (rd && FD_ISSET(fd, rd)) + (wr && FD_ISSET(fd, wr)) + (ex && FD_ISSET(fd, ex));
    }
    return count;
}

typedef int select_wait_fn(int n, fd_set *rd, fd_set *wr, fd_set *ex, uint64_t deadline);

/* select with a timeval, waiting by `wait`. */
static int select_timed(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv, select_wait_fn *wait)
{
    uint64_t ns = !tv ? UINT64_MAX
                : (uint64_t)tv->tv_sec >= UINT64_MAX / 2000000000u
                      ? UINT64_MAX
                      : (uint64_t)tv->tv_sec * 1000000000u + (uint64_t)tv->tv_usec * 1000u;
    uint64_t deadline = deadline_in(ns);
    int r = wait(n, rd, wr, ex, deadline);
    int e = errno;
    if (tv && deadline && (r >= 0 || e == EINTR)) {
        /* Linux's select leaves the time that was left in the timeout (also
         * when a signal ended it). */
        uint64_t now = ito_now_ns(), left = deadline > now ? deadline - now : 0;
        tv->tv_sec = (time_t)(left / 1000000000u);
        tv->tv_usec = (suseconds_t)(left % 1000000000u / 1000u);
    }
    errno = e;
    return r;
}

ITO_POSIX_API int select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
    if (in_ito())
        return (int)syscall(SYS_select, n, rd, wr, ex, tv);
    /* What select itself must judge (a negative count, a bad timeout) or
     * that does not wait (a zero timeout) is the C library's. */
    if (!ito__thread_self() || n < 0 ||
        (tv && (tv->tv_sec < 0 || tv->tv_usec < 0 || tv->tv_usec >= 1000000 || (!tv->tv_sec && !tv->tv_usec))))
        return LIBC_CALL(select, "GLIBC_2.2.5", n, rd, wr, ex, tv);
    if (!parks() || n > FD_SETSIZE)
        return select_timed(n, rd, wr, ex, tv, select_in_kernel);
    PARKING_CALL(NEVER_RESTARTS, -1, 0, select_timed(n, rd, wr, ex, tv, select_until));
}

/* A timespec timeout's length in ns (UINT64_MAX: none); false if invalid. */
static bool timeout_ns(const struct timespec *ts, uint64_t *ns)
{
    if (!ts) {
        *ns = UINT64_MAX;
        return true;
    }
    if (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L)
        return false;
    *ns = (uint64_t)ts->tv_sec >= UINT64_MAX / 2000000000u ? UINT64_MAX
                                                           : (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
    return true;
}

static int poll_parked(struct pollfd *fds, nfds_t n, uint64_t deadline)
{
    PARKING_CALL(NEVER_RESTARTS, -1, 0, ito__poll_until(fds, n, deadline));
}

static int select_parked_until(int n, fd_set *rd, fd_set *wr, fd_set *ex, uint64_t deadline)
{
    PARKING_CALL(NEVER_RESTARTS, -1, 0, select_until(n, rd, wr, ex, deadline));
}

/* ppoll and pselect: poll and select to the ns, with a mask as above. A
 * zero timeout without a mask does not wait: the C library's. */
ITO_POSIX_API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
    uint64_t ns;
    if (in_ito()) {
        struct timespec copy, *t = tmo ? (copy = *tmo, &copy) : NULL;   /* (the system call writes it) */
        return (int)syscall(SYS_ppoll, fds, n, t, mask, _NSIG / 8);
    }
    uint64_t old;
    if (!ito__thread_self() || !timeout_ns(tmo, &ns) || (!mask && ns == 0))
        return LIBC_CALL(ppoll, "GLIBC_2.4", fds, n, tmo, mask);
    uint64_t deadline = deadline_in(ns);
    int (*wait)(struct pollfd *, nfds_t, uint64_t) = parks() ? poll_parked : poll_in_kernel;
    if (!mask)
        return wait(fds, n, deadline);
    int r = ito__posix_mask_begin(mask, &old) ? -1 : wait(fds, n, deadline);
    return ito__posix_mask_end(old, r);
}

int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask, size_t fdslen);
ITO_POSIX_API int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask,
                              size_t fdslen)
{
    if (fdslen / sizeof *fds < n)
        __chk_fail();
    return ppoll(fds, n, tmo, mask);
}

ITO_POSIX_API int pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *tmo,
                          const sigset_t *mask)
{
    uint64_t ns;
    if (in_ito()) {
        struct timespec copy, *t = tmo ? (copy = *tmo, &copy) : NULL;
        struct {
            const sigset_t *ss;
            size_t len;
        } m = { mask, _NSIG / 8 };
        return (int)syscall(SYS_pselect6, n, rd, wr, ex, t, &m);
    }
    uint64_t old;
    if (!ito__thread_self() || n < 0 || !timeout_ns(tmo, &ns) || (!mask && ns == 0))
        return LIBC_CALL(pselect, "GLIBC_2.2.5", n, rd, wr, ex, tmo, mask);
    uint64_t deadline = deadline_in(ns);
    select_wait_fn *wait = parks() && n <= FD_SETSIZE ? select_parked_until : select_in_kernel;
    if (!mask)
        return wait(n, rd, wr, ex, deadline);
    int r = ito__posix_mask_begin(mask, &old) ? -1 : wait(n, rd, wr, ex, deadline);
    return ito__posix_mask_end(old, r);
}
