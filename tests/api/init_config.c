/* SPDX-License-Identifier: MIT */
/* ito_init and the runtime configuration, each case in a fresh child process
 * (fork before anything initializes ito): EINVAL for every bad field and an
 * unknown policy (and no harm done: a good ito_init still works after), EBUSY
 * once initialized (explicitly or implicitly), 0 for NULL then, fields and
 * environment variables taking effect, a first call from a foreign kernel
 * thread, and bad environment values: each reported on one line of stderr
 * (the variable, the value, what is accepted, what is used instead) while
 * ito starts all the same; a variable read twice is reported once; keys as
 * main's first calls; ITO_PREEMPT_SIGNAL refusing the signals the program
 * or the system relies on. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ito/policy.h>

#include "common.h"

static void *ret_arg(void *a) { return a; }

static void spawn_join_some(void)
{
    ito_thread_t ts[50];
    for (int i = 0; i < 50; i++)
        OK(ito_spawn(&ts[i], NULL, ret_arg, (void *)(intptr_t)i));
    for (int i = 0; i < 50; i++) {
        void *r;
        OK(ito_join(ts[i], &r));
        CHECK_EQ((intptr_t)r, i);
    }
}

static void clean_env(void)
{
    unsetenv("ITO_POLICY");
    unsetenv("ITO_VPROCS");
    unsetenv("ITO_STACK_SIZE");
    unsetenv("ITO_IDLE_SPIN_US");
    unsetenv("ITO_PIN");
    unsetenv("ITO_TIMESLICE_US");
    unsetenv("ITO_PREEMPT_SIGNAL");
    unsetenv("ITO_PRIO_LEVELS");
    unsetenv("ITO_ACTIVATIONS");
    unsetenv("ITO_MAX_ACTIVATIONS");
}

/* ---- the cases, each run in its own process ---- */

static void case_bad_fields(void)
{
    ito_config_t c;
#define BAD(field, value)                    \
    do {                                     \
        c = (ito_config_t)ITO_CONFIG_INIT;   \
        c.field = value;                     \
        CHECK_EQ(ito_init(&c), EINVAL);      \
    } while (0)
    BAD(vprocs, -1);
    BAD(vprocs, -100);
    BAD(vprocs, 1 << 30);
    BAD(stack_size, 1);
    BAD(stack_size, ITO_STACK_MIN - 1);
    BAD(stack_size, ITO_STACK_MAX + 1);
    BAD(stack_size, SIZE_MAX);
    BAD(idle_spin_us, -2);
    BAD(idle_spin_us, -1000);
    BAD(pin, -2);
    BAD(pin, 2);
    BAD(policy, "no-such-policy");
    BAD(policy, "");
    BAD(policy, "WS");
#undef BAD
    /* Nothing was initialized by the failures: a good configuration works. */
    c = (ito_config_t)ITO_CONFIG_INIT;
    c.vprocs = 3;
    c.stack_size = 128 * 1024;
    c.policy = "fifo";
    c.idle_spin_us = 0;
    c.pin = 0;
    OK(ito_init(&c));
    CHECK_EQ(ito_vproc_count(), 3);
    CHECK(strcmp(ito_policy_name(), "fifo") == 0);
    CHECK_EQ(ito_vproc_self(), 0);   /* the caller became an ito thread on vproc 0 */
    CHECK(!ito_thread_equal(ito_self(), ITO_THREAD_NULL));
    ito_attr_t a;
    OK(ito_attr_init(&a));
    size_t sz;
    OK(ito_attr_get_stack_size(&a, &sz));
    CHECK_EQ(sz, 128 * 1024);
    /* Initialized: EBUSY for a configuration, even a valid or a bad one; 0 for
     * NULL. */
    CHECK_EQ(ito_init(&c), EBUSY);
    ito_config_t dflt = ITO_CONFIG_INIT;
    CHECK_EQ(ito_init(&dflt), EBUSY);
    OK(ito_init(NULL));
    OK(ito_init(NULL));
    spawn_join_some();
}

