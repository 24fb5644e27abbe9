// The one error type of data/: a missing, unreadable or malformed file.
//
// These are expected, recoverable conditions (the user pointed at the wrong
// folder), so they are thrown as DataError with a message that names the file,
// says what is wrong and, where it can, what to do next.
#ifndef RINGLET_DATA_DATA_ERROR_H_
#define RINGLET_DATA_DATA_ERROR_H_

#include <stdexcept>
#include <string>

namespace ringlet::data {

class DataError : public std::runtime_error {
 public:
  explicit DataError(const std::string& message)
      : std::runtime_error(message) {}
};

}  // namespace ringlet::data

#endif  // RINGLET_DATA_DATA_ERROR_H_
