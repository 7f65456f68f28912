/* SPDX-License-Identifier: MIT */
/*
 * together — several copies of a benchmark started at the same moment
 * ([SA Table 5]: two parallel programs sharing a machine).
 *
 *   together [--copies K] PROGRAM ARGS...
 *
 * Runs K copies (default 2) of bench/PROGRAM with ARGS at once, and prints
 * one JSON line with each copy's "seconds" (seconds_0, seconds_1, ...),
 * their sum and the longest ("seconds"). The copies' ito processes meet in
 * an allocation domain of their own (ITO_ALLOC_DOMAIN=together-PID), so that
 * other ito processes on the machine do not change what is measured; the
 * domain's table is removed at the end. A copy that fails makes the whole
 * run fail.
 */
#include "common.h"

#include <libgen.h>
#include <sys/wait.h>

#define MAX_COPIES 16

int main(int argc, char **argv)
{
    bench_exp = "together";
    bench_impl = "-";
    int first = 1, copies = 2;
    if (argc > 2 && !strcmp(argv[1], "--copies")) {
        copies = atoi(argv[2]);
        first = 3;
    }
    if (first >= argc || copies < 1 || copies > MAX_COPIES)
        bench_fail("usage: together [--copies K (1..16)] PROGRAM ARGS...");
    char self[4096], path[4096];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(path, sizeof path, "%s/%s", dirname(self), argv[first]);
    bench_own_domain("together");

    int out[MAX_COPIES];
    pid_t pid[MAX_COPIES];
    for (int k = 0; k < copies; k++) {
        int p[2];
        if (pipe(p) != 0)
            bench_fail("pipe: %s", strerror(errno));
        pid[k] = fork();
        if (pid[k] < 0)
            bench_fail("fork: %s", strerror(errno));
        if (pid[k] == 0) {
            dup2(p[1], 1);
            close(p[0]);
            close(p[1]);
            execv(path, argv + first);
            fprintf(stderr, "together: cannot run %s: %s\n", path, strerror(errno));
            _exit(127);
        }
        close(p[1]);
        out[k] = p[0];
    }
    double secs[MAX_COPIES], sum = 0, longest = 0;
    int failed = 0;
    for (int k = 0; k < copies; k++) {
        char buf[16384];
        size_t n = 0;
        ssize_t r;
        while (n < sizeof buf - 1 && (r = read(out[k], buf + n, sizeof buf - 1 - n)) > 0)
            n += (size_t)r;
        buf[n] = '\0';
        close(out[k]);
        int st;
        waitpid(pid[k], &st, 0);
        const char *s = strstr(buf, "\"seconds\":");
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !s || strstr(buf, "\"error\"")) {
            failed = 1;
            continue;
        }
        secs[k] = strtod(s + strlen("\"seconds\":"), NULL);
        sum += secs[k];
        if (secs[k] > longest)
            longest = secs[k];
    }
    bench_own_domain_remove();
    if (failed)
        bench_fail("a copy of %s failed", argv[first]);
    json_begin("together", "-");
    json_str("program", argv[first]);
    json_int("copies", copies);
    for (int k = 0; k < copies; k++) {
        char key[32];
        snprintf(key, sizeof key, "seconds_%d", k);
        json_num(key, secs[k]);
    }
    json_num("seconds_sum", sum);
    json_num("seconds", longest);
    json_end();
    return 0;
}
