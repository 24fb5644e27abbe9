#!/usr/bin/env bash
# Runs safetensors_interop_test.py with the system's Python (Debian's,
# where ./bazelw installs numpy and safetensors). Args: the script, then its
# args.
exec /usr/bin/python3 "$@"
