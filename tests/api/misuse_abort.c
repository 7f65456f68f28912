/* SPDX-License-Identifier: MIT */
/* Misuse that cannot return an error code aborts with a clear message (each
 * case in a child process): ito_exit from a foreign kernel thread, switching
 * to a NULL continuation, resuming a continuation twice, returning from a
 * continuation's entry function, unmatched or misplaced blocking brackets, a
 * switch from inside an event hook, a call into ito from a policy's init
 * (ito is initializing on that very thread: it used to wait for ever). */
#include <pthread.h>

#include <ito/cont.h>
#include <ito/policy.h>

#include "common.h"

static void *exit_from_pthread(void *a)
{
    ito_exit(NULL);
}

static void case_exit_foreign(void)
{
    CHECK(ito_vproc_count() >= 1);
    pthread_t p;
    CHECK_EQ(pthread_create(&p, NULL, exit_from_pthread, NULL), 0);
    pthread_join(p, NULL);
}

static void case_exit_foreign_uninitialized(void)
{
    /* The very first ito call is ito_exit, from a pthread. */
    pthread_t p;
    CHECK_EQ(pthread_create(&p, NULL, exit_from_pthread, NULL), 0);
    pthread_join(p, NULL);
}

static void case_cont_null(void)
{
    ito_cont_switch(NULL, NULL);
}

static void twice_body(ito_cont_transfer_t t)
{
    for (;;)
        t = ito_cont_switch(t.from, NULL);
}

static void case_cont_twice(void)
{
    ito_cont_stack_t s;
    OK(ito_cont_stack_alloc(&s, 0));
    ito_cont_t k = ito_cont_make(&s, twice_body);
    ito_cont_transfer_t r = ito_cont_switch(k, NULL);
    r = ito_cont_switch(r.from, NULL);   /* fine: a fresh one each time */
    ito_cont_switch(k, NULL);            /* k was consumed by the first switch */
}

static void returning_body(ito_cont_transfer_t t) { (void)t; }

static void case_cont_return(void)
{
    ito_cont_stack_t s;
    OK(ito_cont_stack_alloc(&s, 0));
    ito_cont_t k = ito_cont_make(&s, returning_body);
    ito_cont_switch(k, NULL);
}

static void case_blocking_end_alone(void)
{
    ito_yield();   /* initialized, and main is an ito thread */
    ito_blocking_end();
}

static void case_blocking_switch_inside(void)
{
    ito_yield();   /* initialized: main is an ito thread */
    ito_blocking_begin();
    ito_yield();   /* may switch: not allowed inside the bracket */
}

static _Atomic bool hook_stop;

static void yielding_hook(const ito_event_t *ev, void *arg)
{
    if (ev->kind == ITO_EVENT_PREEMPTED)
        ito_yield();   /* may switch: not allowed in a hook */
}

static void *spinner(void *arg)
{
    while (!atomic_load_explicit(&hook_stop, memory_order_relaxed))
        ;
    return NULL;
}

static void case_hook_switch(void)
{
    OK(ito_event_hook_set(yielding_hook, NULL));
    ito_config_t cfg = ITO_CONFIG_INIT;
    cfg.vprocs = 1;
    OK(ito_init(&cfg));
    ito_thread_t a, b;
    OK(ito_spawn(&a, NULL, spinner, NULL));
    OK(ito_spawn(&b, NULL, spinner, NULL));
    ito_sleep_ns(2000000000);   /* a slice ends long before */
    atomic_store(&hook_stop, true);
}

static void nop_enqueue(ito_policy_vproc_t *vp, ito_policy_node_t *n, ito_ready_reason_t why) {}
static ito_policy_node_t *nop_pick(ito_policy_vproc_t *vp) { return NULL; }

static int init_calls_ito(int nvprocs, void **shared)
{
    return ito_vproc_count() > 0 ? 0 : EINVAL;   /* ito is initializing, right here */
}

static const ito_policy_ops_t recursive_ops = {
    .abi = ITO_POLICY_ABI,
    .size = sizeof(ito_policy_ops_t),
    .name = "recursive-init",
    .init = init_calls_ito,
    .enqueue = nop_enqueue,
    .pick = nop_pick,
};

static void case_init_recursion(void)
{
    OK(ito_policy_register(&recursive_ops));
    ito_config_t c = ITO_CONFIG_INIT;
    c.policy = "recursive-init";
    ito_init(&c);
}

static const struct test_abort_case cases[] = {
    { "exit_foreign", case_exit_foreign, "ito_exit" },
    { "exit_foreign_uninitialized", case_exit_foreign_uninitialized, "ito_exit" },
    { "cont_null", case_cont_null, "NULL" },
    { "cont_twice", case_cont_twice, "resumed" },
    { "cont_return", case_cont_return, "returned" },
    { "blocking_end_alone", case_blocking_end_alone, "without a matching ito_blocking_begin" },
    { "blocking_switch_inside", case_blocking_switch_inside, "between ito_blocking_begin and" },
    { "hook_switch", case_hook_switch, "from inside an event hook" },
    { "init_recursion", case_init_recursion, "called while it initializes" },
};

int main(int argc, char **argv)
{
    return test_abort_cases(argc, argv, cases, sizeof cases / sizeof cases[0], "ito");
}
