#include "data/file_dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "data/byte_source.h"
#include "data/data_error.h"

namespace ringlet::data {
namespace {

// One open file, read at places from any thread.
class OpenFile {
 public:
  explicit OpenFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
    }
  }
  ~OpenFile() { ::close(fd_); }
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;

  void ReadAt(uint64_t offset, void* out, size_t bytes) const {
    size_t done = 0;
    while (done < bytes) {
      const ssize_t got = ::pread(fd_, static_cast<char*>(out) + done,
                                  bytes - done, offset + done);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        throw DataError(path_ + ": cannot read " + std::to_string(bytes) +
                        " bytes at " + std::to_string(offset) +
                        (got < 0
                             ? std::string(" (") + std::strerror(errno) + ")"
                             : " (the file is shorter than it was)"));
      }
      done += static_cast<size_t>(got);
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Inputs at offset + i * stride in one or more files, targets in memory.
class FileSamples : public Dataset {
 public:
  struct Part {  // Samples [first, first + count) in one file.
    std::shared_ptr<OpenFile> file;
    int64_t first = 0, count = 0;
    uint64_t offset = 0, stride = 0;
  };

  FileSamples(std::vector<Part> parts, SampleSpec input, bool swap,
              Array targets, int64_t classes, const std::string& name)
      : parts_(std::move(parts)),
        input_(std::move(input)),
        swap_(swap),
        targets_(std::move(targets)),
        classes_(classes) {
    for (const Part& p : parts_) n_ += p.count;
    if (targets_.dims.empty() || targets_.dims[0] != n_ ||
        targets_.elements() *
                static_cast<int64_t>(ElementSize(targets_.type)) !=
            static_cast<int64_t>(targets_.bytes.size())) {
      throw DataError(name + ": " + std::to_string(n_) +
                      " inputs but targets " + targets_.Describe());
    }
    target_ = SampleSpec{targets_.type,
                         {targets_.dims.begin() + 1, targets_.dims.end()}};
    CheckClassIds(name, targets_.bytes.data(), target_, n_, classes_);
    CheckFinite(name, targets_.bytes.data(), target_, 0, n_, "target");
  }
  int64_t size() const override { return n_; }
  const SampleSpec& input() const override { return input_; }
  const SampleSpec& target() const override { return target_; }
  int64_t classes() const override { return classes_; }
  void Read(int64_t i, void* input, void* target) const override {
    std::memcpy(target, targets_.bytes.data() + i * target_.bytes(),
                target_.bytes());
    size_t p = 0;
    while (i >= parts_[p].first + parts_[p].count) ++p;
    const Part& part = parts_[p];
    part.file->ReadAt(part.offset + (i - part.first) * part.stride, input,
                      input_.bytes());
    if (swap_) SwapBytes(input, input_.elements(), ElementSize(input_.type));
    // Read in place, a sample is checked when it is read.
    CheckFinite(part.file->path(), input, input_, i - part.first, 1, "input");
  }

 private:
  std::vector<Part> parts_;
  SampleSpec input_, target_;
  bool swap_;
  Array targets_;
  int64_t classes_;
  int64_t n_ = 0;
};

}  // namespace

DatasetPtr FileInputsDataset(const std::string& path, const Array& header,
                             const FileLayout& layout,
                             std::vector<int64_t> sample_shape, Array targets,
                             int64_t classes) {
  if (header.dims.empty()) {
    throw DataError(path + ": inputs need a first dimension, the samples");
  }
  const int64_t n = header.dims[0];
  const std::vector<int64_t> file_sample(header.dims.begin() + 1,
                                         header.dims.end());
  if (ElementsOf(sample_shape, INT64_MAX) !=
      ElementsOf(file_sample, INT64_MAX)) {
    throw DataError(path + ": a sample of shape " +
                    SampleSpec{header.type, sample_shape}.Describe() +
                    " does not hold the file's " +
                    SampleSpec{header.type, file_sample}.Describe());
  }
  FileSamples::Part part;
  part.file = std::make_shared<OpenFile>(path);
  part.count = n;
  part.offset = layout.offset;
  part.stride = SampleSpec{header.type, sample_shape}.bytes();
  return std::make_shared<FileSamples>(
      std::vector<FileSamples::Part>{part},
      SampleSpec{header.type, std::move(sample_shape)}, layout.swap_bytes,
      std::move(targets), classes, path);
}

DatasetPtr CifarFilesDataset(const std::string& dir, CifarKind kind,
                             const std::string& split) {
  const uint64_t label_bytes = kind == CifarKind::k10 ? 1 : 2;
  std::vector<FileSamples::Part> parts;
  std::vector<int32_t> labels;
  int classes = 0;
  for (const std::string& path : CifarFiles(dir, kind, split)) {
    // Every record checked once (size, labels); the images stay put.
    const CifarImages c =
        ReadCifarBatch(path, kind, uint64_t{1} << 40, /*labels_only=*/true);
    classes = c.classes;
    FileSamples::Part part;
    part.file = std::make_shared<OpenFile>(path);
    uint8_t magic[2];
    part.file->ReadAt(0, magic, 2);
    if (magic[0] == 0x1f && magic[1] == 0x8b) {
      throw DataError(path +
                      ": gzip-compressed; CIFAR's images are read in "
                      "place: gunzip it");
    }
    part.first = static_cast<int64_t>(labels.size());
    part.count = static_cast<int64_t>(c.labels.size());
    part.offset = label_bytes;
    part.stride = label_bytes + kCifarImageBytes;
    parts.push_back(part);
    labels.insert(labels.end(), c.labels.begin(), c.labels.end());
  }
  Array targets;
  targets.type = ElementType::kInt32;
  targets.dims = {static_cast<int64_t>(labels.size())};
  targets.bytes.resize(labels.size() * sizeof(int32_t));
  if (!labels.empty()) {
    std::memcpy(targets.bytes.data(), labels.data(), targets.bytes.size());
  }
  return std::make_shared<FileSamples>(
      std::move(parts),
      SampleSpec{ElementType::kUint8, {3, kCifarSide, kCifarSide}},
      /*swap=*/false, std::move(targets), classes, dir + " (" + split + ")");
}

}  // namespace ringlet::data
