"""CUDA in the build: if_cuda, cuda_compatible and the cuda_library macro.

cuda_library compiles .cu sources with nvcc into position-independent
objects and wraps them in a cc_library, so C++ targets depend on CUDA code
like on any other library. The GPU architectures are listed once, here.
"""

load("@local_cuda//:defs.bzl", "CUDA_FOUND", "NVCC")

# Real code for Ampere (sm_80) and Hopper (sm_90), plus PTX for newer GPUs.
CUDA_GENCODE_FLAGS = [
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=[sm_90,compute_90]",
]

_INCOMPATIBLE = ["@platforms//:incompatible"]

def if_cuda(if_true, if_false = []):
    """Selects if_true in builds with CUDA (the toolkit found and
    --define=ringlet_cuda=on), if_false otherwise."""
    if not CUDA_FOUND:
        return if_false
    return select({
        "//third_party/cuda:cuda_enabled": if_true,
        "//conditions:default": if_false,
    })

def cuda_compatible():
    """A target_compatible_with value: only builds that have CUDA."""
    return if_cuda([], _INCOMPATIBLE)

def _cuda_objects_impl(ctx):
    contexts = [d[CcInfo].compilation_context for d in ctx.attr.deps]
    headers = depset(ctx.files.hdrs, transitive = [c.headers for c in contexts])
    includes = depset(transitive = [c.includes for c in contexts] +
                                   [c.quote_includes for c in contexts])
    system_includes = depset(transitive = [c.system_includes for c in contexts])
    defines = depset(transitive = [c.defines for c in contexts])

    objects = []
    for src in ctx.files.srcs:
        stem = src.basename[:-len(src.extension) - 1]
        obj = ctx.actions.declare_file(
            "_objs/%s/%s.pic.o" % (ctx.label.name, stem),
        )
        args = ctx.actions.args()
        args.add_all(["-x", "cu", "-std=c++17", "-O3", "-lineinfo"])
        args.add_all(["--compiler-options", "-fPIC,-Wall,-Werror"])
        args.add("--Werror=all-warnings")
        args.add_all(CUDA_GENCODE_FLAGS)
        args.add_all(["-I.", "-I" + ctx.bin_dir.path])
        args.add_all(includes, format_each = "-I%s")
        args.add_all(system_includes, format_each = "-isystem=%s")
        args.add_all(defines, format_each = "-D%s")
        args.add_all(ctx.attr.copts)
        args.add_all(["-c", src.path, "-o", obj.path])
        ctx.actions.run(
            executable = NVCC,
            arguments = [args],
            inputs = depset([src], transitive = [headers]),
            outputs = [obj],
            mnemonic = "NvccCompile",
            progress_message = "nvcc %s" % src.short_path,
            use_default_shell_env = True,
        )
        objects.append(obj)
    return [DefaultInfo(files = depset(objects))]

_cuda_objects = rule(
    implementation = _cuda_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = [".h", ".cuh"]),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
    },
)

def cuda_library(name, srcs, hdrs = [], deps = [], copts = [], **kwargs):
    """A cc_library whose .cu srcs are compiled by nvcc.

    Builds only where CUDA is found and not disabled (cuda_compatible()).
    Tagged "cuda" so CI can list and build every CUDA target explicitly.
    Extra kwargs (visibility, testonly, tags) go to the cc_library.
    """
    tags = kwargs.pop("tags", [])
    if "cuda" not in tags:
        tags = tags + ["cuda"]
    _cuda_objects(
        name = name + "_nvcc",
        srcs = srcs,
        hdrs = hdrs,
        deps = deps + ["@local_cuda//:headers"],
        copts = copts,
        target_compatible_with = cuda_compatible(),
        testonly = kwargs.get("testonly", False),
        visibility = ["//visibility:private"],
        tags = tags,
    )
    native.cc_library(
        name = name,
        srcs = [":" + name + "_nvcc"],
        hdrs = hdrs,
        deps = deps + ["@local_cuda//:cudart"],
        target_compatible_with = cuda_compatible(),
        tags = tags,
        **kwargs
    )
