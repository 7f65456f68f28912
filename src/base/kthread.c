/* SPDX-License-Identifier: MIT */
#include "base/libc.h"
#include "base/kthread.h"

#include <signal.h>

int ito__kthread_start(const char *name, size_t stack, void *(*fn)(void *), void *arg, pthread_t *out)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, stack);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all;
    sigfillset(&all);
    pthread_attr_setsigmask_np(&attr, &all);
    pthread_t t;
    int e = ito__libc_pthread_create(&t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    if (e)
        return e;
    if (name)
        ito__libc_pthread_setname_np(t, name);
    if (out)
        *out = t;
    return 0;
}
