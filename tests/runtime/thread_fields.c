/* SPDX-License-Identifier: MIT */
/* Per-thread fields through handles: priority, the data word and the name,
 * for oneself and for other threads, with their errno values (EINVAL,
 * ERANGE, ESRCH for stale and forged handles). */
#include <pthread.h>

#include "common.h"

static ito_sem_t go;
static void *wait_go(void *a)
{
    OK(ito_sem_wait(&go));
    return a;
}

static void *data_self(void *a)
{
    ito_thread_t me = ito_self();
    OK(ito_sem_wait(&go));
    CHECK(ito_get_data(me) == a);   /* set by the spawner before go */
    OK(ito_set_data(me, (void *)0x5151));
    for (int i = 0; i < 10; i++) {
        ito_yield();
        CHECK(ito_get_data(ito_self()) == (void *)0x5151);
    }
    return ito_get_data(me);
}

static void *data_fresh(void *a)
{
    return ito_get_data(ito_self());   /* a new thread starts with NULL */
}

static void *name_self(void *a)
{
    char buf[ITO_NAME_MAX];
    OK(ito_set_name(ito_self(), "renamed"));
    ito_yield();
    OK(ito_get_name(ito_self(), buf, sizeof buf));
    CHECK(strcmp(buf, "renamed") == 0);
    return NULL;
}

static void test_priority(void)
{
    ito_thread_t me = ito_self();
    int p = -1;
    OK(ito_get_priority(me, &p));
    CHECK(p >= 0 && p <= ITO_PRIO_MAX);
    OK(ito_set_priority(me, 0));
    OK(ito_get_priority(me, &p));
    CHECK_EQ(p, 0);
    OK(ito_set_priority(me, ITO_PRIO_MAX));
    OK(ito_get_priority(me, &p));
    CHECK_EQ(p, ITO_PRIO_MAX);
    CHECK_EQ(ito_set_priority(me, -1), EINVAL);
    CHECK_EQ(ito_set_priority(me, ITO_PRIO_MAX + 1), EINVAL);
    OK(ito_get_priority(me, &p));
    CHECK_EQ(p, ITO_PRIO_MAX);   /* unchanged by the rejected values */
    OK(ito_set_priority(me, ITO_PRIO_DEFAULT));

    /* Another thread: default, then changed while it waits. */
    OK(ito_sem_init(&go, 0));
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, wait_go, NULL));
    OK(ito_get_priority(t, &p));
    CHECK_EQ(p, ITO_PRIO_DEFAULT);
    for (int prio = 0; prio <= ITO_PRIO_MAX; prio++) {
        OK(ito_set_priority(t, prio));
        OK(ito_get_priority(t, &p));
        CHECK_EQ(p, prio);
    }
    CHECK_EQ(ito_set_priority(t, 100), EINVAL);
    OK(ito_sem_post(&go));
    OK(ito_join(t, NULL));

    /* Stale and forged handles. */
    p = 77;
    CHECK_EQ(ito_get_priority(t, &p), ESRCH);
    CHECK_EQ(ito_set_priority(t, 1), ESRCH);
    CHECK_EQ(ito_get_priority(TEST_FORGED_THREAD, &p), ESRCH);
    CHECK_EQ(ito_set_priority(TEST_FORGED_THREAD, 1), ESRCH);
    CHECK_EQ(ito_get_priority(ITO_THREAD_NULL, &p), ESRCH);
    CHECK_EQ(p, 77);
}

static void test_data(void)
{
    ito_thread_t me = ito_self();
    OK(ito_set_data(me, (void *)0xabc));
    CHECK(ito_get_data(me) == (void *)0xabc);
    OK(ito_set_data(me, NULL));
    CHECK(ito_get_data(me) == NULL);

    ito_thread_t t;
    void *r;
    OK(ito_spawn(&t, NULL, data_fresh, NULL));
    OK(ito_join(t, &r));
    CHECK(r == NULL);

    /* Set by another thread before it runs (or while it waits). */
    OK(ito_sem_init(&go, 0));
    ito_thread_t u;
    OK(ito_spawn(&u, NULL, wait_go, NULL));
    OK(ito_set_data(u, (void *)0x77));
    CHECK(ito_get_data(u) == (void *)0x77);
    OK(ito_sem_post(&go));
    OK(ito_join(u, NULL));

    OK(ito_spawn(&t, NULL, data_self, (void *)0x99));
    OK(ito_set_data(t, (void *)0x99));
    OK(ito_sem_post(&go));
    OK(ito_join(t, &r));
    CHECK(r == (void *)0x5151);

    /* Stale and forged: ESRCH and NULL. */
    CHECK_EQ(ito_set_data(t, (void *)1), ESRCH);
    CHECK(ito_get_data(t) == NULL);
    CHECK_EQ(ito_set_data(TEST_FORGED_THREAD, (void *)1), ESRCH);
    CHECK(ito_get_data(TEST_FORGED_THREAD) == NULL);
    CHECK_EQ(ito_set_data(ITO_THREAD_NULL, (void *)1), ESRCH);
    CHECK(ito_get_data(ITO_THREAD_NULL) == NULL);

    /* A reused descriptor does not inherit the data word. */
    for (int i = 0; i < 50; i++) {
        OK(ito_spawn(&t, NULL, wait_go, NULL));
        OK(ito_set_data(t, (void *)0x1));
        OK(ito_sem_post(&go));
        OK(ito_join(t, NULL));
        OK(ito_spawn(&t, NULL, data_fresh, NULL));
        OK(ito_join(t, &r));
        /* Either it read NULL (fresh), never the previous thread's 0x1. */
        CHECK(r == NULL);
    }
    OK(ito_sem_destroy(&go));
}

