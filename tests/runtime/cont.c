/* SPDX-License-Identifier: MIT */
/* One-shot continuations (ito/cont.h): the generator of the header, a
 * ping-pong between two continuations, values both ways, a continuation on a
 * caller-provided stack (static and heap memory), nested continuations,
 * continuations inside an ito thread, stack allocation errors and
 * ito_cont_make returning NULL for a too-small or misdescribed stack. */
#include <ito/cont.h>

#include "common.h"

/* ---- the generator of the header ---- */

static void gen_body(ito_cont_transfer_t t)
{
    for (int i = 0;; i++)
        t = ito_cont_switch(t.from, (void *)(intptr_t)i);
}

static void test_generator(void)
{
    ito_cont_stack_t s;
    OK(ito_cont_stack_alloc(&s, 0));
    CHECK(s.base != NULL);
    CHECK(s.size >= ITO_STACK_DEFAULT);
    ito_cont_t k = ito_cont_make(&s, gen_body);
    CHECK(k != NULL);
    ito_cont_transfer_t r = ito_cont_switch(k, NULL);
    CHECK_EQ((intptr_t)r.value, 0);
    for (int i = 1; i < 1000; i++) {
        r = ito_cont_switch(r.from, NULL);
        CHECK_EQ((intptr_t)r.value, i);
    }
    /* The generator is abandoned mid-loop: its stack can simply be freed. */
    ito_cont_stack_free(&s);
}

/* ---- values both ways: an accumulator ---- */

static void acc_body(ito_cont_transfer_t t)
{
    long sum = 0;
    for (;;) {
        sum += (long)(intptr_t)t.value;
        t = ito_cont_switch(t.from, (void *)(intptr_t)sum);
    }
}

static void test_values_both_ways(void)
{
    ito_cont_stack_t s;
    OK(ito_cont_stack_alloc(&s, 64 * 1024));
    CHECK(s.size >= 64 * 1024);
    ito_cont_t k = ito_cont_make(&s, acc_body);
    CHECK(k);
    long expect = 0;
    ito_cont_transfer_t r = { k, NULL };
    for (long i = 1; i <= 500; i++) {
        r = ito_cont_switch(r.from, (void *)(intptr_t)i);
        expect += i;
        CHECK_EQ((long)(intptr_t)r.value, expect);
    }
    ito_cont_stack_free(&s);
}

/* ---- ping-pong between two continuations (neither is main) ---- */

static ito_cont_t main_k;
static long pp_count;

static void ping_body(ito_cont_transfer_t t)
{
    /* First switch comes from main with the pong continuation as value. */
    main_k = t.from;
    ito_cont_t pong = t.value;
    long n = 0;
    ito_cont_transfer_t r = ito_cont_switch(pong, (void *)(intptr_t)n);
    for (;;) {
        n = (long)(intptr_t)r.value;
        CHECK_EQ(n % 2, 1);   /* pong answers with odd numbers */
        pp_count++;
        if (n >= 2001)
            break;
        r = ito_cont_switch(r.from, (void *)(intptr_t)(n + 1));
    }
    ito_cont_switch(main_k, (void *)(intptr_t)n);   /* for the last time */
    abort();
}

static void pong_body(ito_cont_transfer_t t)
{
    for (;;) {
        long n = (long)(intptr_t)t.value;
        CHECK_EQ(n % 2, 0);
        t = ito_cont_switch(t.from, (void *)(intptr_t)(n + 1));
    }
}

static void test_ping_pong(void)
{
    ito_cont_stack_t s1, s2;
    OK(ito_cont_stack_alloc(&s1, 0));
    OK(ito_cont_stack_alloc(&s2, 0));
    ito_cont_t ping = ito_cont_make(&s1, ping_body);
    ito_cont_t pong = ito_cont_make(&s2, pong_body);
    CHECK(ping && pong);
    ito_cont_transfer_t r = ito_cont_switch(ping, pong);
    CHECK_EQ((intptr_t)r.value, 2001);
    CHECK_EQ(pp_count, 1001);
    ito_cont_stack_free(&s1);
    ito_cont_stack_free(&s2);
}

