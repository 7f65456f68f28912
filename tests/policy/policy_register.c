/* SPDX-License-Identifier: MIT */
/* ito_policy_register validation, each case in a fresh process: NULL,
 * another ABI (ENOTSUP), sizes too small, missing enqueue or pick, bad names
 * (empty, upper case, spaces, other characters, too long), names taken
 * (EEXIST) including the built-in "ws", "fifo", "prio", "prio-shared" and "affinity"
 * before initialization, and
 * ITO_POLICIES_MAX (ENOSPC, the built-ins counting). The runtime still
 * initializes after every rejection. (A working custom policy:
 * policy_custom.c.) */
#include <stddef.h>

#include <ito/policy.h>

#include "common.h"

static void nop_enqueue(ito_policy_vproc_t *vp, ito_policy_node_t *n, ito_ready_reason_t why) {}
static ito_policy_node_t *nop_pick(ito_policy_vproc_t *vp) { return NULL; }

static const ito_policy_ops_t lifo_ops = {
    .abi = ITO_POLICY_ABI,
    .size = sizeof(ito_policy_ops_t),
    .name = "valid-name",
    .enqueue = nop_enqueue,
    .pick = nop_pick,
};

/* ---- registration errors ---- */

static void case_errors(void)
{
    ito_policy_ops_t o;
    CHECK_EQ(ito_policy_register(NULL), EINVAL);

    o = lifo_ops;
    o.abi = ITO_POLICY_ABI + 1;
    CHECK_EQ(ito_policy_register(&o), ENOTSUP);
    o.abi = 0;
    CHECK_EQ(ito_policy_register(&o), ENOTSUP);

    /* Sizes: too small to hold the required ops. */
    size_t need = offsetof(ito_policy_ops_t, pick) + sizeof(void *);
    uint32_t small[] = { 0, 4, (uint32_t)offsetof(ito_policy_ops_t, enqueue), (uint32_t)need - 1 };
    for (unsigned i = 0; i < sizeof small / sizeof small[0]; i++) {
        o = lifo_ops;
        o.name = "size-test";
        o.size = small[i];
        CHECK_EQ(ito_policy_register(&o), EINVAL);
    }

    /* Missing required operations. */
    o = lifo_ops;
    o.name = "no-enqueue";
    o.enqueue = NULL;
    CHECK_EQ(ito_policy_register(&o), EINVAL);
    o = lifo_ops;
    o.name = "no-pick";
    o.pick = NULL;
    CHECK_EQ(ito_policy_register(&o), EINVAL);

    /* Bad names. */
    char too_long[ITO_POLICY_NAME_MAX + 1];
    memset(too_long, 'a', ITO_POLICY_NAME_MAX);
    too_long[ITO_POLICY_NAME_MAX] = 0;   /* ITO_POLICY_NAME_MAX chars: no room for NUL */
    const char *bad[] = { NULL, "", "Bad Name", "UPPER", "sp ace", "dot.name", "slash/x", "é",
                          "tab\t", too_long };
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = lifo_ops;
        o.name = bad[i];
        if (ito_policy_register(&o) != EINVAL) {
            fprintf(stderr, "name \"%s\" was not rejected\n", bad[i] ? bad[i] : "(null)");
            abort();
        }
    }

    /* Taken names: one of ours. */
    o = lifo_ops;
    o.name = "taken";
    OK(ito_policy_register(&o));
    CHECK_EQ(ito_policy_register(&o), EEXIST);
    ito_policy_ops_t other = lifo_ops;
    other.name = "taken";
    CHECK_EQ(ito_policy_register(&other), EEXIST);

    /* Nothing rejected got in the way: ito initializes with the default. */
    OK(ito_init(NULL));
    CHECK(strcmp(ito_policy_name(), "ws") == 0);
}

static const char *const builtin_names[] = { "ws", "fifo", "prio", "prio-shared", "affinity" };

/* The built-in names are taken from the start, before anything has
 * initialized ito; registering them must not succeed (and must not break
 * the initialization that follows). */
static void case_builtin_names_before_init(void)
{
    ito_policy_ops_t o = lifo_ops;
    for (size_t i = 0; i < sizeof builtin_names / sizeof *builtin_names; i++) {
        o.name = builtin_names[i];
        CHECK_EQ(ito_policy_register(&o), EEXIST);
    }
    OK(ito_init(NULL));
    CHECK(strcmp(ito_policy_name(), "ws") == 0);
}

static void case_builtin_names_after_init(void)
{
    OK(ito_init(NULL));
    ito_policy_ops_t o = lifo_ops;
    for (size_t i = 0; i < sizeof builtin_names / sizeof *builtin_names; i++) {
        o.name = builtin_names[i];
        CHECK_EQ(ito_policy_register(&o), EEXIST);
    }
}

/* Registers uniquely named copies of lifo_ops until the registry refuses
 * one, and checks it refused with ENOSPC after exactly ITO_POLICIES_MAX - 5:
 * the five built-ins take their slots whether or not ito is initialized. */
static void fill_registry(void)
{
    static ito_policy_ops_t filler[ITO_POLICIES_MAX + 1];
    static char names[ITO_POLICIES_MAX + 1][16];
    int n = 0, e;
    for (;;) {
        CHECK(n <= ITO_POLICIES_MAX);
        filler[n] = lifo_ops;
        snprintf(names[n], sizeof names[n], "filler-%d", n);
        filler[n].name = names[n];
        if ((e = ito_policy_register(&filler[n])) != 0)
            break;
        n++;
    }
    CHECK_EQ(e, ENOSPC);
    CHECK_EQ(n, ITO_POLICIES_MAX - 5);
}

/* ITO_POLICIES_MAX counts the built-ins; registering after
 * initialization is allowed. */
static void case_capacity_after_init(void)
{
    OK(ito_init(NULL));
    fill_registry();
    CHECK(strcmp(ito_policy_name(), "ws") == 0);
}

/* Before initialization, the built-ins count as well: the registry has room
 * for ITO_POLICIES_MAX - 5 more, and ito still initializes afterwards. */
static void case_capacity_before_init(void)
{
    fill_registry();
    OK(ito_init(NULL));
    CHECK(strcmp(ito_policy_name(), "ws") == 0);
}

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    { "errors", case_errors },
    { "builtin_names_after_init", case_builtin_names_after_init },
    { "capacity_after_init", case_capacity_after_init },
    { "builtin_names_before_init", case_builtin_names_before_init },
    { "capacity_before_init", case_capacity_before_init },
};

int main(int argc, char **argv)
{
    enum { NCASES = sizeof cases / sizeof cases[0] };
    if (argc == 2) {
        for (int i = 0; i < NCASES; i++)
            if (strcmp(argv[1], cases[i].name) == 0) {
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
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "case %s: %s; stderr:\n%s\n", cases[i].name,
                    test_status_str(st, sb, sizeof sb), err);
            failed++;
        }
    }
    CHECK_EQ(failed, 0);
    return 0;
}


