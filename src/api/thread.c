/* SPDX-License-Identifier: MIT */
/*
 * The public thread calls that may be a program's first call into ito: each
 * passes the init gate (init.h), then the runtime does the work
 * (runtime/thread.c, runtime/sleep.c). The runtime never initializes
 * itself; this is the one place where the public face meets it.
 */
#include <sched.h>

#include <ito.h>

#include "api/init.h"
#include "runtime/thread.h"

ITO_API int ito_spawn(ito_thread_t *t, const ito_attr_t *attr, void *(*fn)(void *), void *arg)
{
    int e = ito__ensure_init();
    return e ? e : ito__spawn(t ? &t->id : NULL, attr, fn, arg, 0);
}

ITO_API void ito_exit(void *result)
{
    ito__ensure_init();   /* main may call it before anything else */
    ito__exit(result);
}

ITO_API int ito_join(ito_thread_t th, void **result)
{
    int e = ito__ensure_init();
    return e ? e : ito__join(th, result);
}

ITO_API int ito_detach(ito_thread_t th)
{
    int e = ito__ensure_init();
    return e ? e : ito__detach(th);
}

ITO_API void ito_yield(void)
{
    if (ITO_UNLIKELY(ito__ensure_init() != 0)) {
        sched_yield();
        return;
    }
    ito__yield();
}

ITO_API ito_thread_t ito_self(void)
{
    if (ito__ensure_init() != 0)
        return ITO_THREAD_NULL;
    return ito__self();
}

ITO_API int ito_sleep_ns(uint64_t ns)
{
    ito__ensure_init();
    return ito__sleep_ns(ns);
}
