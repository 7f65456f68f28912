/* SPDX-License-Identifier: MIT */
/*
 * ito/io.h — I/O that parks the calling ito thread, not its vproc.
 *
 * Included by <ito.h>. Each function has the signature, return value and errno
 * of the C-library call it is named after (ito_accept is accept4), for files,
 * pipes, sockets and terminals alike: short reads and writes, 0 at end of
 * file, -1 with errno set on failure, EAGAIN on a non-blocking descriptor that
 * is not ready. The calling ito thread parks while the kernel works (through
 * io_uring, one ring per vproc); its vproc runs other threads meanwhile, and
 * the completion makes the thread ready again on the vproc that issued it.
 * None of these calls fails with EINTR.
 *
 * Every function MAY SWITCH. A FOREIGN kernel thread may call them: it makes
 * the plain system call and blocks in the kernel as usual. When the rings are
 * off (ITO_IO_URING=0, valgrind, a kernel older than 5.19 or one that refuses
 * io_uring; ito_io_uring_active() tells), an ito thread makes the plain call
 * too, bracketed by ito_blocking_begin/end: a call that blocks hands its vproc
 * to a spare kernel thread (see ito.h). None is async-signal-safe.
 *
 * A write to a pipe or socket whose reading end is closed raises SIGPIPE (unless
 * MSG_NOSIGNAL is given to ito_send) and fails with EPIPE, as in the C
 * library; the signal goes to the kernel thread carrying the vproc, so a
 * process that wants per-thread handling should ignore SIGPIPE. Socket
 * timeouts (SO_RCVTIMEO, SO_SNDTIMEO) are honoured. The calls are not
 * interrupted by signals. One rare form makes the plain call bracketed the
 * same way: ito_recv and ito_recvmsg with both MSG_PEEK and MSG_WAITALL (which, on a socket
 * with SO_RCVTIMEO, may fail with EINTR: see "Other blocking calls" in
 * docs/guide.md).
 */
#ifndef ITO_IO_H
#define ITO_IO_H

#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ITO_API
#define ITO_API __attribute__((visibility("default")))
#endif

ITO_API ssize_t ito_read(int fd, void *buf, size_t count);
ITO_API ssize_t ito_write(int fd, const void *buf, size_t count);
ITO_API ssize_t ito_pread(int fd, void *buf, size_t count, off_t offset);
ITO_API ssize_t ito_pwrite(int fd, const void *buf, size_t count, off_t offset);
ITO_API ssize_t ito_readv(int fd, const struct iovec *iov, int iovcnt);
ITO_API ssize_t ito_writev(int fd, const struct iovec *iov, int iovcnt);
ITO_API ssize_t ito_recv(int fd, void *buf, size_t len, int flags);
ITO_API ssize_t ito_send(int fd, const void *buf, size_t len, int flags);
/* recvmsg(2), sendmsg(2): also the forms of recvfrom and sendto with an
 * address (msg_name). A sendmsg on a stream socket returns once every byte is
 * sent (its ancillary data go with the first part), as ito_send. */
ITO_API ssize_t ito_recvmsg(int fd, struct msghdr *msg, int flags);
ITO_API ssize_t ito_sendmsg(int fd, const struct msghdr *msg, int flags);
/* accept4(2): flags may hold SOCK_NONBLOCK and SOCK_CLOEXEC. */
ITO_API int ito_accept(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
/* On a non-blocking socket: -1/EINPROGRESS as connect(2). */
ITO_API int ito_connect(int fd, const struct sockaddr *addr, socklen_t addrlen);
/* poll(2): timeout_ms < 0 waits forever, 0 does not wait. */
ITO_API int ito_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms);
ITO_API int ito_openat(int dirfd, const char *path, int flags, mode_t mode);
ITO_API int ito_close(int fd);
ITO_API int ito_fsync(int fd);

/* Whether ito threads' I/O goes through io_uring in this process (initializes
 * ito if needed). */
ITO_API bool ito_io_uring_active(void);

#ifdef __cplusplus
}
#endif

#endif /* ITO_IO_H */
