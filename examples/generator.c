/* SPDX-License-Identifier: MIT */
/* generator: the continuation layer (ito/cont.h) without any threads — a
 * generator that yields the squares, as a coroutine on its own stack. */
#include <ito/cont.h>
#include <stdio.h>

static void squares(ito_cont_transfer_t t)
{
    for (long i = 1;; i++)
        t = ito_cont_switch(t.from, (void *)(intptr_t)(i * i));   /* yield i*i */
}

int main(void)
{
    ito_cont_stack_t stack;
    if (ito_cont_stack_alloc(&stack, 64 * 1024) != 0)
        return 1;
    ito_cont_t gen = ito_cont_make(&stack, squares);
    long sum = 0;
    for (int i = 0; i < 10; i++) {
        ito_cont_transfer_t r = ito_cont_switch(gen, NULL);   /* next value */
        gen = r.from;
        printf("%ld ", (long)(intptr_t)r.value);
        sum += (long)(intptr_t)r.value;
    }
    printf("\nsum of the first 10 squares: %ld\n", sum);
    /* The generator is still suspended; its stack can simply be freed. */
    ito_cont_stack_free(&stack);
    return sum == 385 ? 0 : 1;
}
