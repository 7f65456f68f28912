/* SPDX-License-Identifier: MIT */
/* errno belongs to the ito thread: each thread sets its own value, then
 * yields, sleeps and blocks many times (migrating between vprocs and kernel
 * threads) while the others set different values, and still sees its own.
 * A new thread starts with errno 0.
 *
 * errno is read through a function the compiler cannot inline, so that
 * __errno_location() is evaluated anew after every switch, as ito.h asks: a
 * function that keeps errno's address across a switch (glibc declares it
 * const) may read another kernel thread's errno after a migration. */
#include "common.h"

static int __attribute__((noipa)) get_errno(void) { return errno; }
static void __attribute__((noipa)) set_errno(int v) { errno = v; }
#define ERRNO get_errno()
#define SET_ERRNO(v) set_errno(v)

enum { N = 32 };

static ito_mutex_t m = ITO_MUTEX_INIT;
static atomic_int migrations;

static void *keeper(void *a)
{
    int mine = (int)(intptr_t)a;
    CHECK_EQ(ERRNO, 0);
    SET_ERRNO(mine);
    int vp = ito_vproc_self();
    long n = test_scaled(2000);
    for (long i = 0; i < n; i++) {
        switch (i % 4) {
        case 0:
            ito_yield();
            break;
        case 1:
            ito_sleep_ns(i % 8 == 1 ? 1000 : 0);
            break;
        case 2:
            OK(ito_mutex_lock(&m));
            CHECK_EQ(ERRNO, mine);
            ito_yield();   /* holding the mutex: others block on it */
            OK(ito_mutex_unlock(&m));
            break;
        default:
            /* A failing libc call sets errno; set ours back afterwards. */
            CHECK_EQ(ERRNO, mine);
            CHECK(write(-1, "", 0) < 0);
            CHECK_EQ(ERRNO, EBADF);
            ito_yield();
            CHECK_EQ(ERRNO, EBADF);
            SET_ERRNO(mine);
            break;
        }
        CHECK_EQ(ERRNO, mine);
        int now = ito_vproc_self();
        if (now != vp) {
            atomic_fetch_add(&migrations, 1);
            vp = now;
        }
    }
    return NULL;
}

int main(void)
{
    SET_ERRNO(4242);
    ito_thread_t ts[N];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, keeper, (void *)(intptr_t)(1000 + i)));
    for (int i = 0; i < N; i++)
        OK(ito_join(ts[i], NULL));
    CHECK_EQ(ERRNO, 4242);   /* main's own errno survived its joins */
    if (ito_vproc_count() > 1)
        printf("errno: %d migrations observed\n", atomic_load(&migrations));
    return 0;
}