static void case_extreme_good_values(void)
{
    ito_config_t c = ITO_CONFIG_INIT;
    c.vprocs = 1;
    c.stack_size = ITO_STACK_MIN;
    c.idle_spin_us = 1000000;
    c.pin = 1;
    c.policy = "ws";
    OK(ito_init(&c));
    CHECK_EQ(ito_vproc_count(), 1);
    CHECK(strcmp(ito_policy_name(), "ws") == 0);
    spawn_join_some();
}

static void case_defaults(void)
{
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    OK(ito_init(NULL));
    CHECK(ito_vproc_count() >= 1 && ito_vproc_count() <= CPU_COUNT(&set));
    CHECK(strcmp(ito_policy_name(), "ws") == 0);
    ito_attr_t a;
    OK(ito_attr_init(&a));
    size_t sz;
    OK(ito_attr_get_stack_size(&a, &sz));
    CHECK_EQ(sz, ITO_STACK_DEFAULT);
    CHECK_EQ(ito_init(&(ito_config_t)ITO_CONFIG_INIT), EBUSY);
    spawn_join_some();
}

static void case_env(void)
{
    setenv("ITO_VPROCS", "2", 1);
    setenv("ITO_STACK_SIZE", "65536", 1);
    setenv("ITO_POLICY", "fifo", 1);
    setenv("ITO_IDLE_SPIN_US", "0", 1);
    setenv("ITO_PIN", "0", 1);
    OK(ito_init(NULL));
    CHECK_EQ(ito_vproc_count(), 2);
    CHECK(strcmp(ito_policy_name(), "fifo") == 0);
    ito_attr_t a;
    OK(ito_attr_init(&a));
    size_t sz;
    OK(ito_attr_get_stack_size(&a, &sz));
    CHECK_EQ(sz, 65536);
    spawn_join_some();
}

static void case_fields_beat_env(void)
{
    setenv("ITO_VPROCS", "2", 1);
    setenv("ITO_POLICY", "fifo", 1);
    ito_config_t c = ITO_CONFIG_INIT;
    c.vprocs = 3;
    c.policy = "ws";
    OK(ito_init(&c));
    CHECK_EQ(ito_vproc_count(), 3);
    CHECK(strcmp(ito_policy_name(), "ws") == 0);
    spawn_join_some();
}

static void case_implicit_then_explicit(void)
{
    /* The first ito call initializes with the defaults; main becomes an ito
     * thread. */
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, ret_arg, NULL));
    OK(ito_join(t, NULL));
    /* On some vproc: the join may have moved it off vproc 0. */
    int self = ito_vproc_self();
    CHECK(self >= 0 && self < ito_vproc_count());
    ito_config_t c = ITO_CONFIG_INIT;
    c.vprocs = 1;
    CHECK_EQ(ito_init(&c), EBUSY);
    c.vprocs = -5;   /* bad, but the runtime is up: EBUSY or EINVAL */
    int e = ito_init(&c);
    CHECK(e == EBUSY || e == EINVAL);
    OK(ito_init(NULL));
    spawn_join_some();
}

static void *first_call_from_pthread(void *arg)
{
    CHECK(ito_vproc_count() >= 1);   /* initializes ito */
    /* Not the main thread: it stays a foreign kernel thread. */
    CHECK_EQ(ito_vproc_self(), -1);
    CHECK(ito_thread_equal(ito_self(), ITO_THREAD_NULL));
    spawn_join_some();
    return NULL;
}

static void case_foreign_first(void)
{
    pthread_t p;
    CHECK_EQ(pthread_create(&p, NULL, first_call_from_pthread, NULL), 0);
    CHECK_EQ(pthread_join(p, NULL), 0);
    /* The first pthread has exited: ito goes on, main can use it. */
    CHECK_EQ(ito_init(&(ito_config_t)ITO_CONFIG_INIT), EBUSY);
    spawn_join_some();
    CHECK_EQ(pthread_create(&p, NULL, first_call_from_pthread, NULL), 0);
    CHECK_EQ(pthread_join(p, NULL), 0);
}

