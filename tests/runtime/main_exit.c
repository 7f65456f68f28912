/* SPDX-License-Identifier: MIT */
/* ito_exit in main: the process goes on until every other ito thread has
 * exited, then exits with status 0; nothing after ito_exit runs. Checked in a
 * child process (this same executable, run with an argument). */
#include "common.h"

enum { N = 10 };

static void say(const char *s) { ssize_t w = write(2, s, strlen(s)); (void)w; }

static void *worker(void *a)
{
    int i = (int)(intptr_t)a;
    /* Outlive main's ito_exit by a good margin, switching all along. */
    for (int k = 0; k < 20; k++) {
        ito_sleep_ns(1000000);
        ito_yield();
    }
    char buf[32];
    snprintf(buf, sizeof buf, "worker %d done\n", i);
    say(buf);
    return NULL;
}

static void *spawner(void *a)
{
    /* Threads created after main exited count too. */
    ito_sleep_ns(10000000);
    ito_attr_t at;
    OK(ito_attr_init(&at));
    OK(ito_attr_set_detached(&at, true));
    OK(ito_spawn(NULL, &at, worker, (void *)(intptr_t)N));
    return NULL;
}

static int child(void)
{
    ito_attr_t at;
    OK(ito_attr_init(&at));
    OK(ito_attr_set_detached(&at, true));
    for (int i = 0; i < N; i++)
        OK(ito_spawn(NULL, &at, worker, (void *)(intptr_t)i));
    ito_thread_t t;   /* joinable, never joined */
    OK(ito_spawn(&t, NULL, spawner, NULL));
    say("main exits\n");
    ito_exit((void *)1);
    say("after ito_exit\n");   /* never */
    return 3;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "child") == 0)
        return child();
    static char err[8192];
    int st = test_run_self("child", err, sizeof err);
    char sb[128];
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "child %s; its stderr:\n%s\n", test_status_str(st, sb, sizeof sb), err);
        abort();
    }
    CHECK(strstr(err, "main exits\n") != NULL);
    CHECK(strstr(err, "after ito_exit") == NULL);
    for (int i = 0; i <= N; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "worker %d done\n", i);
        if (!strstr(err, buf)) {
            fprintf(stderr, "missing \"%s\" in the child's stderr:\n%s\n", buf, err);
            abort();
        }
    }
    return 0;
}
