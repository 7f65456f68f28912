/* SPDX-License-Identifier: MIT */
/* Thread attributes: every setter and getter, their bounds and errno values,
 * an uninitialized attribute, and what ito_spawn does with each attribute. */
#include "common.h"

static void *ret_arg(void *a) { return a; }

/* Report where the thread starts and what ito says about itself. */
struct seen {
    int vproc;
    int prio;
    char name[ITO_NAME_MAX];
};

static void *observe(void *a)
{
    struct seen *s = a;
    s->vproc = ito_vproc_self();
    OK(ito_get_priority(ito_self(), &s->prio));
    OK(ito_get_name(ito_self(), s->name, sizeof s->name));
    return a;
}

static atomic_int detached_done;
static void *detached_fn(void *a)
{
    atomic_fetch_add(&detached_done, 1);
    return a;
}

static void test_init_and_defaults(void)
{
    CHECK_EQ(ito_attr_init(NULL), EINVAL);

    ito_attr_t a;
    OK(ito_attr_init(&a));
    size_t sz = 0;
    OK(ito_attr_get_stack_size(&a, &sz));
    CHECK(sz >= ITO_STACK_MIN && sz <= ITO_STACK_MAX);
    int prio = -5;
    OK(ito_attr_get_priority(&a, &prio));
    CHECK_EQ(prio, ITO_PRIO_DEFAULT);
    bool det = true;
    OK(ito_attr_get_detached(&a, &det));
    CHECK(!det);
    char name[ITO_NAME_MAX] = "garbage";
    OK(ito_attr_get_name(&a, name, sizeof name));
    CHECK_EQ(strlen(name), 0);
    int vp = 7;
    OK(ito_attr_get_vproc(&a, &vp));
    CHECK_EQ(vp, -1);
}

static void test_uninitialized(void)
{
    /* Zeroed and garbage-filled attributes were never initialized. */
    ito_attr_t z, g;
    memset(&z, 0, sizeof z);
    memset(&g, 0xa5, sizeof g);
    ito_attr_t *bad[] = { &z, &g, NULL };
    for (int i = 0; i < 3; i++) {
        ito_attr_t *a = bad[i];
        size_t sz;
        int v;
        bool d;
        char buf[ITO_NAME_MAX];
        CHECK_EQ(ito_attr_set_stack_size(a, 64 * 1024), EINVAL);
        CHECK_EQ(ito_attr_get_stack_size(a, &sz), EINVAL);
        CHECK_EQ(ito_attr_set_priority(a, 3), EINVAL);
        CHECK_EQ(ito_attr_get_priority(a, &v), EINVAL);
        CHECK_EQ(ito_attr_set_detached(a, true), EINVAL);
        CHECK_EQ(ito_attr_get_detached(a, &d), EINVAL);
        CHECK_EQ(ito_attr_set_name(a, "x"), EINVAL);
        CHECK_EQ(ito_attr_get_name(a, buf, sizeof buf), EINVAL);
        CHECK_EQ(ito_attr_set_vproc(a, 0), EINVAL);
        CHECK_EQ(ito_attr_get_vproc(a, &v), EINVAL);
        if (a) {
            ito_thread_t t = ITO_THREAD_NULL;
            CHECK_EQ(ito_spawn(&t, a, ret_arg, NULL), EINVAL);
            CHECK(ito_thread_equal(t, ITO_THREAD_NULL) || ito_join(t, NULL) == ESRCH);
            ito_future_t f;
            CHECK_EQ(ito_future_spawn(&f, a, ret_arg, NULL), EINVAL);
        }
    }
}

