/* SPDX-License-Identifier: MIT */
/*
 * Thread attributes (ito_attr_t): the setters and getters, and the check
 * that ito_spawn makes of an attribute whose fields were written directly.
 *
 * The fields are public to the compiler (the type's size is the ABI), so a
 * program may write one without its setter; every setter's rule is checked
 * again at spawn (ito__attr_valid), where EINVAL is still an answer the
 * program can handle, rather than a 4 KiB stack overflowing later inside
 * the thread. An attribute not made by ito_attr_init (no magic) is EINVAL
 * everywhere.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include <ito.h>

#include "runtime/group.h"
#include "runtime/runtime.h"
#include "runtime/thread.h"

ITO_API int ito_attr_init(ito_attr_t *a)
{
    if (!a)
        return EINVAL;
    memset(a, 0, sizeof *a);
    a->magic_ = ITO__ATTR_MAGIC;
    a->priority_ = ITO_PRIO_DEFAULT;
    a->vproc_ = -1;
    return 0;
}

#define ATTR_CHECK(a) \
    do {                                                         \
        if (!(a) || (a)->magic_ != ITO__ATTR_MAGIC)                   \
            return EINVAL;                                       \
    } while (0)

ITO_API int ito_attr_set_stack_size(ito_attr_t *a, size_t bytes)
{
    ATTR_CHECK(a);
    if (bytes < ITO_STACK_MIN || bytes > ITO_STACK_MAX)
        return EINVAL;
    size_t page = ito__rt.page ? ito__rt.page : (size_t)sysconf(_SC_PAGESIZE);   /* before init: ask */
    a->stack_size_ = (bytes + page - 1) & ~(page - 1);
    return 0;
}

ITO_API int ito_attr_get_stack_size(const ito_attr_t *a, size_t *bytes)
{
    ATTR_CHECK(a);
    if (!bytes)
        return EINVAL;
    *bytes = a->stack_size_ ? a->stack_size_ : ito__default_stack_size();
    return 0;
}

ITO_API int ito_attr_set_priority(ito_attr_t *a, int prio)
{
    ATTR_CHECK(a);
    if (prio < 0 || prio > ITO_PRIO_MAX)
        return EINVAL;
    a->priority_ = prio;
    return 0;
}

ITO_API int ito_attr_get_priority(const ito_attr_t *a, int *prio)
{
    ATTR_CHECK(a);
    if (!prio)
        return EINVAL;
    *prio = a->priority_;
    return 0;
}

ITO_API int ito_attr_set_detached(ito_attr_t *a, bool detached)
{
    ATTR_CHECK(a);
    a->flags_ = detached ? (a->flags_ | ITO__ATTR_DETACHED) : (a->flags_ & ~ITO__ATTR_DETACHED);
    return 0;
}

ITO_API int ito_attr_get_detached(const ito_attr_t *a, bool *detached)
{
    ATTR_CHECK(a);
    if (!detached)
        return EINVAL;
    *detached = a->flags_ & ITO__ATTR_DETACHED;
    return 0;
}

ITO_API int ito_attr_set_name(ito_attr_t *a, const char *name)
{
    ATTR_CHECK(a);
    if (!name)
        return EINVAL;
    size_t n = strlen(name);
    if (n >= ITO_NAME_MAX)
        return ERANGE;
    memcpy(a->name_, name, n + 1);
    return 0;
}

ITO_API int ito_attr_get_name(const ito_attr_t *a, char *buf, size_t len)
{
    ATTR_CHECK(a);
    if (!buf)
        return EINVAL;
    size_t n = strlen(a->name_);
    if (n + 1 > len)
        return ERANGE;
    memcpy(buf, a->name_, n + 1);
    return 0;
}

ITO_API int ito_attr_set_vproc(ito_attr_t *a, int vproc)
{
    ATTR_CHECK(a);
    if (vproc < -1)
        return EINVAL;
    a->vproc_ = vproc;
    return 0;
}

ITO_API int ito_attr_get_vproc(const ito_attr_t *a, int *vproc)
{
    ATTR_CHECK(a);
    if (!vproc)
        return EINVAL;
    *vproc = a->vproc_;
    return 0;
}

ITO_API int ito_attr_set_group(ito_attr_t *a, ito_group_t *g)
{
    ATTR_CHECK(a);
    if (g && !ito__group_live(g))
        return EINVAL;
    a->group_ = g;
    return 0;
}

ITO_API int ito_attr_get_group(const ito_attr_t *a, ito_group_t **g)
{
    ATTR_CHECK(a);
    if (!g)
        return EINVAL;
    *g = a->group_;
    return 0;
}

/* Every field as the setters leave it: the fields are public to the
 * compiler, and one written directly (a 4 KiB stack, priority 99, a name
 * without its NUL) must fail here, not later inside the thread. */
bool ito__attr_valid(const ito_attr_t *a)
{
    return a->magic_ == ITO__ATTR_MAGIC && !(a->flags_ & ~ITO__ATTR_DETACHED) &&
           (!a->stack_size_ || (a->stack_size_ >= ITO_STACK_MIN && a->stack_size_ <= ITO_STACK_MAX)) &&
           a->priority_ >= 0 && a->priority_ <= ITO_PRIO_MAX && a->vproc_ >= -1 && a->vproc_ < ito__rt.nvprocs &&
           memchr(a->name_, 0, ITO_NAME_MAX);
}
