// The command-line conventions of every ringlet binary, over CLI11:
//  - --help shows each option's default, and types as words (INT, NUMBER,
//    true|false); every default it shows is accepted when passed back;
//  - a flag given twice takes its last value (as gflags and argparse do),
//    so a script can append an override;
//  - dashed spellings are aliases of the underscored names (--batch-size is
//    --batch_size), as torchrun users type them;
//  - a usage error is one line, "<program>: <what> (see --help)", and exit
//    code 2 (the shell convention; CLI11's own codes are 105 to 115); an
//    unknown flag names the nearest known one ("did you mean --epochs?");
//  - --print_flags prints every flag's value, as a config file would hold
//    it, and exits: what a run with these flags would use.
#ifndef RINGLET_CLI_CONVENTIONS_H_
#define RINGLET_CLI_CONVENTIONS_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace ringlet::cli {

// The exit code of a usage error.
inline constexpr int kUsageError = 2;

// Applies the conventions to `app`: call before adding options.
void UseConventions(CLI::App& app);

// Parses argv into `app`. Returns -1 when the program should go on, else
// the code to exit with: 0 after --help or --print_flags, kUsageError
// after a bad flag (its message printed on stderr).
int ParseFlags(CLI::App& app, int argc, char** argv);

// The known long flag nearest to `unknown` ("--epoch" -> "--epochs") by
// edit distance, or "" when none is close (more than a third of its
// letters, and at least 2, would have to change).
std::string NearestFlag(const std::string& unknown,
                        const std::vector<std::string>& known);

// A finite number in [min, max) (no upper bound when max is infinite), as
// one short line otherwise: "must be a number at least 0 and below 1, got
// 'nan'". CLI11's Range lets nan through (every comparison with it is
// false) and prints a double's whole range.
CLI::Validator RealIn(double min, double max);

// A whole number from 0 to 2^64 - 1, written in digits: CLI11 reads "-1"
// into a uint64_t as 2^64 - 1 and clamps values past it.
CLI::Validator Unsigned64();

}  // namespace ringlet::cli

// In main(): parse, or return the exit code.
#define RINGLET_PARSE_FLAGS(app, argc, argv)                              \
  do {                                                                    \
    const int ringlet_exit = ::ringlet::cli::ParseFlags(app, argc, argv); \
    if (ringlet_exit >= 0) return ringlet_exit;                           \
  } while (0)

#endif  // RINGLET_CLI_CONVENTIONS_H_
