/* SPDX-License-Identifier: MIT */
/* fib: fine-grained fork/join. Every call spawns a thread for one branch and
 * computes the other itself; a join of a child that has not started yet runs
 * it on the spot, so most of these "threads" cost little more than a call,
 * while idle vprocs steal the rest and run them in parallel. */
#include <ito.h>
#include <stdio.h>
#include <stdlib.h>

static void *fib(void *arg)
{
    long n = (long)(intptr_t)arg;
    if (n < 2)
        return arg;
    ito_thread_t t;
    void *a;
    if (ito_spawn(&t, NULL, fib, (void *)(intptr_t)(n - 1)) != 0)
        abort();
    long b = (long)(intptr_t)fib((void *)(intptr_t)(n - 2));
    ito_join(t, &a);
    return (void *)(intptr_t)((long)(intptr_t)a + b);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 30;
    uint64_t t0 = ito_now_ns();
    long r = (long)(intptr_t)fib((void *)(intptr_t)n);
    double ms = (ito_now_ns() - t0) / 1e6;
    ito_stats_t s;
    ito_stats_get(&s);
    printf("fib(%ld) = %ld in %.1f ms on %d vprocs (%llu threads, %llu stolen)\n", n, r, ms,
           ito_vproc_count(), (unsigned long long)s.spawns, (unsigned long long)s.steals);
    return 0;
}
