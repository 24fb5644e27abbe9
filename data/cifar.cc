#include "data/cifar.h"

#include <sys/stat.h>

#include <memory>

#include "data/byte_source.h"
#include "data/data_error.h"
#include "host/memory.h"

namespace ringlet::data {
namespace {

int LabelBytes(CifarKind kind) { return kind == CifarKind::k10 ? 1 : 2; }
int Classes(CifarKind kind) { return kind == CifarKind::k10 ? 10 : 100; }
const char* Name(CifarKind kind) {
  return kind == CifarKind::k10 ? "CIFAR-10" : "CIFAR-100";
}

std::vector<std::string> FilesOf(CifarKind kind, const std::string& split) {
  if (kind == CifarKind::k10) {
    if (split == "test") return {"test_batch.bin"};
    std::vector<std::string> files;
    for (int i = 1; i <= 5; ++i) {
      files.push_back("data_batch_" + std::to_string(i) + ".bin");
    }
    return files;
  }
  return {split + ".bin"};
}

}  // namespace

CifarImages ReadCifarBatch(const std::string& path, CifarKind kind,
                           uint64_t max_bytes, bool labels_only) {
  std::unique_ptr<ByteSource> source = OpenBytes(path);
  const int label_bytes = LabelBytes(kind);
  const uint64_t record = label_bytes + kCifarImageBytes;
  const int64_t left = source->remaining();
  if (left >= 0 && (left == 0 || left % record != 0)) {
    throw DataError(path + ": " + std::to_string(left) + " bytes is not a " +
                    "whole number of " + Name(kind) + " records of " +
                    std::to_string(record) + " bytes; is it a " + Name(kind) +
                    " binary batch?");
  }
  if (left > 0 && static_cast<uint64_t>(left) > max_bytes) {
    throw DataError(path + ": " + std::to_string(left) +
                    " bytes, more than "
                    "the " +
                    std::to_string(max_bytes) + "-byte limit");
  }
  CifarImages out;
  out.classes = Classes(kind);
  out.images.type = ElementType::kUint8;
  // The images' buffer, checked against the host's memory before it is
  // allocated: whole for a plain file, doubling as the records of a
  // compressed one arrive.
  auto make_room = [&](uint64_t bytes) {
    const std::string shortfall =
        host::HostMemoryShortfall(static_cast<int64_t>(bytes));
    if (!shortfall.empty()) {
      throw DataError(path + ": its images (" +
                      host::FormatBytes(static_cast<int64_t>(bytes)) +
                      (left >= 0 ? "" : " so far, and more to come") +
                      ") do not fit: " + shortfall +
                      "; use a machine with more memory, or fewer batches");
    }
    out.images.bytes.reserve(bytes);
  };
  if (left > 0 && !labels_only) {
    make_room(left / record * kCifarImageBytes);
    out.labels.reserve(left / record);
  }
  std::vector<uint8_t> buffer(record);
  for (int64_t n = 0;; ++n) {
    const size_t got = source->Read(buffer.data(), record);
    if (got == 0 && n > 0) break;
    if (got != record) {
      throw DataError(path + ": record " + std::to_string(n) + " is cut " +
                      "short (" + std::to_string(got) + " of " +
                      std::to_string(record) + " bytes)");
    }
    if ((n + 1) * record > max_bytes) {
      throw DataError(path + ": more than the " + std::to_string(max_bytes) +
                      "-byte limit");
    }
    const int label = buffer[label_bytes - 1];  // CIFAR-100: the fine one.
    if (label >= out.classes) {
      throw DataError(path + ": record " + std::to_string(n) + " has label " +
                      std::to_string(label) + ", outside 0.." +
                      std::to_string(out.classes - 1) + "; is it a " +
                      Name(kind) + " file?");
    }
    out.labels.push_back(label);
    if (labels_only) continue;
    if (out.images.bytes.capacity() - out.images.bytes.size() <
        kCifarImageBytes) {
      make_room(std::max<uint64_t>(2 * out.images.bytes.capacity(), 1 << 20));
    }
    out.images.bytes.insert(out.images.bytes.end(),
                            buffer.begin() + label_bytes, buffer.end());
  }
  out.images.dims = {static_cast<int64_t>(out.labels.size()), 3, kCifarSide,
                     kCifarSide};
  return out;
}

std::vector<std::string> CifarFiles(const std::string& dir, CifarKind kind,
                                    const std::string& split) {
  if (split != "train" && split != "test") {
    throw DataError("CIFAR split '" + split + "': use train or test");
  }
  std::vector<std::string> paths;
  for (const std::string& name : FilesOf(kind, split)) {
    const std::string path = dir + "/" + name;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      throw DataError(
          path + ": not found; " + Name(kind) + "'s binary version is " +
          (kind == CifarKind::k10 ? "cifar-10-binary.tar.gz"
                                  : "cifar-100-binary.tar.gz") +
          " from https://www.cs.toronto.edu/~kriz/cifar.html: unpack it "
          "and give its folder (" +
          (kind == CifarKind::k10 ? "cifar-10-batches-bin"
                                  : "cifar-100-binary") +
          ")");
    }
    paths.push_back(path);
  }
  return paths;
}

CifarImages LoadCifarSplit(const std::string& dir, CifarKind kind,
                           const std::string& split) {
  CifarImages all;
  all.classes = Classes(kind);
  for (const std::string& path : CifarFiles(dir, kind, split)) {
    CifarImages part = ReadCifarBatch(path, kind);
    all.labels.insert(all.labels.end(), part.labels.begin(), part.labels.end());
    all.images.bytes.insert(all.images.bytes.end(), part.images.bytes.begin(),
                            part.images.bytes.end());
  }
  all.images.dims = {static_cast<int64_t>(all.labels.size()), 3, kCifarSide,
                     kCifarSide};
  return all;
}

}  // namespace ringlet::data
