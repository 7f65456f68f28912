/* SPDX-License-Identifier: MIT */
/* ito_once: the function runs exactly once under contention from ito
 * threads and foreign kernel threads, everyone returns only after it has
 * finished, EDEADLK when the function calls ito_once on the same object,
 * EINVAL for NULL arguments. */
#include <pthread.h>

#include "common.h"

static ito_once_t once = ITO_ONCE_INIT;
static atomic_int runs;
static atomic_int finished;

static void init_fn(void)
{
    atomic_fetch_add(&runs, 1);
    /* Take a while, switching, so that the others pile up waiting. */
    for (int i = 0; i < 5; i++) {
        ito_sleep_ns(1000000);
        ito_yield();
    }
    atomic_store(&finished, 1);
}

static void *caller(void *a)
{
    OK(ito_once(&once, init_fn));
    CHECK_EQ(atomic_load(&finished), 1);   /* returned only after fn ended */
    OK(ito_once(&once, init_fn));          /* later calls: nothing to do */
    return NULL;
}

static ito_once_t self_once = ITO_ONCE_INIT;
static atomic_int inner_result = -1;
static void recursive_fn(void)
{
    atomic_store(&inner_result, ito_once(&self_once, recursive_fn));
}

static atomic_int plain_runs;
static void plain_fn(void) { atomic_fetch_add(&plain_runs, 1); }

static void *recursive_caller(void *a)
{
    OK(ito_once(&self_once, recursive_fn));
    return NULL;
}

int main(void)
{
    enum { N = 32, NF = 3 };
    int rounds = (int)test_scaled(20);
    for (int r = 0; r < rounds; r++) {
        memset(&once, 0, sizeof once);   /* all-zero equals ITO_ONCE_INIT */
        atomic_store(&runs, 0);
        atomic_store(&finished, 0);
        ito_thread_t ts[N];
        pthread_t ps[NF];
        for (int i = 0; i < N; i++)
            OK(ito_spawn(&ts[i], NULL, caller, NULL));
        for (int i = 0; i < NF; i++)
            CHECK_EQ(pthread_create(&ps[i], NULL, caller, NULL), 0);
        for (int i = 0; i < N; i++)
            OK(ito_join(ts[i], NULL));
        for (int i = 0; i < NF; i++)
            CHECK_EQ(pthread_join(ps[i], NULL), 0);
        CHECK_EQ(atomic_load(&runs), 1);
    }

    /* fn calling ito_once on its own object: EDEADLK inside, 0 outside. */
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, recursive_caller, NULL));
    OK(ito_join(t, NULL));
    CHECK_EQ(atomic_load(&inner_result), EDEADLK);
    OK(ito_once(&self_once, recursive_fn));   /* done now */

    /* ... also from a foreign kernel thread */
    memset(&self_once, 0, sizeof self_once);
    atomic_store(&inner_result, -1);
    pthread_t p;
    CHECK_EQ(pthread_create(&p, NULL, recursive_caller, NULL), 0);
    CHECK_EQ(pthread_join(p, NULL), 0);
    CHECK_EQ(atomic_load(&inner_result), EDEADLK);

    /* NULL arguments. */
    ito_once_t o = ITO_ONCE_INIT;
    CHECK_EQ(ito_once(NULL, plain_fn), EINVAL);
    CHECK_EQ(ito_once(&o, NULL), EINVAL);
    OK(ito_once(&o, plain_fn));
    OK(ito_once(&o, plain_fn));
    CHECK_EQ(atomic_load(&plain_runs), 1);
    return 0;
}
