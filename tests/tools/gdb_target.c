/* SPDX-License-Identifier: MIT */
/* A program for the gdb-extension check (gdb_tools.sh): a few ito threads
 * parked in different places, then it waits to be inspected. */
#include <unistd.h>

#include <ito.h>

static ito_mutex_t m = ITO_MUTEX_INIT;
static ito_cond_t c = ITO_COND_INIT;

static void *waiter(void *a)
{
    ito_mutex_lock(&m);
    ito_cond_wait(&c, &m);
    ito_mutex_unlock(&m);
    return a;
}

static void *sleeper(void *a)
{
    ito_sleep_ns(3600ull * 1000000000ull);
    return a;
}

int main(void)
{
    ito_attr_t at;
    ito_attr_init(&at);
    ito_attr_set_name(&at, "the-waiter");
    ito_thread_t t[2];
    ito_spawn(&t[0], &at, waiter, NULL);
    ito_spawn(&t[1], NULL, sleeper, NULL);
    ito_sleep_ns(100000000);   /* let them park */
    write(1, "ready\n", 6);
    pause();
    return 0;
}
