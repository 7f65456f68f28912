/* SPDX-License-Identifier: MIT */
/* Futures: many touchers (ito and foreign) get the value, ito_future_ready
 * before and after, destroy then ESRCH (touch, ready, destroy), touches
 * waiting during destroy still get the value, EDEADLK when the future's own
 * thread touches it, futures are not joinable or detachable. */
#include <pthread.h>

#include "common.h"

static ito_sem_t gate;
static void *compute(void *a)
{
    OK(ito_sem_wait(&gate));
    return (void *)((intptr_t)a * 2);
}

static ito_future_t shared_f;
static atomic_int touched;
static void *toucher(void *a)
{
    void *v = NULL;
    OK(ito_future_touch(shared_f, &v));
    CHECK_EQ((intptr_t)v, 42);
    OK(ito_future_touch(shared_f, NULL));
    atomic_fetch_add(&touched, 1);
    return NULL;
}

static atomic_int announced, value_touchers, late_touchers;
static void *toucher_maybe_late(void *a)
{
    void *v = NULL;
    atomic_fetch_add(&announced, 1);
    int e = ito_future_touch(shared_f, &v);
    if (e == 0) {
        CHECK_EQ((intptr_t)v, 42);
        atomic_fetch_add(&value_touchers, 1);
    } else {
        CHECK_EQ(e, ESRCH);
        atomic_fetch_add(&late_touchers, 1);
    }
    return NULL;
}

static ito_future_t self_f;
static ito_sem_t self_ready;
static void *touch_self(void *a)
{
    OK(ito_sem_wait(&self_ready));
    int e = ito_future_touch(self_f, NULL);
    CHECK(!ito_future_ready(self_f));
    return (void *)(intptr_t)e;
}

static void *ret_arg(void *a) { return a; }