static void test_stack_size(void)
{
    ito_attr_t a;
    OK(ito_attr_init(&a));
    size_t before, sz;
    OK(ito_attr_get_stack_size(&a, &before));
    CHECK_EQ(ito_attr_set_stack_size(&a, 0), EINVAL);
    CHECK_EQ(ito_attr_set_stack_size(&a, ITO_STACK_MIN - 1), EINVAL);
    CHECK_EQ(ito_attr_set_stack_size(&a, ITO_STACK_MAX + 1), EINVAL);
    CHECK_EQ(ito_attr_set_stack_size(&a, SIZE_MAX), EINVAL);
    OK(ito_attr_get_stack_size(&a, &sz));
    CHECK_EQ(sz, before);   /* a rejected value changes nothing */

    OK(ito_attr_set_stack_size(&a, ITO_STACK_MIN));
    OK(ito_attr_get_stack_size(&a, &sz));
    CHECK_EQ(sz, ITO_STACK_MIN);
    OK(ito_attr_set_stack_size(&a, ITO_STACK_MAX));
    OK(ito_attr_get_stack_size(&a, &sz));
    CHECK_EQ(sz, ITO_STACK_MAX);
    /* Not a multiple of the page: accepted (rounded up for the stack). */
    size_t odd = ITO_STACK_MIN + 1000;
    OK(ito_attr_set_stack_size(&a, odd));
    OK(ito_attr_get_stack_size(&a, &sz));
    CHECK(sz >= odd && sz < odd + (size_t)sysconf(_SC_PAGESIZE));

    /* Threads run on the smallest and on an odd-sized stack, and can use most
     * of it. */
    size_t sizes[] = { ITO_STACK_MIN, odd, 1u << 20 };
    for (int i = 0; i < 3; i++) {
        OK(ito_attr_set_stack_size(&a, sizes[i]));
        ito_thread_t t;
        void *r;
        OK(ito_spawn(&t, &a, ret_arg, (void *)(intptr_t)(i + 1)));
        OK(ito_join(t, &r));
        CHECK_EQ((intptr_t)r, i + 1);
    }
}

static void test_priority(void)
{
    ito_attr_t a;
    OK(ito_attr_init(&a));
    CHECK_EQ(ito_attr_set_priority(&a, -1), EINVAL);
    CHECK_EQ(ito_attr_set_priority(&a, ITO_PRIO_MAX + 1), EINVAL);
    CHECK_EQ(ito_attr_set_priority(&a, 1 << 30), EINVAL);
    int p;
    OK(ito_attr_get_priority(&a, &p));
    CHECK_EQ(p, ITO_PRIO_DEFAULT);
    for (int prio = 0; prio <= ITO_PRIO_MAX; prio += ITO_PRIO_MAX) {
        OK(ito_attr_set_priority(&a, prio));
        OK(ito_attr_get_priority(&a, &p));
        CHECK_EQ(p, prio);
        struct seen s;
        ito_thread_t t;
        OK(ito_spawn(&t, &a, observe, &s));
        OK(ito_join(t, NULL));
        CHECK_EQ(s.prio, prio);
    }
}

static void test_name(void)
{
    ito_attr_t a;
    OK(ito_attr_init(&a));
    char longest[ITO_NAME_MAX], too_long[ITO_NAME_MAX + 1];
    memset(longest, 'n', sizeof longest - 1);
    longest[ITO_NAME_MAX - 1] = 0;
    memset(too_long, 'x', sizeof too_long - 1);
    too_long[ITO_NAME_MAX] = 0;

    OK(ito_attr_set_name(&a, "first"));
    CHECK_EQ(ito_attr_set_name(&a, too_long), ERANGE);
    char buf[ITO_NAME_MAX];
    OK(ito_attr_get_name(&a, buf, sizeof buf));
    CHECK(strcmp(buf, "first") == 0);   /* unchanged by the rejected name */

    OK(ito_attr_set_name(&a, longest));
    OK(ito_attr_get_name(&a, buf, sizeof buf));
    CHECK(strcmp(buf, longest) == 0);
    /* Buffer too small: an error (ERANGE, as for ito_get_name, presumably). */
    CHECK(ito_attr_get_name(&a, buf, ITO_NAME_MAX - 1) != 0);
    CHECK(ito_attr_get_name(&a, buf, 0) != 0);

    /* The name is copied: changing the source afterwards changes nothing. */
    char src[16] = "worker-7";
    OK(ito_attr_set_name(&a, src));
    strcpy(src, "changed");
    struct seen s;
    ito_thread_t t;
    OK(ito_spawn(&t, &a, observe, &s));
    OK(ito_join(t, NULL));
    CHECK(strcmp(s.name, "worker-7") == 0);

    OK(ito_attr_set_name(&a, ""));
    OK(ito_spawn(&t, &a, observe, &s));
    OK(ito_join(t, NULL));
    CHECK(strcmp(s.name, "") == 0);
}