/* ---- caller-provided stacks ---- */

static char static_stack[64 * 1024] __attribute__((aligned(64)));

static void deep_body(ito_cont_transfer_t t)
{
    /* Use some of the stack. */
    volatile char buf[8192];
    memset((char *)buf, 0x5a, sizeof buf);
    long n = (long)(intptr_t)t.value;
    t = ito_cont_switch(t.from, (void *)(intptr_t)(n * 2 + buf[100] - 0x5a));
    ito_cont_switch(t.from, (void *)(intptr_t)(buf[8000] == 0x5a));
    abort();
}

static void test_caller_stack(void)
{
    ito_cont_stack_t s = { .base = static_stack, .size = sizeof static_stack };
    ito_cont_t k = ito_cont_make(&s, deep_body);
    CHECK(k);
    ito_cont_transfer_t r = ito_cont_switch(k, (void *)21);
    CHECK_EQ((intptr_t)r.value, 42);
    r = ito_cont_switch(r.from, NULL);
    CHECK_EQ((intptr_t)r.value, 1);

    /* Heap memory, not aligned to anything in particular. */
    char *mem = malloc(100 * 1024 + 3);
    CHECK(mem);
    ito_cont_stack_t h = { .base = mem + 3, .size = 100 * 1024 };
    k = ito_cont_make(&h, deep_body);
    CHECK(k);
    r = ito_cont_switch(k, (void *)5);
    CHECK_EQ((intptr_t)r.value, 10);
    r = ito_cont_switch(r.from, NULL);
    CHECK_EQ((intptr_t)r.value, 1);
    free(mem);

    /* The smallest accepted stack (4 KiB) can run a trivial body. */
    static char tiny[4096] __attribute__((aligned(16)));
    ito_cont_stack_t ts = { .base = tiny, .size = sizeof tiny };
    k = ito_cont_make(&ts, gen_body);
    CHECK(k);
    r = ito_cont_switch(k, NULL);
    CHECK_EQ((intptr_t)r.value, 0);
    r = ito_cont_switch(r.from, NULL);
    CHECK_EQ((intptr_t)r.value, 1);
}

static void test_make_errors(void)
{
    static char small[4095];
    ito_cont_stack_t s = { .base = small, .size = sizeof small };
    CHECK(ito_cont_make(&s, gen_body) == NULL);
    s.size = 0;
    CHECK(ito_cont_make(&s, gen_body) == NULL);
    s.size = 100;
    CHECK(ito_cont_make(&s, gen_body) == NULL);
    ito_cont_stack_t nobase = { .base = NULL, .size = 65536 };
    CHECK(ito_cont_make(&nobase, gen_body) == NULL);
    CHECK(ito_cont_make(NULL, gen_body) == NULL);
    ito_cont_stack_t ok = { .base = static_stack, .size = sizeof static_stack };
    CHECK(ito_cont_make(&ok, NULL) == NULL);

    ito_cont_stack_t a;
    CHECK_EQ(ito_cont_stack_alloc(&a, ITO_STACK_MAX + 1), EINVAL);
    CHECK_EQ(ito_cont_stack_alloc(&a, SIZE_MAX), EINVAL);
    OK(ito_cont_stack_alloc(&a, 1));   /* rounded up to a page */
    CHECK(a.size >= 1 && a.size % (size_t)sysconf(_SC_PAGESIZE) == 0);
    ito_cont_stack_free(&a);
    ito_cont_stack_free(&a);    /* freeing twice is harmless */
    ito_cont_stack_free(NULL);
}

/* ---- nested: a continuation that makes and drives its own ---- */

