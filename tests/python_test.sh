#!/usr/bin/env bash
# Runs a Python test with the system's Python (Debian's, where ./bazelw
# installs numpy, scikit-learn, PyTorch and safetensors). Args: the script,
# then its args.
exec /usr/bin/python3 "$@"
