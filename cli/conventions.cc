#include "cli/conventions.h"

#include <cstdio>
#include <string>

namespace ringlet::cli {

void UseConventions(CLI::App& app) {
  app.option_defaults()->always_capture_default()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  // One line: what was wrong and where to look (CLI11 prints the whole
  // --help after some errors).
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return a->get_name() + ": " + e.what() + " (see --help)\n";
  });
}

int ParseFlags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // Prints --help, or the failure message.
    return code == 0 ? 0 : kUsageError;
  }
}

}  // namespace ringlet::cli