static void inner_body(ito_cont_transfer_t t)
{
    for (;;)
        t = ito_cont_switch(t.from, (void *)((intptr_t)t.value + 100));
}

static void outer_body(ito_cont_transfer_t t)
{
    ito_cont_stack_t s;
    OK(ito_cont_stack_alloc(&s, 32 * 1024));
    ito_cont_t inner = ito_cont_make(&s, inner_body);
    ito_cont_transfer_t ir = { inner, NULL };
    for (;;) {
        ir = ito_cont_switch(ir.from, t.value);
        t = ito_cont_switch(t.from, ir.value);
    }
}

static void test_nested(void)
{
    ito_cont_stack_t s;
    OK(ito_cont_stack_alloc(&s, 0));
    ito_cont_t k = ito_cont_make(&s, outer_body);
    ito_cont_transfer_t r = { k, NULL };
    for (int i = 0; i < 100; i++) {
        r = ito_cont_switch(r.from, (void *)(intptr_t)i);
        CHECK_EQ((intptr_t)r.value, i + 100);
    }
    ito_cont_stack_free(&s);   /* leaks the inner stack: fine for a test */
}

/* ---- inside ito threads (no switch point while continuations run) ---- */

static void *in_thread(void *a)
{
    ito_cont_stack_t s;
    OK(ito_cont_stack_alloc(&s, 0));
    ito_cont_t k = ito_cont_make(&s, acc_body);
    long sum = 0;
    ito_cont_transfer_t r = { k, NULL };
    for (long i = 1; i <= 100; i++) {
        r = ito_cont_switch(r.from, (void *)(intptr_t)i);
        sum += i;
        CHECK_EQ((long)(intptr_t)r.value, sum);
    }
    ito_cont_stack_free(&s);
    ito_yield();
    return (void *)(intptr_t)sum;
}

static void test_in_threads(void)
{
    enum { N = 8 };
    ito_thread_t ts[N];
    for (int i = 0; i < N; i++)
        OK(ito_spawn(&ts[i], NULL, in_thread, NULL));
    for (int i = 0; i < N; i++) {
        void *r;
        OK(ito_join(ts[i], &r));
        CHECK_EQ((intptr_t)r, 5050);
    }
}

/* FP control (MXCSR) travels with the computation. */
#include <fenv.h>
static void fp_body(ito_cont_transfer_t t)
{
    int mode = fegetround();
    t = ito_cont_switch(t.from, (void *)(intptr_t)mode);
    fesetround(FE_UPWARD);
    t = ito_cont_switch(t.from, (void *)(intptr_t)fegetround());
    ito_cont_switch(t.from, (void *)(intptr_t)fegetround());
    abort();
}

static void test_fp_control(void)
{
    ito_cont_stack_t s;
    OK(ito_cont_stack_alloc(&s, 0));
    fesetround(FE_TOWARDZERO);
    ito_cont_t k = ito_cont_make(&s, fp_body);
    ito_cont_transfer_t r = ito_cont_switch(k, NULL);
    CHECK_EQ((intptr_t)r.value, FE_TOWARDZERO);   /* inherited at make */
    fesetround(FE_DOWNWARD);
    r = ito_cont_switch(r.from, NULL);
    CHECK_EQ((intptr_t)r.value, FE_UPWARD);
    CHECK_EQ(fegetround(), FE_DOWNWARD);          /* ours, restored */
    r = ito_cont_switch(r.from, NULL);
    CHECK_EQ((intptr_t)r.value, FE_UPWARD);       /* its own, kept */
    fesetround(FE_TONEAREST);
    ito_cont_stack_free(&s);
}

int main(void)
{
    /* Continuations do not need ito_init: run the first tests before any
     * other ito call. */
    test_generator();
    test_values_both_ways();
    test_ping_pong();
    test_caller_stack();
    test_make_errors();
    test_nested();
    test_fp_control();
    test_in_threads();
    return 0;
}
