#!/usr/bin/python3
"""The parameter hash of a trainer's --params_out file: SHA-256 of its
tensors' bytes, 16 hex digits (the header after the magic line names and
shapes the tensors; the values are what --reproducible keeps the same).

  tools/params_hash.py FILE...   one hash a line, in order

Exits 1, naming the file, for one that is not a ringlet parameter file.
"""
import hashlib
import struct
import sys

MAGIC = b"ringlet checkpoint 1\n"


def params_hash(path):
    data = open(path, "rb").read()
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 16:
        sys.exit(f"{path} is not a ringlet parameter file")
    (header,) = struct.unpack_from("<Q", data, len(MAGIC))
    values = data[len(MAGIC) + 8 + header:len(data) - 8]
    return hashlib.sha256(values).hexdigest()[:16]


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        print(params_hash(path))
