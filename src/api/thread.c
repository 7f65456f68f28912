/* SPDX-License-Identifier: MIT */
/*
 * The public thread calls that may be a program's first call into ito: each
 * passes the init gate (init.h), then the runtime does the work
 * (runtime/thread.c, runtime/sleep.c). The runtime never initializes
 * itself; this is the one place where the public face meets it.
 *
 * Each call is two functions: the fast path — one load of the runtime's
 * state, then a tail call into the runtime, so that it costs no frame of
 * its own — and, out of line, the first call, which initializes ito first.
 * (With the gate's slow call in the same function, the compiler keeps the
 * arguments across it and builds a frame on every call: 15 more
 * instructions per spawn and per join, counted with callgrind.)
 */
#include <errno.h>
#include <sched.h>

#include <ito.h>

#include "base/libc.h"
#include "api/init.h"
#include "runtime/thread.h"

/* Initialize ito, as the first call of a program does; 0 or an errno value. */
static ITO_NOINLINE ITO_COLD int first_call(void) { return ito__init_slow(NULL, false); }

static ITO_NOINLINE ITO_COLD int spawn_first(ito_thread_t *t, const ito_attr_t *attr, void *(*fn)(void *), void *arg)
{
    int e = first_call();
    return e ? e : ito__spawn(t ? &t->id : NULL, attr, fn, arg, 0, NULL);
}

ITO_API int ito_spawn(ito_thread_t *t, const ito_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (ITO_UNLIKELY(!ito__initialized()))
        return spawn_first(t, attr, fn, arg);
    return ito__spawn(t ? &t->id : NULL, attr, fn, arg, 0, NULL);
}

ITO_API void ito_exit(void *result)
{
    if (ITO_UNLIKELY(!ito__initialized()))
        first_call();   /* main may call it before anything else */
    ito__exit(result);
}

static ITO_NOINLINE ITO_COLD int join_first(ito_thread_t th, void **result)
{
    int e = first_call();
    return e ? e : ito__join(th, result);
}

ITO_API int ito_join(ito_thread_t th, void **result)
{
    if (ITO_UNLIKELY(!ito__initialized()))
        return join_first(th, result);
    return ito__join(th, result);
}

static ITO_NOINLINE ITO_COLD int detach_first(ito_thread_t th)
{
    int e = first_call();
    return e ? e : ito__detach(th);
}

ITO_API int ito_detach(ito_thread_t th)
{
    if (ITO_UNLIKELY(!ito__initialized()))
        return detach_first(th);
    return ito__detach(th);
}

static ITO_NOINLINE ITO_COLD void yield_first(void)
{
    if (first_call() != 0)
        ito__libc_sched_yield();
    else
        ito__yield();
}

ITO_API void ito_yield(void)
{
    if (ITO_UNLIKELY(!ito__initialized()))
        yield_first();
    else
        ito__yield();
}

static ITO_NOINLINE ITO_COLD ito_thread_t self_first(void)
{
    return first_call() != 0 ? ITO_THREAD_NULL : ito__self();
}

ITO_API ito_thread_t ito_self(void)
{
    if (ITO_UNLIKELY(!ito__initialized()))
        return self_first();
    return ito__self();
}

/* Keys: main's values hang off its descriptor, which it has only once ito
 * has adopted it. The check is on the answer a thread that ito did not
 * adopt gets (EPERM; NULL), not on the fast path. */
ITO_API int ito_setspecific(ito_key_t k, const void *value)
{
    int e = ito__setspecific(k, value);
    if (ITO_UNLIKELY(e == EPERM) && !ito__initialized() && first_call() == 0)
        e = ito__setspecific(k, value);
    return e;
}

ITO_API void *ito_getspecific(ito_key_t k)
{
    void *v = ito__getspecific(k);
    /* Nothing was set before: NULL is the answer. (libito-pthread's keys need
     * no descriptor, and the libraries ito uses while it starts call
     * pthread_getspecific: no initialization there.) */
    if (!ITO_OWN_TLS && ITO_UNLIKELY(!v) && !ito__initialized())
        first_call();
    return v;
}

ITO_API int ito_sleep_ns(uint64_t ns)
{
    if (ITO_UNLIKELY(!ito__initialized()))
        first_call();   /* a sleep works even if initialization failed */
    return ito__sleep_ns(ns);
}