static void case_bad_env(void)
{
    /* Out-of-range environment values do not prevent initialization. */
    setenv("ITO_VPROCS", "-3", 1);
    setenv("ITO_STACK_SIZE", "12", 1);
    setenv("ITO_IDLE_SPIN_US", "banana", 1);
    cpu_set_t cs;   /* (before ito pins main) */
    CHECK_EQ(sched_getaffinity(0, sizeof cs, &cs), 0);
    OK(ito_init(NULL));
    CHECK(ito_vproc_count() >= 1 && ito_vproc_count() <= CPU_COUNT(&cs));   /* one per usable CPU */
    ito_attr_t a;
    OK(ito_attr_init(&a));
    size_t sz;
    OK(ito_attr_get_stack_size(&a, &sz));
    CHECK(sz >= ITO_STACK_MIN && sz <= ITO_STACK_MAX);
    spawn_join_some();
}

/* Each bad value below is reported on exactly one line (the `line` needle of
 * the table), which names the variable, the value, what is accepted and what
 * is used instead; ito starts all the same. */

static ito_policy_node_t *never_pick(ito_policy_vproc_t *vp) { return NULL; }
static void never_enqueue(ito_policy_vproc_t *vp, ito_policy_node_t *n, ito_ready_reason_t why) {}

static void case_bad_policy(void)
{
    /* Registered before ito starts: the message lists it too. */
    ito_policy_ops_t mine = { .abi = ITO_POLICY_ABI, .size = sizeof mine, .name = "mine",
                              .enqueue = never_enqueue, .pick = never_pick };
    OK(ito_policy_register(&mine));
    setenv("ITO_POLICY", "nope", 1);
    OK(ito_init(NULL));
    CHECK(strcmp(ito_policy_name(), "ws") == 0);
    spawn_join_some();
}

static void case_bad_stack_size(void)
{
    setenv("ITO_STACK_SIZE", "abc", 1);
    OK(ito_init(NULL));
    ito_attr_t a;
    OK(ito_attr_init(&a));
    size_t sz;
    OK(ito_attr_get_stack_size(&a, &sz));
    CHECK_EQ(sz, ITO_STACK_DEFAULT);
    spawn_join_some();
}

static void case_bad_timeslice(void)
{
    setenv("ITO_TIMESLICE_US", "-5", 1);
    OK(ito_init(NULL));
    spawn_join_some();
}

static void case_bad_preempt_signal(void)
{
    setenv("ITO_PREEMPT_SIGNAL", "SIGNOPE", 1);
    OK(ito_init(NULL));
    spawn_join_some();
}

static void case_bad_prio_levels(void)
{
    setenv("ITO_PRIO_LEVELS", "0", 1);
    setenv("ITO_POLICY", "prio", 1);   /* read by the prio policies only */
    OK(ito_init(NULL));
    CHECK(strcmp(ito_policy_name(), "prio") == 0);
    spawn_join_some();
}

/* A signal that is not free to take over keeps its default action. */
static void preempt_signal_refused(const char *value, int sig)
{
    setenv("ITO_PREEMPT_SIGNAL", value, 1);
    OK(ito_init(NULL));
    struct sigaction sa;
    if (sig < 32) {   /* (sigaction refuses the C library's own) */
        CHECK_EQ(sigaction(sig, NULL, &sa), 0);
        CHECK(sa.sa_handler == SIG_DFL);
    }
    CHECK_EQ(sigaction(SIGURG, NULL, &sa), 0);
    CHECK(sa.sa_handler != SIG_DFL);   /* ito's, instead */
    spawn_join_some();
}

static void case_preempt_signal_term(void) { preempt_signal_refused("15", SIGTERM); }
static void case_preempt_signal_alrm(void) { preempt_signal_refused("ALRM", SIGALRM); }
static void case_preempt_signal_int(void) { preempt_signal_refused("SIGINT", SIGINT); }
static void case_preempt_signal_libc(void) { preempt_signal_refused("33", 33); }

static void case_preempt_signal_rt(void)
{
    setenv("ITO_PREEMPT_SIGNAL", "SIGRTMIN+1", 1);
    OK(ito_init(NULL));
    struct sigaction sa;
    CHECK_EQ(sigaction(SIGRTMIN + 1, NULL, &sa), 0);
    CHECK(sa.sa_handler != SIG_DFL);
    spawn_join_some();
}

