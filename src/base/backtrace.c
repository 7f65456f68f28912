/* SPDX-License-Identifier: MIT */
/* Backtraces from any register set: see backtrace.h. */
#define UNW_LOCAL_ONLY
#include "base/backtrace.h"

#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

static uintptr_t parse_hex(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v << 4 | (uintptr_t)d;
    }
}

/* The file mapped at ip and ip's offset in it, from /proc/self/maps: with
 * open and read only, so that a signal handler may call it (dladdr takes the
 * loader's lock, which the interrupted code may hold). For the objects the
 * linker makes, a text segment's file offset is its address, so the offset
 * is what addr2line takes. */
static bool module_of(uintptr_t ip, char *path, size_t cap, uintptr_t *off)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[4096], line[512];
    size_t len = 0;
    bool found = false, eof = false;
    while (!found && !eof) {
        ssize_t r = ito__sys_read(fd, buf, sizeof buf);
        eof = r <= 0;
        for (ssize_t i = 0; i < (eof ? 1 : r) && !found; i++) {
            char c = eof ? '\n' : buf[i];
            if (c != '\n') {
                if (len + 1 < sizeof line)
                    line[len++] = c;
                continue;
            }
            line[len] = '\0';
            len = 0;
            /* start-end perms offset dev inode path */
            const char *p = line;
            uintptr_t lo = parse_hex(&p);
            if (*p++ != '-')
                continue;
            uintptr_t hi = parse_hex(&p);
            if (ip < lo || ip >= hi)
                continue;
            p = strchr(p, ' ');                /* perms */
            if (!p)
                break;
            p++;
            p = strchr(p, ' ');
            if (!p)
                break;
            p++;
            uintptr_t file_off = parse_hex(&p);
            const char *name = strchr(p, '/');
            if (!name)
                name = strchr(p, '[');   /* [vdso] and the like */
            if (!name)
                break;   /* anonymous memory: no module */
            size_t n = strlen(name);
            if (n >= cap)
                name += n - (cap - 1);
            strcpy(path, name);
            *off = ip - lo + file_off;
            found = true;
        }
    }
    close(fd);
    return found;
}

int ito__bt_capture(struct ito__bt *bt, ucontext_t *uc, bool signal_frame)
{
    bt->n = 0;
    bt->more = false;
    bt->signal_frame = signal_frame;
    unw_cursor_t cur;
    if (unw_init_local2(&cur, (unw_context_t *)uc, signal_frame ? UNW_INIT_SIGNAL_FRAME : 0) != 0)
        return 0;
    do {
        if (bt->n == ITO__BT_FRAMES) {
            bt->more = true;
            break;
        }
        unw_word_t ip;
        if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0 || ip == 0)
            break;
        /* A cursor is copied by assignment; the copy names its frame later,
         * when the stack it walked may have changed. */
        _Static_assert(sizeof bt->cursors[0] >= sizeof(unw_cursor_t), "ITO__BT_CURSOR_WORDS too small");
        memcpy(&bt->cursors[bt->n], &cur, sizeof cur);
        bt->ip[bt->n++] = ip;
    } while (unw_step(&cur) > 0);
    return bt->n;
}

static _Atomic bool names_off;

void ito__bt_names_off(void) { atomic_store_explicit(&names_off, true, memory_order_relaxed); }

int ito__bt_print(int fd, struct ito__bt *bt, const char *indent)
{
    bool names = !atomic_load_explicit(&names_off, memory_order_relaxed);
    struct frame fr[ITO__BT_FRAMES];
    int n = bt->n;
    bool more = bt->more, signal_frame = bt->signal_frame;
    for (int i = 0; i < n; i++) {
        unw_word_t off = 0;
        fr[i].ip = bt->ip[i];
        if (!names ||
            (unw_get_proc_name((unw_cursor_t *)&bt->cursors[i], fr[i].name, sizeof fr[i].name, &off) != 0 && off == 0))
            strcpy(fr[i].name, "??");
        fr[i].off = off;
    }

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
        /* A return address belongs to the call before it. */
        uintptr_t at_ip = i == 0 && signal_frame ? fr[i].ip : fr[i].ip - 1;
        char mod[256];
        uintptr_t off;
        if (module_of(at_ip, mod, sizeof mod, &off)) {
            at = put(line, at, sizeof line, " (");
            at = put(line, at, sizeof line, mod);
            at = put(line, at, sizeof line, "+");
            at = put_hex(line, at, sizeof line, off);
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

int ito__bt_write(int fd, ucontext_t *uc, bool signal_frame, const char *indent)
{
    /* 32 KiB: not on a signal stack. One writer at a time; another (two
     * threads crashing at once) writes the line without the frames. */
    static struct ito__bt bt;
    static atomic_flag busy = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire)) {
        char line[128];
        size_t at = put(line, 0, sizeof line, indent);
        at = put(line, at, sizeof line, "(no backtrace: another is being written)\n");
        ssize_t w = ito__sys_write(fd, line, at);
        (void)w;
        return 0;
    }
    ito__bt_capture(&bt, uc, signal_frame);
    int n = ito__bt_print(fd, &bt, indent);
    atomic_flag_clear_explicit(&busy, memory_order_release);   /* pairs with the acquire above */
    return n;
}
