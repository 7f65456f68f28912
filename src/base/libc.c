/* SPDX-License-Identifier: MIT */
/* The C library's own thread functions (libc.h): looked up by name and
 * version on first use. A race between two first calls stores the
 * same pointer twice (relaxed: the value is all there is to it). */
#include "base/libc.h"

#include <dlfcn.h>

#include "base/panic.h"

/* RTLD_NEXT: the first definition after ito's own in the search order —
 * the C library's, whichever object ito was built into (libito.so,
 * libito-pthread.so ahead of the C library, or a program linked with
 * libito.a). Not dlopen("libc.so.6"): the POSIX face defines dlopen too. */
void *ito__libc_symbol(const char *name, const char *version)
{
    void *p = dlvsym(RTLD_NEXT, name, version);
    if (!p)
        ito__panic("the C library has no %s@%s, which ito needs", name, version);
    return p;
}

#if ITO_OWN_TLS
#define LIBC_FN(ret, name, version, params, args)                                       \
    ret ito__libc_##name params                                                         \
    {                                                                                   \
        static ret(*_Atomic libc_fn_) params;                                           \
        ret(*f_) params = __atomic_load_n(&libc_fn_, __ATOMIC_RELAXED);                 \
        if (__builtin_expect(!f_, 0)) {                                                 \
            f_ = (ret(*) params)ito__libc_symbol(#name, version);                       \
            __atomic_store_n(&libc_fn_, f_, __ATOMIC_RELAXED);                          \
        }                                                                               \
        return f_ args;                                                                 \
    }

LIBC_FN(int, pthread_create, "GLIBC_2.2.5", (pthread_t *t, const pthread_attr_t *attr, void *(*start)(void *), void *arg),
        (t, attr, start, arg))
LIBC_FN(pthread_t, pthread_self, "GLIBC_2.2.5", (void), ())
LIBC_FN(int, pthread_getattr_np, "GLIBC_2.2.5", (pthread_t t, pthread_attr_t *attr), (t, attr))
LIBC_FN(int, pthread_getcpuclockid, "GLIBC_2.2.5", (pthread_t t, clockid_t *clock), (t, clock))
LIBC_FN(int, pthread_setname_np, "GLIBC_2.12", (pthread_t t, const char *name), (t, name))
LIBC_FN(int, pthread_sigmask, "GLIBC_2.2.5", (int how, const sigset_t *set, sigset_t *old), (how, set, old))
LIBC_FN(int, pthread_mutex_lock, "GLIBC_2.2.5", (pthread_mutex_t *m), (m))
LIBC_FN(int, pthread_mutex_unlock, "GLIBC_2.2.5", (pthread_mutex_t *m), (m))
LIBC_FN(int, pthread_once, "GLIBC_2.2.5", (pthread_once_t *once, void (*init)(void)), (once, init))
LIBC_FN(int, sched_yield, "GLIBC_2.2.5", (void), ())
LIBC_FN(int, nanosleep, "GLIBC_2.2.5", (const struct timespec *req, struct timespec *rem), (req, rem))
LIBC_FN(int, clock_nanosleep, "GLIBC_2.17", (clockid_t clock, int flags, const struct timespec *req, struct timespec *rem),
        (clock, flags, req, rem))
LIBC_FN(int, clock_gettime, "GLIBC_2.17", (clockid_t clock, struct timespec *ts), (clock, ts))
LIBC_FN(int, usleep, "GLIBC_2.2.5", (useconds_t us), (us))
LIBC_FN(unsigned, sleep, "GLIBC_2.2.5", (unsigned s), (s))
#endif
