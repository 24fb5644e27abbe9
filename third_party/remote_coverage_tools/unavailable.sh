#!/bin/sh
echo "coverage tools are not available in ringlet's offline Bazel setup" >&2
exit 1
