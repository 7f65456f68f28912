/* SPDX-License-Identifier: MIT */
/* Stress: hand-offs racing with everything else. Threads interleave
 * mutex-protected increments, bracketed kernel calls of random lengths (most
 * return before the monitor looks, some are handed off), yields and sleeps;
 * carriers lose and regain vprocs all the time. The count must be exact and
 * every thread must finish. Run also with a tight ITO_MAX_ACTIVATIONS, where
 * blocked calls must keep their vproc (warning once) rather than fail. */
#include <unistd.h>

#include "common.h"

static ito_mutex_t m = ITO_MUTEX_INIT;
static long counter;        /* m */
static long iters;

static void *worker(void *arg)
{
    uint64_t rng = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15u + 1;
    for (long i = 0; i < iters; i++) {
        OK(ito_mutex_lock(&m));
        counter++;
        OK(ito_mutex_unlock(&m));
        switch (test_rand(&rng) % 8) {
        case 0:
        case 1:
            ITO_BLOCKING(usleep((useconds_t)(test_rand(&rng) % 200)));
            break;
        case 2:
            ito_blocking_begin();   /* nested brackets count once */
            ITO_BLOCKING(usleep(50));
            ito_blocking_end();
            break;
        case 3:
            ito_yield();
            break;
        case 4:
            ito_sleep_ns(test_rand(&rng) % 50000);
            break;
        default:
            break;
        }
    }
    return NULL;
}

int main(void)
{
    alarm(240);
    enum { T = 200 };
    iters = test_scaled(300);
    static ito_thread_t t[T];
    for (int i = 0; i < T; i++)
        OK(ito_spawn(&t[i], NULL, worker, (void *)(intptr_t)(i + 1)));
    for (int i = 0; i < T; i++)
        OK(ito_join(t[i], NULL));
    CHECK_EQ(counter, (long)T * iters);
    printf("blocking_stress: %ld increments, exact\n", counter);
    return 0;
}
