/* SPDX-License-Identifier: MIT */
/* POSIX thread-specific data: ito's keys (runtime/key.c) are the same
 * thing — slots with a sequence number, destructors at thread exit for up to
 * PTHREAD_DESTRUCTOR_ITERATIONS rounds — so the calls map one to one. In
 * libito-pthread the values hang off each thread pointer, so any thread has
 * them, ito's or not, before ito starts or after (jemalloc, for one, keeps
 * its thread state in a key from the first malloc on). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>

#include <ito.h>

#include "posix/posix.h"

_Static_assert(sizeof(pthread_key_t) == sizeof(ito_key_t), "pthread_key_t is an ito_key_t");
_Static_assert(PTHREAD_DESTRUCTOR_ITERATIONS == ITO_DESTRUCTOR_ITERATIONS, "destructor rounds");
_Static_assert(PTHREAD_KEYS_MAX == ITO_KEYS_MAX, "key count");

ITO_POSIX_API int pthread_key_create(pthread_key_t *key, void (*dtor)(void *))
{
    return ito_key_create((ito_key_t *)key, dtor);
}

ITO_POSIX_API int pthread_key_delete(pthread_key_t key) { return ito_key_delete(key); }

ITO_POSIX_API void *pthread_getspecific(pthread_key_t key) { return ito_getspecific(key); }

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"   /* glibc says value is not read: it is stored */
ITO_POSIX_API int pthread_setspecific(pthread_key_t key, const void *value)
{
    return ito_setspecific(key, value);
}
