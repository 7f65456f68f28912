/* SPDX-License-Identifier: MIT */
/* Joining a thread right after spawning it must be indistinguishable from any
 * other join, however the runtime runs the child (it may run a child that has
 * not started on the joiner's own stack): inside the child, ito_self(), its
 * name, errno, keys and thread data are its own; the child may block, yield,
 * migrate, sleep, spawn and join grandchildren, call ito_exit, be suspended
 * and resumed, or be restarted with ito_set_entry; nobody else can join it;
 * and the joiner's own state is intact afterwards. Joiners: main (a large
 * stack) and ito threads with small children. */
#include "common.h"

static ito_key_t key;
static ito_thread_t main_handle;

struct probe {
    ito_thread_t self;
    char name[ITO_NAME_MAX];
    int errno_at_start;
    void *key_at_start;
    void *data_at_start;
    int vproc_before, vproc_after;
};

static void *prober(void *a)
{
    struct probe *p = a;
    p->self = ito_self();
    OK(ito_get_name(ito_self(), p->name, sizeof p->name));
    p->errno_at_start = test_errno();
    p->key_at_start = ito_getspecific(key);
    p->data_at_start = ito_get_data(ito_self());
    test_set_errno(777);
    OK(ito_setspecific(key, (void *)0xc0de));
    OK(ito_set_data(ito_self(), (void *)0xda7a));
    p->vproc_before = ito_vproc_self();
    for (int i = 0; i < 20; i++) {
        ito_yield();
        ito_sleep_ns(i % 4 ? 0 : 10000);
        CHECK_EQ(test_errno(), 777);
        CHECK(ito_getspecific(key) == (void *)0xc0de);
        CHECK(ito_thread_equal(ito_self(), p->self));
    }
    p->vproc_after = ito_vproc_self();
    return (void *)0x600d;
}

static void check_probe(const struct probe *p, ito_thread_t spawned, const char *name)
{
    CHECK(ito_thread_equal(p->self, spawned));
    CHECK(!ito_thread_equal(p->self, main_handle));
    CHECK(strcmp(p->name, name) == 0);
    CHECK_EQ(p->errno_at_start, 0);
    CHECK(p->key_at_start == NULL);
    CHECK(p->data_at_start == NULL);
}

/* ---- blocking, exit, nesting ---- */

static ito_sem_t gate;
static void *blocker(void *a)
{
    OK(ito_sem_wait(&gate));
    return a;
}
static void *poster(void *a)
{
    ito_sleep_ns(5000000);
    OK(ito_sem_post(&gate));
    return NULL;
}

#pragma GCC diagnostic ignored "-Winfinite-recursion"
static void __attribute__((noinline)) exit_deep(int d, void *r)
{
    if (d == 0)
        ito_exit(r);
    exit_deep(d - 1, r);
    test_set_errno(0);   /* not reached */
}
static void *exiter(void *a)
{
    exit_deep(10, a);
    return NULL;
}

static void *fib(void *a)
{
    intptr_t n = (intptr_t)a;
    if (n < 2)
        return (void *)n;
    ito_attr_t at;
    OK(ito_attr_init(&at));
    OK(ito_attr_set_stack_size(&at, ITO_STACK_MIN));
    ito_thread_t t1, t2;
    void *x, *y;
    OK(ito_spawn(&t1, &at, fib, (void *)(n - 1)));
    OK(ito_join(t1, &x));
    OK(ito_spawn(&t2, &at, fib, (void *)(n - 2)));
    OK(ito_join(t2, &y));
    return (void *)((intptr_t)x + (intptr_t)y);
}

/* ---- joined: nobody else may join or detach it ---- */

static atomic_int detach_result = -1, join_result = -1;
static void *probe_own_join(void *a)
{
    ito_thread_t me = ito_self();
    atomic_store(&join_result, ito_join(me, NULL));   /* itself: EDEADLK */
    /* If main has claimed the join already (certainly so if the child runs
     * inside main's join), detaching is EINVAL; if not, it succeeds and
     * main's join then fails instead. */
    atomic_store(&detach_result, ito_detach(me));
    return a;
}

/* ---- suspended, restarted while joined ---- */

static atomic_int self_suspended;
static void *suspends_itself(void *a)
{
    atomic_store(&self_suspended, 1);
    OK(ito_suspend(ito_self()));
    return (void *)1;   /* replaced by set_entry: never returns this */
}
static void *replacement(void *a) { ito_yield(); return (void *)((intptr_t)a + 1); }

static ito_thread_t restart_target;
static void *restarter(void *a)
{
    WAIT_UNTIL(atomic_load(&self_suspended), 30);
    int e;
    uint64_t end = ito_now_ns() + 30000000000ull;
    while ((e = ito_set_entry(restart_target, replacement, (void *)41)) != 0) {
        CHECK(e == EINVAL || e == EBUSY);   /* not yet stopped */
        CHECK(ito_now_ns() < end);
        ito_sleep_ns(100000);
    }
    OK(ito_resume(restart_target));
    return NULL;
}

