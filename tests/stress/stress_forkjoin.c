/* SPDX-License-Identifier: MIT */
/* Stress: random fork/join trees totalling 10^6 threads (scaled). Each node
 * is told how many threads its subtree must contain; it splits the rest among
 * 1-4 children at random and either spawns them all before joining them
 * (wide) or spawns and joins them one at a time (deep); a few nodes detach a
 * child and wait for it through a semaphore instead. Every node returns the
 * size of its subtree: the root must get exactly the total, and the spawn
 * counter must agree. */
#include "common.h"

struct node {
    long n;          /* threads in this subtree, this one included */
    uint64_t seed;
    ito_sem_t *done; /* detached children post here */
    long *result;    /* detached children store their count here */
};

static atomic_long executed;

static void *tree(void *a);

static void *detached_tree(void *a)
{
    struct node *nd = a;
    long r = (long)(intptr_t)tree(nd);
    *nd->result = r;
    OK(ito_sem_post(nd->done));
    return NULL;
}

static void *tree(void *a)
{
    struct node *me = a;
    atomic_fetch_add_explicit(&executed, 1, memory_order_relaxed);
    long rest = me->n - 1;
    if (rest == 0)
        return (void *)1;
    uint64_t seed = me->seed;
    int k = 1 + (int)(test_rand(&seed) % 4);
    if (k > rest)
        k = (int)rest;
    /* Split `rest` into k positive parts. */
    long parts[4];
    long left = rest;
    for (int i = 0; i < k - 1; i++) {
        long max = left - (k - 1 - i);
        parts[i] = 1 + (long)(test_rand(&seed) % (uint64_t)max);
        left -= parts[i];
    }
    parts[k - 1] = left;
    struct node kids[4];
    ito_thread_t ts[4];
    long detached_result[4];
    ito_sem_t done;
    bool use_sem = false;
    for (int i = 0; i < k; i++)
        kids[i] = (struct node){ parts[i], test_rand(&seed), &done, &detached_result[i] };
    long total = 1;
    switch (test_rand(&seed) % 8) {
    case 0: case 1: case 2: /* wide */
        for (int i = 0; i < k; i++)
            OK(ito_spawn(&ts[i], NULL, tree, &kids[i]));
        for (int i = 0; i < k; i++) {
            void *r;
            OK(ito_join(ts[i], &r));
            total += (long)(intptr_t)r;
        }
        break;
    case 3: { /* detached children, counted through a semaphore */
        OK(ito_sem_init(&done, 0));
        use_sem = true;
        ito_attr_t at;
        OK(ito_attr_init(&at));
        OK(ito_attr_set_detached(&at, true));
        for (int i = 0; i < k; i++)
            OK(ito_spawn(NULL, &at, detached_tree, &kids[i]));
        for (int i = 0; i < k; i++)
            OK(ito_sem_wait(&done));
        for (int i = 0; i < k; i++)
            total += detached_result[i];
        break;
    }
    default: /* deep */
        for (int i = 0; i < k; i++) {
            void *r;
            OK(ito_spawn(&ts[i], NULL, tree, &kids[i]));
            if (i % 2)
                ito_yield();
            OK(ito_join(ts[i], &r));
            total += (long)(intptr_t)r;
        }
        break;
    }
    if (use_sem)
        OK(ito_sem_destroy(&done));
    return (void *)(intptr_t)total;
}

int main(void)
{
    long total = test_scaled(1000000);
#if defined(__SANITIZE_THREAD__)
    /* A TSan fiber per thread makes each spawn costly (and with "fifo" most
     * of a tree is alive at once): a tenth more. */
    total /= 10;
#endif
    ito_stats_t s0, s1;
    OK(ito_stats_get(&s0));
    uint64_t t0 = ito_now_ns();
    /* Several trees at once, from main, one after the other. */
    enum { TREES = 4 };
    struct node roots[TREES];
    ito_thread_t rt[TREES];
    long per = total / TREES;
    for (int i = 0; i < TREES; i++) {
        roots[i] = (struct node){ per, 0x1234567ull * (uint64_t)(i + 1), NULL, NULL };
        OK(ito_spawn(&rt[i], NULL, tree, &roots[i]));
    }
    for (int i = 0; i < TREES; i++) {
        void *r;
        OK(ito_join(rt[i], &r));
        CHECK_EQ((long)(intptr_t)r, per);
    }
    OK(ito_stats_get(&s1));
    CHECK_EQ(atomic_load(&executed), TREES * per);
    CHECK(s1.spawns - s0.spawns >= (uint64_t)(TREES * per));
    printf("stress_forkjoin: %ld threads in %.2f s, RSS %ld KiB\n", TREES * per,
           (ito_now_ns() - t0) / 1e9, test_rss_kib());
    return 0;
}