int main(void)
{
    OK(ito_sem_init(&gate, 0));
    CHECK_EQ(ito_future_spawn(NULL, NULL, ret_arg, NULL), EINVAL);
    ito_future_t f;
    CHECK_EQ(ito_future_spawn(&f, NULL, NULL, NULL), EINVAL);

    /* Many touchers, ito and foreign, all blocked before the value exists. */
    enum { N = 64, NF = 3 };
    OK(ito_future_spawn(&shared_f, NULL, compute, (void *)21));
    CHECK(!ito_future_ready(shared_f));
    ito_thread_t ts[N];
    pthread_t ps[NF];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, toucher, NULL));
    for (int i = 0; i < NF; i++)
        CHECK_EQ(pthread_create(&ps[i], NULL, toucher, NULL), 0);
    ito_sleep_ns(10000000);
    CHECK_EQ(atomic_load(&touched), 0);
    CHECK(!ito_future_ready(shared_f));
    OK(ito_sem_post(&gate));
    for (int i = 0; i < N; i++)
        OK(ito_join(ts[i], NULL));
    for (int i = 0; i < NF; i++)
        CHECK_EQ(pthread_join(ps[i], NULL), 0);
    CHECK_EQ(atomic_load(&touched), N + NF);
    CHECK(ito_future_ready(shared_f));
    void *v;
    OK(ito_future_touch(shared_f, &v));
    CHECK_EQ((intptr_t)v, 42);
    /* A future is not a joinable thread. */
    CHECK_EQ(ito_join((ito_thread_t){ shared_f.id }, NULL), EINVAL);
    CHECK_EQ(ito_detach((ito_thread_t){ shared_f.id }), EINVAL);
    OK(ito_future_destroy(shared_f));
    CHECK_EQ(ito_future_touch(shared_f, &v), ESRCH);
    CHECK(!ito_future_ready(shared_f));
    CHECK_EQ(ito_future_destroy(shared_f), ESRCH);
    CHECK_EQ(ito_join((ito_thread_t){ shared_f.id }, NULL), ESRCH);

    /* Destroyed while touchers wait: they still get the value; later touches
     * get ESRCH; the computation is not cancelled. Whether a toucher is
     * already waiting cannot be observed: they announce themselves just
     * before touching and main waits a while, so nearly all of them wait. A
     * late one gets ESRCH, which is right too; demand the value from most. */
    atomic_store(&late_touchers, 0);
    atomic_store(&value_touchers, 0);
    atomic_store(&announced, 0);
    OK(ito_future_spawn(&shared_f, NULL, compute, (void *)21));
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, toucher_maybe_late, NULL));
    WAIT_UNTIL(atomic_load(&announced) == N, 30);
    ito_sleep_ns(20000000);
    ito_future_t dead = shared_f;
    OK(ito_future_destroy(dead));
    CHECK_EQ(ito_future_touch(dead, NULL), ESRCH);
    CHECK_EQ(ito_future_destroy(dead), ESRCH);
    OK(ito_sem_post(&gate));
    for (int i = 0; i < N; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(atomic_load(&value_touchers) + atomic_load(&late_touchers), N);
    if (atomic_load(&value_touchers) < N / 2)
        fprintf(stderr, "only %d of %d waiting touchers got the value\n", atomic_load(&value_touchers), N);
    CHECK(atomic_load(&value_touchers) >= N / 2);

    /* Destroyed before it ran at all: it still runs, and frees itself. */
    OK(ito_future_spawn(&f, NULL, compute, (void *)5));
    OK(ito_future_destroy(f));
    CHECK(!ito_future_ready(f));
    OK(ito_sem_post(&gate));
    unsigned left = 1;
    WAIT_UNTIL((ito_sem_get_value(&gate, &left), left == 0), 30);

    /* ready turns true by itself. */
    OK(ito_future_spawn(&f, NULL, ret_arg, (void *)9));
    WAIT_UNTIL(ito_future_ready(f), 30);
    OK(ito_future_touch(f, &v));
    CHECK_EQ((intptr_t)v, 9);
    OK(ito_future_destroy(f));

    /* EDEADLK: the future's own thread touches it. */
    OK(ito_sem_init(&self_ready, 0));
    OK(ito_future_spawn(&self_f, NULL, touch_self, NULL));
    OK(ito_sem_post(&self_ready));
    OK(ito_future_touch(self_f, &v));
    CHECK_EQ((intptr_t)v, EDEADLK);
    OK(ito_future_destroy(self_f));

    /* Forged handles and thread handles. */
    ito_future_t forged = { 12345 };
    CHECK_EQ(ito_future_touch(forged, &v), ESRCH);
    CHECK(!ito_future_ready(forged));
    CHECK_EQ(ito_future_destroy(forged), ESRCH);
    CHECK_EQ(ito_future_touch((ito_future_t){ 0 }, &v), ESRCH);
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, compute, NULL));
    CHECK_EQ(ito_future_touch((ito_future_t){ t.id }, &v), ESRCH);
    CHECK(!ito_future_ready((ito_future_t){ t.id }));
    CHECK_EQ(ito_future_destroy((ito_future_t){ t.id }), ESRCH);
    OK(ito_sem_post(&gate));
    OK(ito_join(t, NULL));

    /* With attributes: the detached flag is ignored. */
    ito_attr_t a;
    OK(ito_attr_init(&a));
    OK(ito_attr_set_detached(&a, true));
    OK(ito_attr_set_name(&a, "future"));
    OK(ito_future_spawn(&f, &a, ret_arg, (void *)11));
    OK(ito_future_touch(f, &v));
    CHECK_EQ((intptr_t)v, 11);
    OK(ito_future_touch(f, &v));
    CHECK_EQ((intptr_t)v, 11);
    OK(ito_future_destroy(f));

    /* Many futures, touched in random order. */
    int nf = (int)test_scaled(5000);
    ito_future_t *fs = malloc((size_t)nf * sizeof *fs);
    CHECK(fs);
    for (int i = 0; i < nf; i++)
        OK(ito_future_spawn(&fs[i], NULL, ret_arg, (void *)(intptr_t)i));
    uint64_t seed = 3;
    for (int i = 0; i < nf; i++) {
        int k = (int)(test_rand(&seed) % (uint64_t)nf);
        OK(ito_future_touch(fs[k], &v));
        CHECK_EQ((intptr_t)v, k);
    }
    for (int i = 0; i < nf; i++)
        OK(ito_future_destroy(fs[i]));
    free(fs);
    OK(ito_sem_destroy(&gate));
    OK(ito_sem_destroy(&self_ready));
    return 0;
}