/* Read before ito starts (the attribute's default) and again as it starts:
 * still one warning. */
static void case_stack_size_read_twice(void)
{
    setenv("ITO_STACK_SIZE", "abc", 1);
    ito_attr_t a;
    OK(ito_attr_init(&a));
    size_t sz;
    OK(ito_attr_get_stack_size(&a, &sz));
    CHECK_EQ(sz, ITO_STACK_DEFAULT);
    OK(ito_init(NULL));
    spawn_join_some();
}

/* Read again in the child of a fork: still one warning. */
static void case_max_activations_forked(void)
{
    setenv("ITO_MAX_ACTIVATIONS", "abc", 1);
    spawn_join_some();
#ifdef __SANITIZE_THREAD__
    return;   /* TSan does not let a multi-threaded process fork and start threads */
#endif
    pid_t p = fork();
    CHECK(p >= 0);
    if (p == 0) {
        spawn_join_some();
        _exit(0);
    }
    int st;
    CHECK_EQ(waitpid(p, &st, 0), p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Thread-specific data as main's first ito calls: ito starts, main becomes
 * an ito thread, the value is main's (it used to be EPERM, as for a foreign
 * kernel thread). */
static void case_keys_first(void)
{
    ito_key_t k;
    OK(ito_key_create(&k, NULL));
    CHECK(ito_getspecific(k) == NULL);   /* the first call: initializes */
    CHECK_EQ(ito_init(&(ito_config_t)ITO_CONFIG_INIT), EBUSY);
    int x;
    OK(ito_setspecific(k, &x));
    CHECK(ito_getspecific(k) == &x);
    CHECK_EQ(ito_vproc_self(), 0);
}

static void case_setspecific_first(void)
{
    ito_key_t k;
    OK(ito_key_create(&k, NULL));
    int x;
    OK(ito_setspecific(k, &x));   /* the first call: initializes */
    CHECK(ito_getspecific(k) == &x);
    CHECK(!ito_thread_equal(ito_self(), ITO_THREAD_NULL));
    CHECK_EQ(ito_init(&(ito_config_t)ITO_CONFIG_INIT), EBUSY);
    spawn_join_some();
    CHECK(ito_getspecific(k) == &x);
}

#define SAYS_MAX 4

static const struct {
    const char *name;
    void (*fn)(void);
    const char *line;             /* on exactly one line of stderr (NULL: not checked) */
    const char *says[SAYS_MAX];   /* on that line, or anywhere in stderr without `line` */
    const char *never;            /* nowhere in stderr (NULL: not checked) */
} cases[] = {
    { "bad_fields", case_bad_fields, NULL, { NULL }, NULL },
    { "extreme_good_values", case_extreme_good_values, NULL, { NULL }, NULL },
    { "defaults", case_defaults, NULL, { NULL }, NULL },
    { "env", case_env, NULL, { NULL }, NULL },
    { "fields_beat_env", case_fields_beat_env, NULL, { NULL }, NULL },
    { "implicit_then_explicit", case_implicit_then_explicit, NULL, { NULL }, NULL },
    { "foreign_first", case_foreign_first, NULL, { NULL }, NULL },
    /* A bad ITO_VPROCS names the number of vprocs used, not 0 ("automatic"). */
    { "bad_env", case_bad_env, NULL, { "ignoring ITO_VPROCS='-3'" }, "using 0" },
    /* Every policy the registry holds, built-in and registered, in order. */
    { "bad_policy", case_bad_policy, "ITO_POLICY",
      { "ignoring ITO_POLICY='nope'", "accepted: ws, fifo, prio, prio-shared, affinity, mine;", "using ws" },
      NULL },
    { "bad_stack_size", case_bad_stack_size, "ITO_STACK_SIZE",
      { "ignoring ITO_STACK_SIZE='abc'", "from 16384 (16k) to 1073741824 (1g)", "using the default, 262144" },
      NULL },
    { "bad_timeslice", case_bad_timeslice, "ITO_TIMESLICE_US",
      { "ignoring ITO_TIMESLICE_US='-5'", "from 0 to 10000000", "using the default, 10000" }, NULL },
    { "bad_preempt_signal", case_bad_preempt_signal, "ITO_PREEMPT_SIGNAL",
      { "ignoring ITO_PREEMPT_SIGNAL='SIGNOPE'", "SIGUSR1", "using SIGURG" }, NULL },
    /* Signals the program or the system relies on are refused, by name or
     * number, and the C library's own. */
    { "preempt_signal_term", case_preempt_signal_term, "ITO_PREEMPT_SIGNAL",
      { "ignoring ITO_PREEMPT_SIGNAL='15': SIGTERM is not free", "SIGUSR1", "SIGRTMIN+n", "using SIGURG" }, NULL },
    { "preempt_signal_alrm", case_preempt_signal_alrm, "ITO_PREEMPT_SIGNAL",
      { "ignoring ITO_PREEMPT_SIGNAL='ALRM': SIGALRM is not free", "using SIGURG" }, NULL },
    { "preempt_signal_int", case_preempt_signal_int, "ITO_PREEMPT_SIGNAL",
      { "ignoring ITO_PREEMPT_SIGNAL='SIGINT': SIGINT is not free", "using SIGURG" }, NULL },
    { "preempt_signal_libc", case_preempt_signal_libc, "ITO_PREEMPT_SIGNAL",
      { "ignoring ITO_PREEMPT_SIGNAL='33': signal 33 is the C library's own", "using SIGURG" }, NULL },
    { "preempt_signal_rt", case_preempt_signal_rt, NULL, { NULL }, "ITO_PREEMPT_SIGNAL" },
    /* A variable read twice is reported once. */
    { "stack_size_read_twice", case_stack_size_read_twice, "ITO_STACK_SIZE",
      { "ignoring ITO_STACK_SIZE='abc'", "using the default, 262144" }, NULL },
    { "max_activations_forked", case_max_activations_forked, "ITO_MAX_ACTIVATIONS",
      { "ignoring ITO_MAX_ACTIVATIONS='abc'" }, NULL },
    { "keys_first", case_keys_first, NULL, { NULL }, NULL },
    { "setspecific_first", case_setspecific_first, NULL, { NULL }, NULL },
    { "bad_prio_levels", case_bad_prio_levels, "ITO_PRIO_LEVELS",
      { "ignoring ITO_PRIO_LEVELS='0'", "from 1 to 140", "using the default, 140" }, NULL },
};

/* Whether err passes case i's checks of stderr. */
static bool stderr_ok(int i, const char *err)
{
    const char *scope = err;
    char one[1024];
    if (cases[i].line) {
        int lines = 0;
        for (const char *p = err; *p;) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            char l[1024];
            snprintf(l, sizeof l, "%.*s", (int)len, p);
            if (strstr(l, cases[i].line)) {
                lines++;
                memcpy(one, l, sizeof one);
            }
            p += len + (nl ? 1 : 0);
        }
        if (lines != 1)
            return false;
        scope = one;
    }
    for (int k = 0; k < SAYS_MAX && cases[i].says[k]; k++)
        if (!strstr(scope, cases[i].says[k]))
            return false;
    return !cases[i].never || !strstr(err, cases[i].never);
}

int main(int argc, char **argv)
{
    enum { NCASES = sizeof cases / sizeof cases[0] };
    if (argc == 2) {
        for (int i = 0; i < NCASES; i++)
            if (strcmp(argv[1], cases[i].name) == 0) {
                clean_env();
                cases[i].fn();
                return 0;
            }
        return 2;
    }
    int failed = 0;
    for (int i = 0; i < NCASES; i++) {
        static char err[8192];
        int st = test_run_self(cases[i].name, err, sizeof err);
        char sb[128];
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !stderr_ok(i, err)) {
            fprintf(stderr, "case %s: %s; stderr:\n%s\n", cases[i].name,
                    test_status_str(st, sb, sizeof sb), err);
            failed++;
        }
    }
    CHECK_EQ(failed, 0);
    return 0;
}