static void *foreign_fields(void *a)
{
    ito_thread_t t = *(ito_thread_t *)a;
    /* Foreign kernel threads may use handles too. */
    OK(ito_set_priority(t, 3));
    int p;
    OK(ito_get_priority(t, &p));
    CHECK_EQ(p, 3);
    OK(ito_set_data(t, (void *)0xf0));
    CHECK(ito_get_data(t) == (void *)0xf0);
    OK(ito_set_name(t, "from-pthread"));
    char buf[ITO_NAME_MAX];
    OK(ito_get_name(t, buf, sizeof buf));
    CHECK(strcmp(buf, "from-pthread") == 0);
    /* A foreign thread has no ito handle of its own. */
    CHECK(ito_get_data(ito_self()) == NULL);
    CHECK_EQ(ito_set_data(ito_self(), (void *)1), ESRCH);
    return NULL;
}

static void test_names(void)
{
    char buf[ITO_NAME_MAX];
    ito_thread_t me = ito_self();
    OK(ito_set_name(me, "main"));
    OK(ito_get_name(me, buf, sizeof buf));
    CHECK(strcmp(buf, "main") == 0);

    char longest[ITO_NAME_MAX], too_long[ITO_NAME_MAX + 8];
    memset(longest, 'a', ITO_NAME_MAX - 1);
    longest[ITO_NAME_MAX - 1] = 0;
    memset(too_long, 'b', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = 0;
    OK(ito_set_name(me, longest));
    OK(ito_get_name(me, buf, sizeof buf));
    CHECK(strcmp(buf, longest) == 0);
    CHECK_EQ(ito_set_name(me, too_long), ERANGE);
    too_long[ITO_NAME_MAX] = 0;   /* exactly ITO_NAME_MAX chars + NUL */
    CHECK_EQ(ito_set_name(me, too_long), ERANGE);
    OK(ito_get_name(me, buf, sizeof buf));
    CHECK(strcmp(buf, longest) == 0);   /* unchanged */
    /* The buffer must hold the name and its NUL. */
    CHECK_EQ(ito_get_name(me, buf, ITO_NAME_MAX - 1), ERANGE);
    CHECK_EQ(ito_get_name(me, buf, 1), ERANGE);
    OK(ito_set_name(me, "ab"));
    char small[3];
    OK(ito_get_name(me, small, sizeof small));
    CHECK(strcmp(small, "ab") == 0);
    CHECK_EQ(ito_get_name(me, small, 2), ERANGE);
    OK(ito_set_name(me, ""));
    OK(ito_get_name(me, small, 1));
    CHECK_EQ(small[0], 0);

    /* A thread renames itself; others see it. */
    ito_thread_t t;
    OK(ito_sem_init(&go, 0));
    ito_attr_t a;
    OK(ito_attr_init(&a));
    OK(ito_attr_set_name(&a, "spawned-as"));
    OK(ito_spawn(&t, &a, wait_go, NULL));
    OK(ito_get_name(t, buf, sizeof buf));
    CHECK(strcmp(buf, "spawned-as") == 0);
    OK(ito_set_name(t, "renamed-by-main"));
    OK(ito_get_name(t, buf, sizeof buf));
    CHECK(strcmp(buf, "renamed-by-main") == 0);

    /* Foreign kernel threads operate on ito handles. */
    pthread_t p;
    CHECK_EQ(pthread_create(&p, NULL, foreign_fields, &t), 0);
    CHECK_EQ(pthread_join(p, NULL), 0);
    OK(ito_sem_post(&go));
    OK(ito_join(t, NULL));

    OK(ito_spawn(&t, NULL, name_self, NULL));
    OK(ito_join(t, NULL));
    /* A thread spawned without a name has the empty name. */
    OK(ito_spawn(&t, NULL, wait_go, NULL));
    strcpy(buf, "junk");
    OK(ito_get_name(t, buf, sizeof buf));
    CHECK_EQ(buf[0], 0);
    OK(ito_sem_post(&go));
    OK(ito_join(t, NULL));

    CHECK_EQ(ito_set_name(t, "x"), ESRCH);
    CHECK_EQ(ito_get_name(t, buf, sizeof buf), ESRCH);
    CHECK_EQ(ito_set_name(TEST_FORGED_THREAD, "x"), ESRCH);
    CHECK_EQ(ito_get_name(TEST_FORGED_THREAD, buf, sizeof buf), ESRCH);
    CHECK_EQ(ito_get_name(ITO_THREAD_NULL, buf, sizeof buf), ESRCH);
    OK(ito_sem_destroy(&go));
}

int main(void)
{
    test_priority();
    test_data();
    test_names();
    return 0;
}
