#include "cli/conventions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

namespace ringlet::cli {
namespace {

constexpr char kPrintFlags[] = "--print_flags";

// "--batch-size=512" -> "--batch_size=512" when `app` knows --batch_size
// and not --batch-size; anything else is left as it is.
std::string Underscored(const CLI::App& app, const std::string& arg) {
  if (arg.size() < 4 || arg.compare(0, 2, "--") != 0) return arg;
  const size_t eq = arg.find('=');
  const std::string name = arg.substr(0, eq);
  if (name.find('-', 2) == std::string::npos) return arg;
  std::string plain = name;
  std::replace(plain.begin() + 2, plain.end(), '-', '_');
  if (app.get_option_no_throw(name) != nullptr ||
      app.get_option_no_throw(plain) == nullptr) {
    return arg;
  }
  return eq == std::string::npos ? plain : plain + arg.substr(eq);
}

// Words in --help: a value option of type bool reads "true|false" with a
// default of "true" or "false" (CLI11 shows "BOOLEAN=1").
void NameTypesInWords(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_type_name() != "BOOLEAN" || opt->get_expected_min() == 0) {
      continue;
    }
    opt->type_name("true|false");
    const std::string shown = opt->get_default_str();
    if (shown == "1") opt->default_str("true");
    if (shown == "0") opt->default_str("false");
  }
}

// CLI11 writes a range's type twice ("INT:INT in [1 - 64]"): once.
class WordsFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override {
    static const std::regex kTwice(R"(\b([A-Z]+):\1 in \[)");
    return std::regex_replace(CLI::Formatter::make_option_opts(opt), kTwice,
                              "$1 in [");
  }
};

std::vector<std::string> LongNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
  }
  return names;
}

// "prog: --epoch=1: no such flag; did you mean --epochs? (see --help)"
std::string UnknownFlagMessage(const CLI::App& app, const std::string& arg) {
  const std::string name = arg.substr(0, arg.find('='));
  std::string line = app.get_name() + ": " + arg + ": ";
  line += name.rfind("-", 0) == 0 ? "no such flag" : "unexpected argument";
  const std::string near = NearestFlag(name, LongNames(app));
  if (!near.empty()) line += "; did you mean " + near + "?";
  return line + " (see --help)\n";
}

}  // namespace

std::string NearestFlag(const std::string& unknown,
                        const std::vector<std::string>& known) {
  auto bare = [](const std::string& s) {
    std::string out = s.substr(s.find_first_not_of('-') == std::string::npos
                                   ? s.size()
                                   : s.find_first_not_of('-'));
    std::replace(out.begin(), out.end(), '-', '_');
    return out;
  };
  const std::string a = bare(unknown);
  std::string best;
  size_t best_distance = std::max<size_t>(2, a.size() / 3) + 1;
  for (const std::string& candidate : known) {
    const std::string b = bare(candidate);
    // Levenshtein distance, one row at a time.
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                           diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diagonal = above;
      }
    }
    if (row[b.size()] < best_distance) {
      best_distance = row[b.size()];
      best = candidate;
    }
  }
  return best;
}

CLI::Validator RealIn(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        try {
          size_t used = 0;
          const double v = std::stod(text, &used);
          if (used == text.size() && std::isfinite(v) && v >= min && v < max) {
            return "";
          }
        } catch (const std::exception&) {
        }
        char range[64];
        if (std::isinf(max)) {
          std::snprintf(range, sizeof(range), "%g or more", min);
        } else {
          std::snprintf(range, sizeof(range), "at least %g and below %g", min,
                        max);
        }
        return "must be a number " + std::string(range) + ", got '" + text +
               "'";
      },
      "");
}

CLI::Validator Unsigned64() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::string range =
            "must be a whole number from 0 to 18446744073709551615, got '" +
            text + "'";
        if (text.empty() || text.size() > 20 ||
            text.find_first_not_of("0123456789") != std::string::npos) {
          return range;
        }
        // 20 digits may pass 2^64 - 1: compare as text of equal length.
        if (text.size() == 20 && text > "18446744073709551615") return range;
        return "";
      },
      "");
}

namespace {

// CLI11's "--op: x not in {a,b}" as "--op: 'x' is not one of a, b" (an
// empty value showed as nothing at all).
std::string ReadableError(const std::string& what) {
  const size_t colon = what.find(": ");
  const size_t not_in = what.rfind(" not in {");
  if (colon == std::string::npos || not_in == std::string::npos ||
      not_in < colon || what.back() != '}') {
    return what;
  }
  const std::string value = what.substr(colon + 2, not_in - colon - 2);
  std::string choices = what.substr(not_in + 9, what.size() - (not_in + 9) - 1);
  for (size_t at = 0; (at = choices.find(',', at)) != std::string::npos;
       at += 2) {
    choices.replace(at, 1, ", ");
  }
  return what.substr(0, colon) + ": '" + value + "' is not one of " + choices;
}

}  // namespace

void UseConventions(CLI::App& app) {
  app.option_defaults()->always_capture_default()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  // One line: what was wrong and where to look (CLI11 prints the whole
  // --help after some errors).
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return a->get_name() + ": " + ReadableError(e.what()) + " (see --help)\n";
  });
  app.formatter(std::make_shared<WordsFormatter>());
  app.add_flag(kPrintFlags,
               "print every flag's value as this run would use it (config-file "
               "form) and exit");
  // Unknown arguments are collected and named by ParseFlags.
  app.allow_extras();
  app.footer("Dashed spellings work too (--batch-size is --batch_size).");
}

int ParseFlags(CLI::App& app, int argc, char** argv) {
  NameTypesInWords(app);
  std::vector<std::string> args;  // CLI11 takes the arguments last first.
  for (int i = argc - 1; i >= 1; --i) {
    const std::string arg = Underscored(app, argv[i]);
    // "--flag=" is the flag with an empty value, as gflags and argparse
    // read it; CLI11 would take the next argument as its value instead.
    if (arg.size() > 3 && arg.compare(0, 2, "--") == 0 && arg.back() == '=' &&
        arg.find('=') == arg.size() - 1) {
      args.push_back("");
      args.push_back(arg.substr(0, arg.size() - 1));
      continue;
    }
    args.push_back(arg);
  }
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // Prints --help, or the failure message.
    return code == 0 ? 0 : kUsageError;
  }
  const std::vector<std::string> extra = app.remaining();
  if (!extra.empty()) {
    const std::string line = UnknownFlagMessage(app, extra.front());
    std::fwrite(line.data(), 1, line.size(), stderr);
    return kUsageError;
  }
  if (app.get_option(kPrintFlags)->count() > 0) {
    std::cout << app.config_to_str(/*default_also=*/true,
                                   /*write_description=*/false);
    return 0;
  }
  return -1;
}

}  // namespace ringlet::cli
