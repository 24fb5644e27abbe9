"""The system libraries ringlet builds against, as Bazel repositories.

ringlet's own WORKSPACE calls ringlet_dependencies(); so does any workspace
that depends on a ringlet target (see README.md, "Use one target from another
workspace"). Every repository is local: nothing is downloaded. A repository
that the calling workspace already defined is left alone.
"""

load("//third_party/cuda:cuda_configure.bzl", "cuda_configure")
load("//third_party/mpi:mpi_configure.bzl", "mpi_configure")
load("//third_party/shims:local_shim.bzl", "local_shim")

def _maybe(rule, name, **kwargs):
    if not native.existing_rule(name):
        rule(name = name, **kwargs)

def ringlet_dependencies():
    """Declares what ringlet's targets need, all of it local.

    Bazel 4's offline shims (@rules_cc, @rules_java, @platforms,
    @remote_coverage_tools) and the system libraries (@eigen, @googletest,
    @benchmark, @cli11, @nlohmann_json, @onednn, @zlib, @libpng, @turbojpeg,
    @local_mpi, @local_cuda).
    """

    # Bazel 4 names these four and would download them; a workspace that
    # declared its own before calling us keeps them.
    # @rules_cc: our shim, forwarding cc_* to the native rules.
    _maybe(
        local_shim,
        name = "rules_cc",
        workspace_file = str(Label("//third_party/rules_cc:WORKSPACE")),
    )

    # @rules_java: Debian's bazel-rules-java.
    _maybe(
        native.local_repository,
        name = "rules_java",
        path = "/usr/share/bazel/rules/java",
    )

    # @platforms: Debian's bazel-platforms.
    _maybe(
        native.local_repository,
        name = "platforms",
        path = "/usr/share/bazel/tools/platforms",
    )

    # @remote_coverage_tools: a stub; `bazel coverage` needs a download.
    _maybe(
        local_shim,
        name = "remote_coverage_tools",
        workspace_file = str(Label("//third_party/remote_coverage_tools:WORKSPACE")),
    )

    # Eigen 3 headers (libeigen3-dev): the CPU kernels of nn/.
    _maybe(
        native.new_local_repository,
        name = "eigen",
        build_file = str(Label("//third_party:eigen.BUILD")),
        path = "/usr/include/eigen3",
    )

    # oneDNN (libdnnl-dev): the CPU convolutions, kernels chosen for the
    # running CPU (AVX2, AVX-512, AMX) at run time.
    _maybe(
        native.new_local_repository,
        name = "onednn",
        build_file = str(Label("//third_party:onednn.BUILD")),
        path = "/usr/include",
    )

    # GoogleTest and GoogleMock (libgtest-dev, libgmock-dev): unit tests.
    _maybe(
        native.new_local_repository,
        name = "googletest",
        build_file = str(Label("//third_party:googletest.BUILD")),
        path = "/usr/include",
    )

    # Google Benchmark (libbenchmark-dev): the *_bench targets.
    _maybe(
        native.new_local_repository,
        name = "benchmark",
        build_file = str(Label("//third_party:benchmark.BUILD")),
        path = "/usr/include/benchmark",
    )

    # CLI11 (libcli11-dev): flags and --help for every binary.
    _maybe(
        native.new_local_repository,
        name = "cli11",
        build_file = str(Label("//third_party:cli11.BUILD")),
        path = "/usr/include/CLI",
    )

    # nlohmann-json (nlohmann-json3-dev): the trainers' metrics files.
    _maybe(
        native.new_local_repository,
        name = "nlohmann_json",
        build_file = str(Label("//third_party:nlohmann_json.BUILD")),
        path = "/usr/include/nlohmann",
    )

    # zlib (zlib1g-dev): the gzip-compressed IDX files of Fashion-MNIST.
    _maybe(
        native.new_local_repository,
        name = "zlib",
        build_file = str(Label("//third_party:zlib.BUILD")),
        path = "/usr/include",
    )

    # libpng (libpng-dev) and libjpeg-turbo's TurboJPEG (libturbojpeg0-dev):
    # the images of ImageFolder data sets.
    _maybe(
        native.new_local_repository,
        name = "libpng",
        build_file = str(Label("//third_party:libpng.BUILD")),
        path = "/usr/include",
    )
    _maybe(
        native.new_local_repository,
        name = "turbojpeg",
        build_file = str(Label("//third_party:turbojpeg.BUILD")),
        path = "/usr/include",
    )

    # OpenMPI (libopenmpi-dev), found through `mpicc --showme`.
    _maybe(mpi_configure, name = "local_mpi")

    # CUDA with cuBLAS, cuDNN and NCCL at $CUDA_PATH (default /usr/local/cuda);
    # when it is absent, CUDA targets drop out of the build.
    _maybe(cuda_configure, name = "local_cuda")
