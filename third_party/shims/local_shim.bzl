"""A repository that mirrors a folder of ringlet's own tree.

ringlet_dependencies() uses it for the offline shims (@rules_cc,
@remote_coverage_tools) so that a workspace depending on ringlet gets them
without knowing where ringlet's checkout lies: a local_repository path is
relative to the calling workspace, a label is not.
"""

def _local_shim_impl(rctx):
    folder = rctx.path(rctx.attr.workspace_file).dirname
    for entry in folder.readdir():
        rctx.symlink(entry, entry.basename)

local_shim = repository_rule(
    implementation = _local_shim_impl,
    attrs = {
        "workspace_file": attr.label(
            mandatory = True,
            allow_single_file = True,
            doc = "The WORKSPACE file of the folder to mirror.",
        ),
    },
    local = True,
)
