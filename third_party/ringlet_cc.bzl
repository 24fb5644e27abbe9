"""ringlet's C++ rules: cc_library, cc_binary and cc_test with RINGLET_COPTS.

Every ringlet target compiles with the same strict options, and a workspace
that depends on one gets them without ringlet's .bazelrc. A rule may add
copts of its own; they come after the shared ones.
"""

load("//third_party:copts.bzl", "RINGLET_COPTS")

def _with_copts(kwargs):
    kwargs["copts"] = RINGLET_COPTS + kwargs.pop("copts", [])
    return kwargs

def ringlet_cc_library(**kwargs):
    native.cc_library(**_with_copts(kwargs))

def ringlet_cc_binary(**kwargs):
    native.cc_binary(**_with_copts(kwargs))

# Every test prints a backtrace when it crashes (cli/crash_report.h).
_CRASH_REPORT = Label("//cli:crash_report")

def ringlet_cc_test(**kwargs):
    kwargs["deps"] = kwargs.pop("deps", []) + [_CRASH_REPORT]
    native.cc_test(**_with_copts(kwargs))

def ringlet_library_sources(name = "library_sources"):
    """The package's C++ sources but its tests, for the source checks in
    //tests (a layer named in parallel/, a batch cut twice)."""
    native.filegroup(
        name = name,
        srcs = native.glob(["*.h", "*.cc"], exclude = ["*_test.cc"]),
        visibility = ["//tests:__pkg__"],
    )
