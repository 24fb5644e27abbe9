"""Compiler options shared by every ringlet target: strict on our code."""

RINGLET_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-sign-compare",
]
