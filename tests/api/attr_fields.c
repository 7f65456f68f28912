/* SPDX-License-Identifier: MIT */
/* ito_attr_t's fields written directly rather than through the setters:
 * ito_spawn refuses every value the setter would refuse with EINVAL (a 4 KiB
 * stack used to overflow inside ito's exit path), and takes the values the
 * setter would take. */
#include "common.h"

static void *ret_arg(void *a) { return a; }

/* Spawn with a and join; the spawn's result. */
static int spawn_with(const ito_attr_t *a)
{
    ito_thread_t t;
    int e = ito_spawn(&t, a, ret_arg, (void *)7);
    if (!e) {
        void *r;
        OK(ito_join(t, &r));
        CHECK_EQ((intptr_t)r, 7);
    }
    return e;
}

int main(void)
{
    ito_attr_t a;
#define WITH(field, value)         \
    ({                             \
        OK(ito_attr_init(&a));     \
        a.field = (value);         \
        spawn_with(&a);            \
    })
    /* Refused, as by the setters. */
    CHECK_EQ(WITH(stack_size_, 1), EINVAL);
    CHECK_EQ(WITH(stack_size_, 4096), EINVAL);
    CHECK_EQ(WITH(stack_size_, ITO_STACK_MIN - 1), EINVAL);
    CHECK_EQ(WITH(stack_size_, ITO_STACK_MAX + 1), EINVAL);
    CHECK_EQ(WITH(stack_size_, SIZE_MAX), EINVAL);
    CHECK_EQ(WITH(priority_, 99), EINVAL);
    CHECK_EQ(WITH(priority_, ITO_PRIO_MAX + 1), EINVAL);
    CHECK_EQ(WITH(priority_, -1), EINVAL);
    CHECK_EQ(WITH(vproc_, -2), EINVAL);
    CHECK_EQ(WITH(vproc_, ito_vproc_count()), EINVAL);
    CHECK_EQ(WITH(flags_, 0x80), EINVAL);
    CHECK_EQ(WITH(magic_, 0), EINVAL);
    OK(ito_attr_init(&a));
    memset(a.name_, 'x', sizeof a.name_);   /* no NUL */
    CHECK_EQ(spawn_with(&a), EINVAL);
    /* Taken, as by the setters: the bounds and the defaults. */
    OK(WITH(stack_size_, 0));   /* 0: the default */
    OK(WITH(stack_size_, ITO_STACK_MIN));
    OK(WITH(stack_size_, ITO_STACK_MIN + 1));   /* rounded up to pages */
    OK(WITH(priority_, 0));
    OK(WITH(priority_, ITO_PRIO_MAX));
    OK(WITH(vproc_, -1));
    OK(WITH(vproc_, ito_vproc_count() - 1));
    OK(ito_attr_init(&a));
    memset(a.name_, 'x', sizeof a.name_ - 1);
    a.name_[sizeof a.name_ - 1] = 0;
    OK(spawn_with(&a));
#undef WITH
    return 0;
}
