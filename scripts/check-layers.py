#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layer check: every folder of src/ depends only on folders below it.

ito's source folders are layers (docs/architecture.md). A folder may include
headers of, and use symbols defined in, only the folders of a lower rank;
folders of the same rank know nothing of each other. Where a lower layer must
reach up it calls through a hook table filled at init (runtime/hooks.h,
arch's ito__ctx_on_return), which this check cannot see and does not need to.

Checked two ways, so that neither a stray #include nor a call declared by
hand slips through:
  - includes: every #include "folder/file.h" in src/ (the arch folder's
    headers are included as "arch.h");
  - symbols: with --objects, the undefined symbols of each object file of
    the library (nm), resolved to the object that defines them; and no
    object but posix/io.c uses the blocking I/O calls it defines.

Usage: check-layers.py --src SRC [--objects LIST_FILE]
Exit status 1 with one line per violation.
"""
import argparse
import os
import re
import subprocess
import sys

# The layers, lowest first; folders in one entry share a rank.
LAYERS = [
    ["arch"],                          # context switch, TLS access, cycle counter
    ["base"],                          # panic, env, clock, futex, backoff, topology: no ito concepts
    ["runtime"],                       # threads, vprocs, activations, the run loop, the carrier
    ["policy", "upcall", "cpushare"],  # policies; emulated kernel events; processor sharing
    ["api"],                           # the public calls' gate, sync objects, I/O, init
    ["posix"],                         # the pthread face of libito-pthread.so
]
RANK = {folder: r for r, folders in enumerate(LAYERS) for folder in folders}
# The POSIX face's read, write, poll...: no other object of the library may
# call them (they would park ito's own code, and act on cancellation inside it).
PARKING_IO = os.path.join("posix", "io.c.o")


def folder_of(src, path):
    rel = os.path.relpath(path, src)
    return rel.split(os.sep)[0]


def check_includes(src):
    bad = []
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith((".c", ".h", ".S")):
                continue
            path = os.path.join(root, name)
            here = folder_of(src, path)
            if here not in RANK:
                bad.append(f"{path}: folder '{here}' has no layer (add it to LAYERS in {__file__})")
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in inc.finditer(text):
                target = m.group(1)
                there = "arch" if target == "arch.h" else target.split("/")[0]
                if there not in RANK:
                    continue   # a header beside the file, or not ito's
                if there != here and RANK[there] >= RANK[here]:
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{os.path.relpath(path, src)}:{line}: includes \"{target}\": "
                               f"{here} (layer {RANK[here]}) may not depend on {there} (layer {RANK[there]})")
    return bad


def nm(obj):
    out = subprocess.run(["nm", "--defined-only", "-g", obj], capture_output=True, text=True, check=True).stdout
    defined = {l.split()[-1] for l in out.splitlines() if len(l.split()) == 3}
    out = subprocess.run(["nm", "--undefined-only", obj], capture_output=True, text=True, check=True).stdout
    undefined = {l.split()[-1] for l in out.splitlines() if l.strip()}
    return defined, undefined


def check_symbols(src, objects):
    src_marker = os.sep + "src" + os.sep
    owner, uses = {}, {}
    for obj in objects:
        i = obj.rfind(src_marker)
        if i < 0:
            continue
        rel = obj[i + len(src_marker):]
        here = rel.split(os.sep)[0]
        defined, undefined = nm(obj)
        for s in defined:
            owner[s] = (here, rel)
        uses[rel] = (here, undefined)
    bad = []
    for rel, (here, undefined) in sorted(uses.items()):
        if here not in RANK:
            bad.append(f"{rel}: folder '{here}' has no layer")
            continue
        for s in sorted(undefined):
            if s not in owner:
                continue   # the C library, liburing, hwloc
            there, where = owner[s]
            if where == PARKING_IO and rel != PARKING_IO:
                bad.append(f"{rel}: uses {s} ({where}): the POSIX face's blocking I/O parks the caller "
                           f"and is a cancellation point; ito's own code calls base/libc.h's")
                continue
            if there != here and RANK[there] >= RANK[here]:
                bad.append(f"{rel}: uses {s} ({where}): {here} (layer {RANK[here]}) may not "
                           f"depend on {there} (layer {RANK[there]})")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--objects", action="append", default=[],
                    help="a file listing one library's object files, one per line (repeatable: "
                         "libito and libito-pthread are checked each on its own)")
    a = ap.parse_args()
    bad = check_includes(a.src)
    nobj = 0
    for listing in a.objects:
        with open(listing) as f:
            objects = [l.strip() for l in f if l.strip()]
        nobj += len(objects)
        bad += check_symbols(a.src, objects)
    for b in bad:
        print("layer violation:", b)
    order = " < ".join("{" + ", ".join(f) + "}" if len(f) > 1 else f[0] for f in LAYERS)
    if bad:
        print(f"{len(bad)} layer violations; the order is {order}; a lower layer reaches up only "
              "through a hook table filled at init (runtime/hooks.h)")
        return 1
    print(f"layers hold: {order} ({nobj} objects, includes of src/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
