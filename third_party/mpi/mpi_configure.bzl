"""Finds the system MPI through `mpicc --showme` (OpenMPI: libopenmpi-dev).

Creates @local_mpi//:mpi. Without mpicc the target is marked incompatible,
so builds that do not need MPI go on and those that do say why.
"""

def _first_word_list(rctx, args):
    result = rctx.execute(args)
    if result.return_code != 0:
        return None
    return result.stdout.strip().split(" ")

def _mpi_configure_impl(rctx):
    mpicc = rctx.which("mpicc")
    incdirs = _first_word_list(rctx, [mpicc, "--showme:incdirs"]) if mpicc else None
    libdirs = _first_word_list(rctx, [mpicc, "--showme:libdirs"]) if mpicc else None
    if incdirs == None or libdirs == None or not incdirs[0]:
        rctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
# No mpicc on PATH: install libopenmpi-dev (./bazelw does it).
cc_library(
    name = "mpi",
    target_compatible_with = ["@platforms//:incompatible"],
)
""")
        return

    # Symlink the header folder so its files can be declared as inputs.
    rctx.symlink(incdirs[0], "include")
    linkopts = []
    for d in libdirs:
        linkopts += ["-L" + d, "-Wl,-rpath," + d]
    linkopts.append("-lmpi")
    rctx.template("BUILD", rctx.attr._template, {
        "%{linkopts}": repr(linkopts),
    })

mpi_configure = repository_rule(
    implementation = _mpi_configure_impl,
    attrs = {
        "_template": attr.label(default = Label("//third_party/mpi:mpi.BUILD.tpl")),
    },
    environ = ["PATH"],
    local = True,
)
