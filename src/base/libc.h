/* SPDX-License-Identifier: MIT */
/*
 * The C library's own thread functions.
 *
 * In libito-pthread.so (src/posix) the names pthread_create,
 * pthread_mutex_lock, sched_yield and the rest are ito's: a call by name
 * from inside the library binds to ito's own definition, which runs on ito
 * threads — even a call naming glibc's symbol version, since the linker
 * binds that to the definition in the library it is building. ito's own
 * kernel threads (activations, the monitor, the allocator's agent) and its
 * few process-wide locks need the C library's, so the lower layers call
 * them through these wrappers, which look each function up in the C library
 * by name and version the first time (libc.c). In libito.so they are the very
 * same functions, one indirect call away.
 */
#ifndef ITO_BASE_LIBC_H
#define ITO_BASE_LIBC_H

#include <pthread.h>
#include <signal.h>
#include <time.h>

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

/* Any other C-library function by name and symbol version (e.g.
 * "GLIBC_2.2.5"); panics if the C library does not have it. */
void *ito__libc_symbol(const char *name, const char *version);

#endif
