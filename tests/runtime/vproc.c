/* SPDX-License-Identifier: MIT */
/* Vprocs: ito_vproc_count, ito_vproc_self (from ito threads, main and foreign
 * kernel threads), ito_policy_name, and the preferred vproc of a thread: it
 * starts there and goes back there when woken, unless that vproc is busy.
 * Run with and without ITO_VPROCS. */
#include <pthread.h>
#include <sched.h>

#include "common.h"

static int nvp;

static void *where(void *a)
{
    int v = ito_vproc_self();
    CHECK(v >= 0 && v < nvp);
    for (int i = 0; i < 10; i++) {
        ito_yield();
        v = ito_vproc_self();
        CHECK(v >= 0 && v < nvp);
    }
    return (void *)(intptr_t)v;
}

static void *foreign(void *a)
{
    (void)a;
    CHECK_EQ(ito_vproc_self(), -1);
    CHECK_EQ(ito_vproc_count(), nvp);
    return NULL;
}

static void *start_vproc(void *a)
{
    __atomic_store_n((int *)a, ito_vproc_self(), __ATOMIC_RELEASE);
    return NULL;
}

/* Woken again and again: record where it runs after each wake-up. */
static ito_sem_t wake;
static int woken_on[64];
static void *sleeper(void *a)
{
    for (int i = 0; i < 64; i++) {
        OK(ito_sem_wait(&wake));
        woken_on[i] = ito_vproc_self();
    }
    return NULL;
}

int main(void)
{
    /* Before ito pins this thread to a CPU. */
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    /* Like every ito call, the first ito_vproc_self initializes ito: main
     * becomes an ito thread on vproc 0 (ito.h). */
    CHECK_EQ(ito_vproc_self(), 0);
    nvp = ito_vproc_count();
    CHECK(nvp >= 1);
    CHECK_EQ(ito_vproc_count(), nvp);
    const char *env = getenv("ITO_VPROCS");
    if (env && atoi(env) > 0)
        CHECK_EQ(nvp, atoi(env));
    else
        CHECK(nvp <= CPU_COUNT(&set));
    /* main became an ito thread on vproc 0 at initialization. */
    CHECK_EQ(ito_vproc_self(), 0);

    const char *pol = ito_policy_name();
    CHECK(pol != NULL);
    const char *want = getenv("ITO_POLICY");
    CHECK(strcmp(pol, want && *want ? want : "ws") == 0);

    enum { N = 64 };
    ito_thread_t ts[N];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, where, NULL));
    for (int i = 0; i < N; i++)
        OK(ito_join(ts[i], NULL));

    pthread_t p;
    CHECK_EQ(pthread_create(&p, NULL, foreign, NULL), 0);
    CHECK_EQ(pthread_join(p, NULL), 0);

    /* A preferred vproc: the thread starts there when that vproc is idle.
     * The policy may move it if the vproc is busy, and the machine is
     * shared, so demand it only once out of 20 tries per vproc. */
    ito_attr_t a;
    OK(ito_attr_init(&a));
    for (int v = 0; v < nvp; v++) {
        OK(ito_attr_set_vproc(&a, v));
        int hits = 0, last = -1;
        for (int k = 0; k < 20; k++) {
            ito_thread_t t;
            int on = -2;
            OK(ito_spawn(&t, &a, start_vproc, &on));
            /* Keep this vproc busy a little (no ito call, a time-slice
             * aside), so that the preferred one, idle, is not raced by our
             * join taking the thread here: under fifo's one queue, whichever vproc looks
             * first runs it, and a woken vproc on a loaded machine (TSan)
             * lost every race to the joiner in 20 tries once. */
            uint64_t until = ito_now_ns() + 5000000;
            while (v != ito_vproc_self() && __atomic_load_n(&on, __ATOMIC_ACQUIRE) == -2 && ito_now_ns() < until)
                ;
            OK(ito_join(t, NULL));
            CHECK(on >= 0 && on < nvp);
            hits += on == v;
            last = on;
        }
        if (!hits)
            fprintf(stderr, "a thread preferring vproc %d never started there in 20 tries "
                            "(last on vproc %d)\n", v, last);
        CHECK(hits > 0);
    }

    /* ... and goes back there whenever it is woken — under a policy that
     * keeps a queue per vproc. "fifo" and "prio-shared" keep one queue for
     * all vprocs, and a thread runs on whichever vproc takes it first (see
     * ito_attr_set_vproc). */
    if (strcmp(ito_policy_name(), "fifo") == 0 || strcmp(ito_policy_name(), "prio-shared") == 0)
        return 0;
    OK(ito_sem_init(&wake, 0));
    int home = nvp - 1;
    OK(ito_attr_set_vproc(&a, home));
    ito_thread_t t;
    OK(ito_spawn(&t, &a, sleeper, NULL));
    for (int i = 0; i < 64; i++) {
        ito_sleep_ns(200000);
        OK(ito_sem_post(&wake));
    }
    OK(ito_join(t, NULL));
    int hits = 0;
    for (int i = 0; i < 64; i++) {
        CHECK(woken_on[i] >= 0 && woken_on[i] < nvp);
        hits += woken_on[i] == home;
    }
    if (hits < 40)
        fprintf(stderr, "a thread preferring vproc %d ran there after only %d of 64 wake-ups\n",
                home, hits);
    CHECK(hits >= 40);
    OK(ito_sem_destroy(&wake));
    return 0;
}
