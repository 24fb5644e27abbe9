#include "cli/run_main.h"

#include <cstdio>
#include <exception>
#include <iostream>
#include <new>

#include "cli/standard_streams.h"

namespace ringlet::cli {

int RunMain(const std::string& program, const std::function<int()>& body) {
  GuardStandardStreams();
  std::string what;
  try {
    const int code = body();
    // Lines lost to a closed pipe or a full disk are a failed run.
    const std::string lost = FlushStandardOutput();
    if (lost.empty()) return code;
    what = lost;
  } catch (const std::bad_alloc& e) {
    // nn's OutOfMemory says where and how much; a plain one says little.
    what = std::string(e.what()) == "std::bad_alloc"
               ? "out of memory (an allocation failed)"
               : e.what();
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what =
        "an exception that is not a std::exception (a bug: please report "
        "it)";
  }
  std::cout.flush();
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), what.c_str());
  return kRunError;
}

}  // namespace ringlet::cli
