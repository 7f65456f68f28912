/* SPDX-License-Identifier: MIT */
/*
 * The C library's own thread and I/O functions, and the system calls ito
 * makes for itself.
 *
 * In libito-pthread.so (src/posix) the names pthread_create,
 * pthread_mutex_lock, sched_yield, read, poll and the rest are ito's: a call by name
 * from inside the library binds to ito's own definition, which runs on ito
 * threads — even a call naming glibc's symbol version, since the linker
 * binds that to the definition in the library it is building. ito's own
 * kernel threads (activations, the monitor, the allocator's agent) and its
 * few process-wide locks need the C library's, so the lower layers call
 * them through these wrappers, which look each function up in the C library
 * by name and version the first time (libc.c). In libito.so, which defines
 * none of them, they are plain calls by name.
 */
#ifndef ITO_BASE_LIBC_H
#define ITO_BASE_LIBC_H

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/compiler.h"

/* What the runtime reads and writes for itself (eventfds, /proc, messages
 * on stderr): the system calls themselves, in either library — never the
 * POSIX face's calls, and never a cancellation point, which the C library's
 * read and write are (a thread with a cancellation pending would unwind
 * from inside the runtime, holding its locks). */
static inline ssize_t ito__sys_read(int fd, void *buf, size_t n) { return syscall(SYS_read, fd, buf, n); }
static inline ssize_t ito__sys_write(int fd, const void *buf, size_t n) { return syscall(SYS_write, fd, buf, n); }
/* The affinity of a kernel thread (0: the caller): the system calls, never
 * the POSIX face's, which act on ito threads (posix/affinity.c). As the C
 * library's: 0 or -1 with errno; get clears what the kernel did not fill. */
static inline int ito__sys_sched_setaffinity(pid_t tid, size_t size, const cpu_set_t *set)
{
    return (int)syscall(SYS_sched_setaffinity, tid, size, set);
}
static inline int ito__sys_sched_getaffinity(pid_t tid, size_t size, cpu_set_t *set)
{
    long n = syscall(SYS_sched_getaffinity, tid, size, set);
    if (n < 0)
        return -1;
    if ((size_t)n < size)
        memset((char *)set + n, 0, size - (size_t)n);
    return 0;
}

/* The scheduling policy of a kernel thread (0: the caller), likewise the
 * system calls (the POSIX face's pthread_*schedparam act on ito threads). */
static inline int ito__sys_sched_getscheduler(pid_t tid, struct sched_param *param)
{
    long policy = syscall(SYS_sched_getscheduler, tid);
    if (policy < 0 || syscall(SYS_sched_getparam, tid, param) != 0)
        return -1;
    return (int)policy;
}
static inline int ito__sys_sched_setscheduler(pid_t tid, int policy, const struct sched_param *param)
{
    return (int)syscall(SYS_sched_setscheduler, tid, policy, param);
}

#if ITO_OWN_TLS
int ito__libc_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
pthread_t ito__libc_pthread_self(void);
int ito__libc_pthread_getattr_np(pthread_t t, pthread_attr_t *attr);
int ito__libc_pthread_getcpuclockid(pthread_t t, clockid_t *clock);
int ito__libc_pthread_setname_np(pthread_t t, const char *name);
int ito__libc_pthread_sigmask(int how, const sigset_t *set, sigset_t *old);
int ito__libc_pthread_mutex_lock(pthread_mutex_t *m);
int ito__libc_pthread_mutex_unlock(pthread_mutex_t *m);
int ito__libc_pthread_once(pthread_once_t *once, void (*fn)(void));
int ito__libc_sched_yield(void);
int ito__libc_nanosleep(const struct timespec *req, struct timespec *rem);
int ito__libc_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem);
int ito__libc_clock_gettime(clockid_t clock, struct timespec *ts);
int ito__libc_usleep(useconds_t us);
unsigned ito__libc_sleep(unsigned s);
/* ito's I/O calls' own system calls (api/io.c): in libito-pthread the
 * system calls themselves. The C library's are cancellation points, and a
 * POSIX thread must not unwind from inside ito's I/O calls (from between
 * ito_blocking_begin and _end, say): the POSIX face acts on cancellation
 * around them (posix/io.c). */
static inline ssize_t ito__libc_read(int fd, void *buf, size_t n) { return ito__sys_read(fd, buf, n); }
static inline ssize_t ito__libc_write(int fd, const void *buf, size_t n) { return ito__sys_write(fd, buf, n); }
static inline ssize_t ito__libc_pread(int fd, void *buf, size_t n, off_t off)
{
    return syscall(SYS_pread64, fd, buf, n, off);
}
static inline ssize_t ito__libc_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    return syscall(SYS_pwrite64, fd, buf, n, off);
}
/* (offset -1: the file position; the high half of the offset is 0 on a
 * 64-bit system) */
