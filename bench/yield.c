/* SPDX-License-Identifier: MIT */
/*
 * yield — two threads on one processor yield to each other; N yields in all
 * ([STH Table 2], "100,000 thread-yields"). Prints ns per yield.
 *
 *   yield --impl ito|pthread [--n YIELDS] [--vprocs V]
 *
 * ito: by default ito runs on 1 vproc. With --vprocs V > 1 both threads are
 * placed on vproc 0 (ito_attr_set_vproc) and the other vprocs stay idle; the
 * policy may then move a yielding thread to an idle vproc, and a yield with
 * no other thread to run costs little, so "no_switch" below says how often
 * that happened.
 * pthread: both threads pinned to the first usable CPU, calling sched_yield().
 *
 * Each thread records, after each of its yields, whether the other thread ran
 * in between ("no_switch" counts the yields after which it had not): a yield
 * that switches nothing is not the operation being measured.
 * A warm-up of N/10 yields precedes the timed run.
 */
#include "common.h"

#include <stdatomic.h>

static long per_thread;
static _Atomic int last = -1;         /* who ran last */
static _Atomic long no_switch;
static bool use_ito;

static void *yielder(void *arg)
{
    int me = (int)(intptr_t)arg;
    long ns = 0;
    for (long i = 0; i < per_thread; i++) {
        atomic_store_explicit(&last, me, memory_order_relaxed);
        if (use_ito)
            ito_yield();
        else
            sched_yield();
        if (atomic_load_explicit(&last, memory_order_relaxed) == me)
            ns++;
    }
    atomic_fetch_add(&no_switch, ns);
    return NULL;
}

static uint64_t run(long n, int vprocs)
{
    per_thread = n / 2;
    atomic_store(&no_switch, 0);
    uint64_t t0 = bench_now_ns();
    if (use_ito) {
        ito_attr_t a;
        CHECK0(ito_attr_init(&a));
        if (vprocs > 1)
            CHECK0(ito_attr_set_vproc(&a, 0));
        ito_thread_t t[2];
        for (int i = 0; i < 2; i++)
            CHECK0(ito_spawn(&t[i], &a, yielder, (void *)(intptr_t)i));
        for (int i = 0; i < 2; i++)
            CHECK0(ito_join(t[i], NULL));
    } else {
        pthread_attr_t a;
        attr_pinned(&a, cpu_nth(0));
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            CHECK0(pthread_create(&t[i], &a, yielder, (void *)(intptr_t)i));
        for (int i = 0; i < 2; i++)
            CHECK0(pthread_join(t[i], NULL));
        pthread_attr_destroy(&a);
    }
    return bench_now_ns() - t0;
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--n", "--vprocs", "--cpus", NULL };
    bench_exp = "yield";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    use_ito = strcmp(bench_impl, "ito") == 0;
    if (!use_ito && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito or pthread");
    long n = (long)arg_int(argc, argv, "--n", 100000);
    if (n < 2)
        bench_fail("--n must be at least 2");
    n &= ~1L;
    int vprocs = 1;
    if (use_ito) {
        vprocs = (int)arg_int(argc, argv, "--vprocs", arg_int(argc, argv, "--cpus", 1));
        if (vprocs < 1 || vprocs > cpus_usable())
            bench_fail("--vprocs %d: between 1 and %d here", vprocs, cpus_usable());
        ito_start(vprocs);
    }
    run(n / 10 + 2, vprocs);
    ito_stats_t s0, s1;
    if (use_ito)
        ito_stats_get(&s0);
    uint64_t ns = run(n, vprocs);
    json_begin(bench_exp, bench_impl);
    if (use_ito) {
        ito_stats_get(&s1);
        json_common_ito();
        json_ito_stats(&s0, &s1);
    } else {
        json_common_pthread(1);
        json_int("cpu", cpu_nth(0));
    }
    json_int("threads", 2);
    json_int("n", n);
    json_int("no_switch", atomic_load(&no_switch));
    json_num("total_s", (double)ns / 1e9);
    json_num("ns_per_yield", (double)ns / (double)n);
    json_end();
    return 0;
}
