/* SPDX-License-Identifier: MIT */
/*
 * The policy registry: validates tables at registration and finds them by
 * name at initialization. Tables are copied into a full-size, zero-filled
 * ito_policy_ops_t, so that a table built against an older header (smaller
 * `size`) reads as NULL for the operations it does not know.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ito/policy.h>

#include "base/libc.h"
#include "policy/registry.h"
#include "base/panic.h"
#include "runtime/runtime.h"

extern const ito_policy_ops_t ito__policy_ws, ito__policy_fifo, ito__policy_prio, ito__policy_prio_shared,
    ito__policy_affinity;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ito_policy_ops_t *table[ITO_POLICIES_MAX];
static int ntable;

void ito__policies_forked(void)
{
    lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;   /* a holder the fork left behind never unlocks it */
}

static bool good_name(const char *name)
{
    size_t n = 0;
    for (; name[n]; n++) {
        char c = name[n];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return n > 0 && n < ITO_POLICY_NAME_MAX;
}

static int do_register(const ito_policy_ops_t *ops);

ITO_API int ito_policy_register(const ito_policy_ops_t *ops)
{
    ito__policies_builtin();   /* the built-in names are taken from the start */
    return do_register(ops);
}

static int do_register(const ito_policy_ops_t *ops)
{
    if (!ops)
        return EINVAL;
    if (ops->abi != ITO_POLICY_ABI)
        return ENOTSUP;
    size_t need = offsetof(ito_policy_ops_t, pick) + sizeof ops->pick;
    if (ops->size < need || !ops->name || !good_name(ops->name) || !ops->enqueue || !ops->pick)
        return EINVAL;
    ito_policy_ops_t *copy = calloc(1, sizeof *copy);
    if (!copy)
        return ENOMEM;
    memcpy(copy, ops, ops->size < sizeof *copy ? ops->size : sizeof *copy);
    copy->size = sizeof *copy;
    copy->name = strdup(ops->name);
    if (!copy->name) {
        free(copy);
        return ENOMEM;
    }
    int e = 0;
    ito__libc_pthread_mutex_lock(&lock);
    for (int i = 0; i < ntable; i++)
        if (strcmp(table[i]->name, copy->name) == 0)
            e = EEXIST;
    if (!e && ntable == ITO_POLICIES_MAX)
        e = ENOSPC;
    if (!e)
        table[ntable++] = copy;
    ito__libc_pthread_mutex_unlock(&lock);
    if (e) {
        free((char *)copy->name);
        free(copy);
    }
    return e;
}

const ito_policy_ops_t *ito__policy_find(const char *name)
{
    ito__policies_builtin();
    const ito_policy_ops_t *r = NULL;
    ito__libc_pthread_mutex_lock(&lock);
    for (int i = 0; i < ntable && !r; i++)
        if (strcmp(table[i]->name, name) == 0)
            r = table[i];
    ito__libc_pthread_mutex_unlock(&lock);
    return r;
}

void ito__policy_names(char *buf, size_t n)
{
    if (!n)
        return;
    ito__policies_builtin();
    size_t at = 0;
    buf[0] = '\0';
    ito__libc_pthread_mutex_lock(&lock);
    for (int i = 0; i < ntable && at < n; i++) {
        int w = snprintf(buf + at, n - at, "%s%s", i ? ", " : "", table[i]->name);
        if (w < 0)
            break;
        at += (size_t)w;   /* past n - 1: snprintf cut it short, and the loop ends */
    }
    ito__libc_pthread_mutex_unlock(&lock);
}

static void register_builtin(void)
{
    /* The built-in policies go through the same validation as any other. */
    if (do_register(&ito__policy_ws) || do_register(&ito__policy_fifo) || do_register(&ito__policy_prio) ||
        do_register(&ito__policy_prio_shared) || do_register(&ito__policy_affinity))
        ito__panic("internal error: the built-in policies failed to register");
}

void ito__policies_builtin(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    ito__libc_pthread_once(&once, register_builtin);
}
