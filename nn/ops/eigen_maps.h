// Eigen views of tensor memory: row-major, no copies.
#ifndef RINGLET_NN_OPS_EIGEN_MAPS_H_
#define RINGLET_NN_OPS_EIGEN_MAPS_H_

#include <Eigen/Core>

namespace ringlet::nn {

using RowMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using VectorMap = Eigen::Map<Eigen::VectorXf>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXf>;

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_EIGEN_MAPS_H_