static void test_vproc(void)
{
    int n = ito_vproc_count();
    CHECK(n >= 1);
    ito_attr_t a;
    OK(ito_attr_init(&a));
    int v;
    CHECK_EQ(ito_attr_set_vproc(&a, -2), EINVAL);
    CHECK_EQ(ito_attr_set_vproc(&a, -1000), EINVAL);
    OK(ito_attr_get_vproc(&a, &v));
    CHECK_EQ(v, -1);

    /* Out of range is only known at spawn. */
    OK(ito_attr_set_vproc(&a, n));
    OK(ito_attr_get_vproc(&a, &v));
    CHECK_EQ(v, n);
    ito_thread_t t = ITO_THREAD_NULL;
    CHECK_EQ(ito_spawn(&t, &a, ret_arg, NULL), EINVAL);
    ito_future_t f;
    CHECK_EQ(ito_future_spawn(&f, &a, ret_arg, NULL), EINVAL);
    OK(ito_attr_set_vproc(&a, 1 << 20));
    CHECK_EQ(ito_spawn(&t, &a, ret_arg, NULL), EINVAL);

    /* Every vproc in range is accepted (where the thread runs: vproc.c). */
    for (int p = 0; p < n; p++) {
        OK(ito_attr_set_vproc(&a, p));
        struct seen s;
        OK(ito_spawn(&t, &a, observe, &s));
        OK(ito_join(t, NULL));
        CHECK(s.vproc >= 0 && s.vproc < n);
    }
    OK(ito_attr_set_vproc(&a, -1));
    struct seen s;
    OK(ito_spawn(&t, &a, observe, &s));
    OK(ito_join(t, NULL));
    CHECK(s.vproc >= 0 && s.vproc < n);
}

static void test_detached_and_handles(void)
{
    ito_attr_t a;
    OK(ito_attr_init(&a));
    bool d;
    OK(ito_attr_set_detached(&a, true));
    OK(ito_attr_get_detached(&a, &d));
    CHECK(d);
    OK(ito_attr_set_detached(&a, false));
    OK(ito_attr_get_detached(&a, &d));
    CHECK(!d);

    /* Spawn: NULL fn, NULL handle for a joinable thread. */
    ito_thread_t t;
    CHECK_EQ(ito_spawn(&t, NULL, NULL, NULL), EINVAL);
    CHECK_EQ(ito_spawn(&t, &a, NULL, NULL), EINVAL);
    CHECK_EQ(ito_spawn(NULL, NULL, ret_arg, NULL), EINVAL);
    CHECK_EQ(ito_spawn(NULL, &a, ret_arg, NULL), EINVAL);

    /* A detached thread may be spawned without a handle. */
    OK(ito_attr_set_detached(&a, true));
    int n = (int)test_scaled(100);
    for (int i = 0; i < n; i++)
        OK(ito_spawn(NULL, &a, detached_fn, NULL));
    /* ... or with one, which then cannot be joined. */
    OK(ito_spawn(&t, &a, detached_fn, NULL));
    int e = ito_join(t, NULL);
    CHECK(e == EINVAL || e == ESRCH);   /* ESRCH once it has exited and freed itself */
    WAIT_UNTIL(atomic_load(&detached_done) == n + 1, 60);

    /* The attribute is only read at spawn: changing it later changes nothing. */
    OK(ito_attr_set_detached(&a, false));
    OK(ito_spawn(&t, &a, ret_arg, (void *)5));
    OK(ito_attr_set_detached(&a, true));
    void *r;
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 5);
}

int main(void)
{
    test_init_and_defaults();
    test_uninitialized();
    test_stack_size();
    test_priority();
    test_name();
    test_vproc();
    test_detached_and_handles();
    return 0;
}
