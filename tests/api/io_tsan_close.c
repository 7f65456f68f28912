/* SPDX-License-Identifier: MIT */
/* ThreadSanitizer builds only. Were ito_close to close through io_uring,
 * TSan's close interceptor would never see it: TSan would keep the
 * descriptor's old accesses and report a data race when another thread, with
 * no order between the two, gets the same number from pipe() and uses it.
 * (Found by the io_semantics tests' concurrent runs; ito_close now closes with
 * close(2) in TSan builds.) */
#include <pthread.h>

#include "common.h"

static atomic_int closed;

/* An ito thread: a pipe, used, then closed with ito_close. */
static void *closer(void *a)
{
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK(write(p[1], "x", 1) == 1);
    OK(ito_close(p[0]));
    OK(ito_close(p[1]));
    /* Relaxed: no happens-before with the reuser (the kernel orders them). */
    atomic_store_explicit(&closed, 1, memory_order_relaxed);
    return NULL;
}

/* A pthread: the same numbers again, used and closed. */
static void *reuser(void *a)
{
    while (!atomic_load_explicit(&closed, memory_order_relaxed))
        usleep(1000);
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK(write(p[1], "y", 1) == 1);
    CHECK(close(p[0]) == 0 && close(p[1]) == 0);
    return NULL;
}

int main(void)
{
    pthread_t r;
    CHECK_EQ(pthread_create(&r, NULL, reuser, NULL), 0);
    ito_thread_t c;
    OK(ito_spawn(&c, NULL, closer, NULL));
    CHECK_EQ(pthread_join(r, NULL), 0);
    OK(ito_join(c, NULL));
    return 0;
}
