/* SPDX-License-Identifier: MIT */
/* An absolute deadline far in the future (past the 64-bit nanosecond range)
 * means "wait until woken", not "already passed". */
#include "common.h"

static ito_sem_t s;
static ito_mutex_t m = ITO_MUTEX_INIT;
static ito_cond_t c = ITO_COND_INIT;
static int flag;
static const struct timespec far = { 18446744074LL, 0 };

static void *sem_waiter(void *a)
{
    return (void *)(intptr_t)ito_sem_timedwait(&s, &far);
}

static void *cond_waiter(void *a)
{
    OK(ito_mutex_lock(&m));
    int e = 0;
    while (!flag && e == 0)
        e = ito_cond_timedwait(&c, &m, &far);
    OK(ito_mutex_unlock(&m));
    return (void *)(intptr_t)e;
}

int main(void)
{
    OK(ito_sem_init(&s, 0));
    ito_thread_t a, b;
    void *r;
    OK(ito_spawn(&a, NULL, sem_waiter, NULL));
    OK(ito_spawn(&b, NULL, cond_waiter, NULL));
    ito_sleep_ns(50000000);   /* neither may have timed out */
    OK(ito_sem_post(&s));
    OK(ito_join(a, &r));
    CHECK_EQ((intptr_t)r, 0);
    OK(ito_mutex_lock(&m));
    flag = 1;
    OK(ito_cond_signal(&c));
    OK(ito_mutex_unlock(&m));
    OK(ito_join(b, &r));
    CHECK_EQ((intptr_t)r, 0);
    return 0;
}
