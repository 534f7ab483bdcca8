#!/usr/bin/env python3
"""Digest of every kernel's machine code in CUDA object files, without cuobjdump.

Reads the fatbinary (.nv_fatbin) of each object file given, finds the cubins (ELF) inside it and
prints one line per kernel and architecture: sm_XX, the sha256 of the kernel's .text section, and
its symbol. Two builds whose lines agree run the same instructions. Usage:
  tools/cuda/kernel_sass_digest.py a.cu.o [b.cu.o ...] | sort > digest.txt
Only uncompressed fatbins are read (nvcc's default for these builds); compressed cubins are reported.
"""
import hashlib
import re
import struct
import subprocess
import sys
import tempfile


def fatbin_of(obj):
    with tempfile.NamedTemporaryFile() as t:
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", obj, t.name], check=True)
        return open(t.name, "rb").read()


def cubins(blob):
    at = blob.find(b"\x7fELF")
    while at >= 0:
        if blob[at + 4] != 2:  # ELF64 only
            at = blob.find(b"\x7fELF", at + 4)
            continue
        shoff, = struct.unpack_from("<Q", blob, at + 0x28)
        shentsize, shnum = struct.unpack_from("<HH", blob, at + 0x3A)
        end = at + shoff + shentsize * shnum
        yield blob[at:end]
        at = blob.find(b"\x7fELF", end)


def sections(elf):
    flags, = struct.unpack_from("<I", elf, 0x30)
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names = hdrs[shstrndx]
    for h in hdrs:
        start = names[4] + h[0]
        name = elf[start:elf.index(b"\0", start)].decode()
        yield flags, name, elf[h[4]:h[4] + h[5]] if h[1] != 8 else b""


def main():
    for obj in sys.argv[1:]:
        for elf in cubins(fatbin_of(obj)):
            for flags, name, data in sections(elf):
                if name.startswith(".text."):
                    # e_flags: the SM number in bits 8-15 (CUDA 12+ cubins) or 0-7 (older).
                    sm = (flags >> 8) & 0xFF or flags & 0xFF
                    # An anonymous namespace's mangled name carries its file's name and a hash:
                    # dropped, so that a kernel compiled in another file compares by its own name.
                    kernel = re.sub(r"\d+_GLOBAL__N__\w+?_cu_[0-9a-f]{8}", "(anon)", name[6:])
                    print(f"sm_{sm} {hashlib.sha256(data).hexdigest()[:16]} {len(data)} {kernel}")


if __name__ == "__main__":
    main()
