// A grow-only, 64-byte aligned byte buffer: the scratch memory oneDNN's
// primitives read and write, kept from one step to the next so a training
// step allocates nothing once every shape has been seen.
#ifndef RINGLET_NN_OPS_ONEDNN_ALIGNED_BUFFER_H_
#define RINGLET_NN_OPS_ONEDNN_ALIGNED_BUFFER_H_

#include <cstddef>
#include <cstdlib>
#include <new>

namespace ringlet::nn::onednn {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  ~AlignedBuffer() { std::free(data_); }

  // At least `bytes` bytes; the contents are lost when it grows.
  void* Get(size_t bytes) {
    if (bytes > size_) {
      std::free(data_);
      size_ = (bytes + kAlignment - 1) / kAlignment * kAlignment;
      data_ = std::aligned_alloc(kAlignment, size_);
      if (data_ == nullptr) throw std::bad_alloc();
    }
    return data_;
  }

 private:
  static constexpr size_t kAlignment = 64;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ringlet::nn::onednn

#endif  // RINGLET_NN_OPS_ONEDNN_ALIGNED_BUFFER_H_
