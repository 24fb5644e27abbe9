#include "collectives/testing/rank_threads.h"

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <exception>
#include <thread>

namespace ringlet::collectives::testing {

std::vector<std::string> RunRanks(
    Group& group, const std::function<void(Communicator&)>& body) {
  std::vector<std::string> errors(group.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < group.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        body(*group[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
        if (errors[r].empty()) errors[r] = "(empty message)";
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

Buffer::Buffer(DataType type, size_t count)
    : type_(type), count_(count), bytes_(count * SizeOf(type)) {}

double Buffer::Get(size_t i) const {
  switch (type_) {
    case DataType::kFloat32: {
      float v;
      std::memcpy(&v, &bytes_[i * 4], 4);
      return v;
    }
    case DataType::kFloat64: {
      double v;
      std::memcpy(&v, &bytes_[i * 8], 8);
      return v;
    }
    case DataType::kInt32: {
      int32_t v;
      std::memcpy(&v, &bytes_[i * 4], 4);
      return v;
    }
    case DataType::kBFloat16: {
      Eigen::bfloat16 v;
      std::memcpy(&v, &bytes_[i * 2], 2);
      return static_cast<float>(v);
    }
  }
  return 0;
}

void Buffer::Set(size_t i, double value) {
  switch (type_) {
    case DataType::kFloat32: {
      const float v = static_cast<float>(value);
      std::memcpy(&bytes_[i * 4], &v, 4);
      return;
    }
    case DataType::kFloat64:
      std::memcpy(&bytes_[i * 8], &value, 8);
      return;
    case DataType::kInt32: {
      const int32_t v = static_cast<int32_t>(value);
      std::memcpy(&bytes_[i * 4], &v, 4);
      return;
    }
    case DataType::kBFloat16: {
      const Eigen::bfloat16 v(static_cast<float>(value));
      std::memcpy(&bytes_[i * 2], &v, 2);
      return;
    }
  }
}

double TestValue(int rank, size_t index) {
  return static_cast<double>(
             ((rank * 7 + 3) * (index % 1009) + rank * 13 + index / 1009) %
             251) -
         100.0;
}

double Expected(ReduceOp op, DataType type, int size, size_t index,
                size_t index_offset) {
  const size_t i = index + index_offset;
  double result = TestValue(0, i);
  for (int r = 1; r < size; ++r) {
    const double v = TestValue(r, i);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        result += v;
        break;
      case ReduceOp::kMax:
        result = v > result ? v : result;
        break;
      case ReduceOp::kMin:
        result = v < result ? v : result;
        break;
    }
  }
  if (op == ReduceOp::kAvg) {
    switch (type) {
      case DataType::kFloat32:
        return static_cast<float>(result) / static_cast<float>(size);
      case DataType::kFloat64:
        return result / size;
      case DataType::kInt32:
        return static_cast<int32_t>(result) / size;
      case DataType::kBFloat16:
        return result / size;
    }
  }
  return result;
}

double Tolerance(ReduceOp op, DataType type, int size, size_t index,
                 size_t index_offset) {
  if (type != DataType::kBFloat16) return 0;
  if (op != ReduceOp::kSum && op != ReduceOp::kAvg) return 0;
  double magnitudes = 0;
  for (int r = 0; r < size; ++r) {
    magnitudes += std::fabs(TestValue(r, index + index_offset));
  }
  const double unit = std::ldexp(1.0, -8);  // bfloat16's unit roundoff
  const double sum_error = (size - 1) * unit * magnitudes;
  if (op == ReduceOp::kSum) return sum_error;
  return (sum_error + unit * magnitudes) / size;
}

}  // namespace ringlet::collectives::testing
