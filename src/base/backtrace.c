/* SPDX-License-Identifier: MIT */
/* Backtraces from any register set: see backtrace.h. */
#define UNW_LOCAL_ONLY
#include "base/backtrace.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "base/libc.h"

/* ito's own library when it is a shared object (libito.so or
 * libito-pthread.so): its text, to tell its frames from the program's.
 * Linked statically, ito's code is in the program's module and is told by
 * its names (ito__ prefix) only. Found once, from a normal context. */
static uintptr_t self_lo, self_hi;
static bool self_found;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t me = (uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || me < lo || me >= lo + ph->p_memsz)
            continue;
        const char *slash = strrchr(info->dlpi_name, '/');
        const char *base = slash ? slash + 1 : info->dlpi_name;
        if (strncmp(base, "libito", 6) == 0) {
            self_lo = lo;
            self_hi = lo + ph->p_memsz;
        }
        return 1;
    }
    return 0;
}

void ito__bt_init(void)
{
    if (!self_found) {
        dl_iterate_phdr(find_self, (void *)(uintptr_t)ito__bt_write);
        self_found = true;
    }
}

static bool is_ito(uintptr_t ip, const char *name)
{
    return (ip >= self_lo && ip < self_hi) || strncmp(name, "ito__", 5) == 0;
}

static size_t put(char *buf, size_t at, size_t cap, const char *s)
{
    while (*s && at + 1 < cap)
        buf[at++] = *s++;
    return at;
}

static size_t put_hex(char *buf, size_t at, size_t cap, uintptr_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    at = put(buf, at, cap, "0x");
    while (n && at + 1 < cap)
        buf[at++] = tmp[--n];
    return at;
}

struct frame {
    uintptr_t ip;
    uintptr_t off;
    char name[80];
};

int ito__bt_write(int fd, ucontext_t *uc, bool signal_frame, bool modules, const char *indent)
{
    struct frame fr[ITO__BT_FRAMES];
    unw_cursor_t cur;
    if (unw_init_local2(&cur, (unw_context_t *)uc, signal_frame ? UNW_INIT_SIGNAL_FRAME : 0) != 0)
        return 0;
    int n = 0;
    bool more = false;
    do {
        if (n == ITO__BT_FRAMES) {
            more = true;
            break;
        }
        unw_word_t ip, off = 0;
        if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0 || ip == 0)
            break;
        fr[n].ip = ip;
        if (unw_get_proc_name(&cur, fr[n].name, sizeof fr[n].name, &off) != 0 && off == 0)
            strcpy(fr[n].name, "??");
        fr[n].off = off;
        n++;
    } while (unw_step(&cur) > 0);

    /* Skip ito's own leading frames (the switch, the park) but the one the
     * program called; all of them if nothing else is there. */
    int first = 0, last = n;
    while (first < n && is_ito(fr[first].ip, fr[first].name))
        first++;
    if (first == n)
        first = 0;
    else if (first > 0)
        first--;   /* the call into ito: what the thread does there */
    /* ... and its own last frames (a thread's entry, the trampoline). */
    while (!more && last - 1 > first && is_ito(fr[last - 1].ip, fr[last - 1].name))
        last--;

    for (int i = first; i < last; i++) {
        char line[256];
        size_t at = put(line, 0, sizeof line, indent);
        at = put(line, at, sizeof line, fr[i].name);
        if (fr[i].off) {
            at = put(line, at, sizeof line, "+");
            at = put_hex(line, at, sizeof line, fr[i].off);
        }
        Dl_info dli;
        /* A return address belongs to the call before it. */
        uintptr_t at_ip = i == 0 && signal_frame ? fr[i].ip : fr[i].ip - 1;
        if (modules && dladdr((void *)at_ip, &dli) && dli.dli_fname) {
            at = put(line, at, sizeof line, " (");
            at = put(line, at, sizeof line, dli.dli_fname[0] ? dli.dli_fname : "?");
            at = put(line, at, sizeof line, "+");
            at = put_hex(line, at, sizeof line, at_ip - (uintptr_t)dli.dli_fbase);
            at = put(line, at, sizeof line, ")");
        } else {
            at = put(line, at, sizeof line, " [");
            at = put_hex(line, at, sizeof line, fr[i].ip);
            at = put(line, at, sizeof line, "]");
        }
        line[at++] = '\n';
        ssize_t w = ito__sys_write(fd, line, at);
        (void)w;
    }
    if (more) {
        char line[128];
        size_t at = put(line, 0, sizeof line, indent);
        at = put(line, at, sizeof line, "...\n");
        ssize_t w = ito__sys_write(fd, line, at);
        (void)w;
    }
    return last - first;
}