static atomic_long spin_progress;
static atomic_int spin_stop;
static void *spinner(void *a)
{
    while (!atomic_load(&spin_stop)) {
        atomic_fetch_add(&spin_progress, 1);
        ito_yield();
    }
    return a;
}
static void *suspender(void *a)
{
    ito_thread_t t = *(ito_thread_t *)a;
    WAIT_UNTIL(atomic_load(&spin_progress) > 100, 30);
    for (int i = 0; i < 20; i++) {
        OK(ito_suspend(t));
        ito_sleep_ns(100000);
        OK(ito_resume(t));
        ito_sleep_ns(100000);
    }
    atomic_store(&spin_stop, 1);
    return NULL;
}

static void joiner_body(void)
{
    ito_attr_t a;
    OK(ito_attr_init(&a));
    OK(ito_attr_set_name(&a, "probe"));
    OK(ito_attr_set_stack_size(&a, ITO_STACK_MIN));

    /* Identity and per-thread state, with the joiner's state untouched. */
    test_set_errno(123);
    OK(ito_setspecific(key, (void *)0x1111));
    void *my_data = ito_get_data(ito_self());
    ito_thread_t me = ito_self();
    struct probe p;
    ito_thread_t t;
    void *r;
    OK(ito_spawn(&t, &a, prober, &p));
    OK(ito_join(t, &r));
    CHECK(r == (void *)0x600d);
    check_probe(&p, t, "probe");
    CHECK_EQ(test_errno(), 123);
    CHECK(ito_getspecific(key) == (void *)0x1111);
    CHECK(ito_get_data(ito_self()) == my_data);
    CHECK(ito_thread_equal(ito_self(), me));
    CHECK_EQ(ito_join(t, NULL), ESRCH);

    /* The child blocks until another thread wakes it. */
    ito_thread_t q;
    OK(ito_spawn(&t, &a, blocker, (void *)5));
    OK(ito_spawn(&q, NULL, poster, NULL));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 5);
    OK(ito_join(q, NULL));

    /* ito_exit from deep inside the child. */
    OK(ito_spawn(&t, &a, exiter, (void *)6));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, 6);
    CHECK(ito_thread_equal(ito_self(), me));
    CHECK_EQ(test_errno(), 123);
}

static void *joiner_thread(void *a)
{
    OK(ito_set_data(ito_self(), (void *)0x77));
    joiner_body();
    return a;
}

int main(void)
{
    OK(ito_key_create(&key, NULL));
    OK(ito_sem_init(&gate, 0));
    main_handle = ito_self();

    /* Joined by main (plenty of stack) and by an ito thread. */
    joiner_body();
    ito_thread_t j;
    OK(ito_spawn(&j, NULL, joiner_thread, (void *)9));
    void *r;
    OK(ito_join(j, &r));
    CHECK_EQ((intptr_t)r, 9);

    /* Nested spawn/join, many levels. */
    OK(ito_spawn(&j, NULL, fib, (void *)15));
    OK(ito_join(j, &r));
    CHECK_EQ((intptr_t)r, 610);

    /* The child cannot be detached while we join it. */
    for (int i = 0; i < 10; i++) {
        ito_thread_t v;
        OK(ito_spawn(&v, NULL, probe_own_join, (void *)3));
        int e = ito_join(v, &r);
        CHECK_EQ(atomic_load(&join_result), EDEADLK);
        int d = atomic_load(&detach_result);
        if (d == EINVAL) {
            OK(e);
            CHECK_EQ((intptr_t)r, 3);
        } else {
            OK(d);
            CHECK(e == EINVAL || e == ESRCH);
            WAIT_UNTIL(ito_detach(v) == ESRCH, 30);   /* frees itself */
        }
    }

    /* The child suspends itself while we join it, and another thread
     * restarts it with a new entry: we get the new entry's result. */
    OK(ito_spawn(&restart_target, NULL, suspends_itself, NULL));
    ito_thread_t rs;
    OK(ito_spawn(&rs, NULL, restarter, NULL));
    OK(ito_join(restart_target, &r));
    CHECK_EQ((intptr_t)r, 42);
    OK(ito_join(rs, NULL));

    /* The child is suspended and resumed by another thread while we join. */
    ito_thread_t sp, su;
    OK(ito_spawn(&sp, NULL, spinner, (void *)8));
    OK(ito_spawn(&su, NULL, suspender, &sp));
    OK(ito_join(sp, &r));
    CHECK_EQ((intptr_t)r, 8);
    OK(ito_join(su, NULL));

    OK(ito_key_delete(key));
    OK(ito_sem_destroy(&gate));
    return 0;
}
