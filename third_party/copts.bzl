"""Compiler options shared by every ringlet target: strict on our code."""

# Carried by the targets, so a workspace that depends on one builds them as
# we do without our .bazelrc: C++17 (Bazel 4's toolchain passes -std=c++0x),
# optimised whatever its --compilation_mode but dbg (Eigen's kernels run
# about 13x slower unoptimised and with their asserts), and for the CPU
# level --define=ringlet_cpu names (our .bazelrc's --config=portable and
# --config=avx512 set it).
RINGLET_COPTS = [
    "-std=c++17",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-sign-compare",
] + select({
    "//third_party:debug_build": [],
    "//conditions:default": ["-O2", "-DNDEBUG"],
}) + select({
    "//third_party:cpu_portable": ["-march=x86-64"],
    # GCC 12 warns falsely inside its own avx512fintrin.h
    # (_mm512_undefined_*).
    "//third_party:cpu_avx512": [
        "-march=x86-64-v4",
        "-Wno-maybe-uninitialized",
        "-Wno-uninitialized",
    ],
    # AVX2 and FMA (x86-64-v3: Intel since 2013, every AMD Zen): Eigen's
    # matrix products run twice as fast as with the SSE2 baseline.
    "//conditions:default": ["-march=x86-64-v3"],
})

# target_compatible_with for targets that link oneDNN: skipped (not failed)
# in builds with --define=ringlet_onednn=off. Their dependents are skipped
# with them.
REQUIRES_ONEDNN = select({
    "//third_party:without_onednn": ["@platforms//:incompatible"],
    "//conditions:default": [],
})
