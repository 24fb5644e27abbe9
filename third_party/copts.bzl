"""Compiler options shared by every ringlet target: strict on our code."""

RINGLET_COPTS = [
    # Carried by the targets, so a workspace that depends on one builds it
    # without our .bazelrc (Bazel 4's toolchain passes -std=c++0x).
    "-std=c++17",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-sign-compare",
]

# target_compatible_with for targets that link oneDNN: skipped (not failed)
# in builds with --define=ringlet_onednn=off. Their dependents are skipped
# with them.
REQUIRES_ONEDNN = select({
    "//third_party:without_onednn": ["@platforms//:incompatible"],
    "//conditions:default": [],
})