static inline ssize_t ito__libc_preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    return syscall(SYS_preadv2, fd, iov, cnt, off, 0, flags);
}
static inline ssize_t ito__libc_pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    return syscall(SYS_pwritev2, fd, iov, cnt, off, 0, flags);
}
static inline ssize_t ito__libc_recv(int fd, void *buf, size_t n, int flags)
{
    return syscall(SYS_recvfrom, fd, buf, n, flags, NULL, NULL);
}
static inline ssize_t ito__libc_send(int fd, const void *buf, size_t n, int flags)
{
    return syscall(SYS_sendto, fd, buf, n, flags, NULL, 0);
}
static inline ssize_t ito__libc_recvmsg(int fd, struct msghdr *msg, int flags)
{
    return syscall(SYS_recvmsg, fd, msg, flags);
}
static inline ssize_t ito__libc_sendmsg(int fd, const struct msghdr *msg, int flags)
{
    return syscall(SYS_sendmsg, fd, msg, flags);
}
static inline int ito__libc_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    return (int)syscall(SYS_accept4, fd, addr, len, flags);
}
static inline int ito__libc_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    return (int)syscall(SYS_connect, fd, addr, len);
}
static inline int ito__libc_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
    struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };
    return (int)syscall(SYS_ppoll, fds, n, timeout_ms < 0 ? NULL : &ts, NULL, (size_t)8);
}
#else
/* libito.so defines none of these: the names are the C library's (or, in a
 * sanitizer build, the sanitizer's, which must see every thread). */
static inline int ito__libc_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    return pthread_create(t, attr, fn, arg);
}
static inline pthread_t ito__libc_pthread_self(void) { return pthread_self(); }
static inline int ito__libc_pthread_getattr_np(pthread_t t, pthread_attr_t *attr) { return pthread_getattr_np(t, attr); }
static inline int ito__libc_pthread_getcpuclockid(pthread_t t, clockid_t *clock) { return pthread_getcpuclockid(t, clock); }
static inline int ito__libc_pthread_setname_np(pthread_t t, const char *name) { return pthread_setname_np(t, name); }
static inline int ito__libc_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    return pthread_sigmask(how, set, old);
}
static inline int ito__libc_pthread_mutex_lock(pthread_mutex_t *m) { return pthread_mutex_lock(m); }
static inline int ito__libc_pthread_mutex_unlock(pthread_mutex_t *m) { return pthread_mutex_unlock(m); }
static inline int ito__libc_pthread_once(pthread_once_t *once, void (*fn)(void)) { return pthread_once(once, fn); }
static inline int ito__libc_sched_yield(void) { return sched_yield(); }
static inline int ito__libc_nanosleep(const struct timespec *req, struct timespec *rem) { return nanosleep(req, rem); }
static inline int ito__libc_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
    return clock_nanosleep(clock, flags, req, rem);
}
static inline int ito__libc_clock_gettime(clockid_t clock, struct timespec *ts) { return clock_gettime(clock, ts); }
static inline int ito__libc_usleep(useconds_t us) { return usleep(us); }
static inline unsigned ito__libc_sleep(unsigned s) { return sleep(s); }
static inline ssize_t ito__libc_read(int fd, void *buf, size_t n) { return read(fd, buf, n); }
static inline ssize_t ito__libc_write(int fd, const void *buf, size_t n) { return write(fd, buf, n); }
static inline ssize_t ito__libc_pread(int fd, void *buf, size_t n, off_t off) { return pread(fd, buf, n, off); }
static inline ssize_t ito__libc_pwrite(int fd, const void *buf, size_t n, off_t off) { return pwrite(fd, buf, n, off); }
static inline ssize_t ito__libc_recv(int fd, void *buf, size_t n, int flags) { return recv(fd, buf, n, flags); }
static inline ssize_t ito__libc_send(int fd, const void *buf, size_t n, int flags) { return send(fd, buf, n, flags); }
static inline ssize_t ito__libc_recvmsg(int fd, struct msghdr *msg, int flags) { return recvmsg(fd, msg, flags); }
static inline ssize_t ito__libc_sendmsg(int fd, const struct msghdr *msg, int flags) { return sendmsg(fd, msg, flags); }
static inline int ito__libc_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    return accept4(fd, addr, len, flags);
}
static inline int ito__libc_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    return connect(fd, addr, len);
}
static inline int ito__libc_poll(struct pollfd *fds, nfds_t n, int timeout_ms) { return poll(fds, n, timeout_ms); }
static inline ssize_t ito__libc_preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    return preadv2(fd, iov, cnt, off, flags);
}
static inline ssize_t ito__libc_pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    return pwritev2(fd, iov, cnt, off, flags);
}
#endif


/* Any other C-library function by name and symbol version (e.g.
 * "GLIBC_2.2.5"); panics if the C library does not have it. */
void *ito__libc_symbol(const char *name, const char *version);

#endif
