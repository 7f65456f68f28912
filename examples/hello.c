/* SPDX-License-Identifier: MIT */
/* hello: main is an ito thread as soon as it calls ito; spawn, join, done. */
#include <ito.h>
#include <stdio.h>

static void *greet(void *arg)
{
    printf("hello from ito thread %d on vproc %d\n", (int)(intptr_t)arg, ito_vproc_self());
    return arg;
}

int main(void)
{
    ito_thread_t t[4];
    for (intptr_t i = 0; i < 4; i++)
        if (ito_spawn(&t[i], NULL, greet, (void *)i) != 0)
            return 1;
    for (int i = 0; i < 4; i++)
        ito_join(t[i], NULL);
    printf("%d vprocs, policy %s\n", ito_vproc_count(), ito_policy_name());
    return 0;
}
