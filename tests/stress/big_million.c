/* SPDX-License-Identifier: MIT */
/* One million threads alive at once under the default limits
 * (vm.max_map_count = 65530): spawn 10^6 threads that each check in and block
 * on one barrier, check that every one of them exists (checked in, not yet
 * released, its handle live), release them all, join them all. Prints the
 * resident memory per thread (VmRSS) for information. Not scaled below 10^6
 * in the plain build: the point is the million (ITO_BIG_THREADS overrides
 * it, for trying it out by hand). */
#include "common.h"

static ito_barrier_t bar;
static atomic_long checked_in, released;

static void *member(void *a)
{
    atomic_fetch_add_explicit(&checked_in, 1, memory_order_relaxed);
    int e = ito_barrier_wait(&bar);
    CHECK(e == 0 || e == ITO_BARRIER_SERIAL);
    atomic_fetch_add_explicit(&released, 1, memory_order_relaxed);
    return a;
}

int main(void)
{
    long n = 1000000;
    const char *env = getenv("ITO_BIG_THREADS");
    if (env && atol(env) > 0)
        n = atol(env);
    ito_thread_t *ts = malloc((size_t)n * sizeof *ts);
    CHECK(ts);
    for (long i = 0; i < n; i++)
        ((volatile uint64_t *)ts)[i] = 0;   /* resident before measuring */
    long rss_handles = test_rss_kib();
    OK(ito_barrier_init(&bar, (unsigned)n + 1));
    uint64_t t0 = ito_now_ns();
    for (long i = 0; i < n; i++)
        OK(ito_spawn(&ts[i], NULL, member, (void *)(intptr_t)(i & 0xffff)));
    uint64_t t1 = ito_now_ns();
    WAIT_UNTIL(atomic_load(&checked_in) == n, 600);
    uint64_t t2 = ito_now_ns();

    /* All of them exist at once: checked in, none released, every handle
     * alive (a live thread's name can be read). */
    long rss = test_rss_kib();
    CHECK_EQ(atomic_load(&released), 0);
    CHECK_EQ(ito_barrier_destroy(&bar), EBUSY);
    char name[ITO_NAME_MAX];
    for (long i = 0; i < n; i++)
        OK(ito_get_name(ts[i], name, sizeof name));
    ito_stats_t st;
    OK(ito_stats_get(&st));
    CHECK(st.spawns >= (uint64_t)n);
    printf("big_million: %ld threads alive at once; spawned in %.2f s, all blocked after %.2f s\n", n,
           (t1 - t0) / 1e9, (t2 - t0) / 1e9);
    printf("big_million: VmRSS %ld KiB (%ld KiB before the threads): %.2f KiB per thread\n", rss,
           rss_handles, (double)(rss - rss_handles) / (double)n);

    /* Release them all and join them all. */
    int e = ito_barrier_wait(&bar);
    CHECK(e == 0 || e == ITO_BARRIER_SERIAL);
    for (long i = 0; i < n; i++) {
        void *r;
        OK(ito_join(ts[i], &r));
        CHECK_EQ((intptr_t)r, i & 0xffff);
    }
    CHECK_EQ(atomic_load(&released), n);
    OK(ito_barrier_destroy(&bar));
    printf("big_million: released and joined in %.2f s\n", (ito_now_ns() - t2) / 1e9);
    free(ts);
    return 0;
}
