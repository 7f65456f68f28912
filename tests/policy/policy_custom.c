/* SPDX-License-Identifier: MIT */
/* A custom scheduling policy (ito/policy.h): a per-vproc LIFO list with no
 * stealing, registered before initialization and chosen with ito_init, runs
 * a fork/join workload and a mutex workload correctly; every decision goes
 * through its table; the node helpers tell it sensible facts. Also: the
 * registry copies the table and its name, accepts a table from an older,
 * smaller header and the longest name, and refuses a second table with the
 * same name. Not run per policy: it picks its own. (Validation errors:
 * policy_register.c.) */
#include <stddef.h>

#include <ito/policy.h>

#include "common.h"

/* ---- the LIFO policy ---- */

struct lifo {
    ito_policy_node_t *top;   /* only the owning vproc touches it */
};

static atomic_long n_init, n_vproc_init, n_enqueue, n_pick, n_pick_hit;
static atomic_long why_counts[6];
static int lifo_nvprocs;

static int lifo_init(int nvprocs, void **shared)
{
    atomic_fetch_add(&n_init, 1);
    lifo_nvprocs = nvprocs;
    *shared = &lifo_nvprocs;
    return 0;
}

static int lifo_vproc_init(ito_policy_vproc_t *vp)
{
    atomic_fetch_add(&n_vproc_init, 1);
    CHECK(vp->shared == &lifo_nvprocs);
    CHECK(vp->index >= 0 && vp->index < vp->count);
    CHECK_EQ(vp->count, lifo_nvprocs);
    CHECK(vp->all[vp->index] == vp);
    struct lifo *l = calloc(1, sizeof *l);
    if (!l)
        return ENOMEM;
    vp->local = l;
    return 0;
}

static void lifo_enqueue(ito_policy_vproc_t *vp, ito_policy_node_t *n, ito_ready_reason_t why)
{
    atomic_fetch_add(&n_enqueue, 1);
    CHECK(why >= ITO_READY_SPAWN && why <= ITO_READY_PREEMPT);
    atomic_fetch_add(&why_counts[why], 1);
    int prio = ito_policy_node_priority(n);
    CHECK(prio >= 0 && prio <= ITO_PRIO_MAX);
    int hint = ito_policy_node_vproc_hint(n);
    CHECK(hint >= -1 && hint < vp->count);
    int last = ito_policy_node_last_vproc(n);
    CHECK(last >= -1 && last < vp->count);
    if (why == ITO_READY_SPAWN)
        CHECK_EQ(last, -1);   /* it never ran */
    CHECK(!ito_thread_equal(ito_policy_node_thread(n), ITO_THREAD_NULL));
    struct lifo *l = vp->local;
    n->next = l->top;
    l->top = n;
}

static ito_policy_node_t *lifo_pick(ito_policy_vproc_t *vp)
{
    atomic_fetch_add(&n_pick, 1);
    struct lifo *l = vp->local;
    ito_policy_node_t *n = l->top;
    if (n) {
        l->top = n->next;
        atomic_fetch_add(&n_pick_hit, 1);
    }
    return n;
}

static const ito_policy_ops_t lifo_ops = {
    .abi = ITO_POLICY_ABI,
    .size = sizeof(ito_policy_ops_t),
    .name = "test-lifo_1",
    .init = lifo_init,
    .vproc_init = lifo_vproc_init,
    .enqueue = lifo_enqueue,
    .pick = lifo_pick,
};

/* ---- a fork/join workload ---- */

static long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

static void *fib(void *a)
{
    intptr_t n = (intptr_t)a;
    if (n < 2)
        return (void *)n;
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, fib, (void *)(n - 1)));
    void *y = fib((void *)(n - 2));
    void *x;
    OK(ito_join(t, &x));
    return (void *)((intptr_t)x + (intptr_t)y);
}

static ito_mutex_t m = ITO_MUTEX_INIT;
static long counter;
static void *adder(void *a)
{
    for (int i = 0; i < 1000; i++) {
        OK(ito_mutex_lock(&m));
        counter++;
        if (i % 10 == 0)
            ito_yield();
        OK(ito_mutex_unlock(&m));
    }
    return NULL;
}

int main(void)
{
    /* Register the real one before initialization. The registry copies the
     * table (its name too): change our copy afterwards to prove it. */
    static ito_policy_ops_t mine;
    static char name[ITO_POLICY_NAME_MAX];
    mine = lifo_ops;
    strcpy(name, lifo_ops.name);
    mine.name = name;
    OK(ito_policy_register(&mine));
    CHECK_EQ(ito_policy_register(&lifo_ops), EEXIST);
    strcpy(name, "scribbled");

    /* An older header's table: no take/steal/tick fields at all. */
    static ito_policy_ops_t old;
    old = lifo_ops;
    old.name = "old-header";
    old.size = (uint32_t)(offsetof(ito_policy_ops_t, pick) + sizeof old.pick);
    OK(ito_policy_register(&old));
    CHECK_EQ(ito_policy_register(&old), EEXIST);

    /* The longest name allowed. */
    static char longest[ITO_POLICY_NAME_MAX];
    memset(longest, 'z', ITO_POLICY_NAME_MAX - 1);
    longest[ITO_POLICY_NAME_MAX - 1] = 0;
    static ito_policy_ops_t lng;
    lng = lifo_ops;
    lng.name = longest;
    OK(ito_policy_register(&lng));

    /* Select ours. */
    ito_config_t cfg = ITO_CONFIG_INIT;
    cfg.vprocs = 2;
    cfg.policy = "test-lifo_1";
    OK(ito_init(&cfg));
    CHECK(strcmp(ito_policy_name(), "test-lifo_1") == 0);
    CHECK_EQ(atomic_load(&n_init), 1);
    CHECK_EQ(atomic_load(&n_vproc_init), 2);

    void *r;
    ito_thread_t t;
    int depth = (int)(test_scaled(10) >= 10 ? 18 : 14);
    OK(ito_spawn(&t, NULL, fib, (void *)(intptr_t)depth));
    OK(ito_join(t, &r));
    CHECK_EQ((intptr_t)r, fib_seq(depth));

    enum { N = 8 };
    ito_thread_t ts[N];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, adder, NULL));
    for (int i = 0; i < N; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(counter, N * 1000);

    /* Everything went through our table. */
    CHECK(atomic_load(&n_enqueue) > 1000);
    CHECK(atomic_load(&n_pick_hit) > 1000);
    CHECK(atomic_load(&why_counts[ITO_READY_SPAWN]) >= N);
    CHECK(atomic_load(&why_counts[ITO_READY_YIELD]) > 0);
    ito_stats_t st;
    OK(ito_stats_get(&st));
    CHECK_EQ(st.steals, 0);   /* no steal op: nothing is ever stolen */
    printf("lifo policy: %ld enqueues, %ld picks (%ld found a thread)\n", atomic_load(&n_enqueue),
           atomic_load(&n_pick), atomic_load(&n_pick_hit));
    return 0;
}
