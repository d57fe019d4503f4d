#include "cmd/training-operator/frameworks.h"

#include "frameworks/mpi/conversion/conversion.h"
#include "frameworks/mpi/v1/register.h"
#include "frameworks/mpi/v2/register.h"
#include "frameworks/mxnet/register.h"
#include "frameworks/paddle/register.h"
#include "frameworks/pytorch/register.h"
#include "frameworks/tensorflow/register.h"
#include "frameworks/xgboost/register.h"

namespace unitrain::operator_cmd {

Status register_frameworks(framework::Registry& registry) {
  // Registration order is the order --help lists them and controllers start.
  for (auto reg : {&frameworks::tensorflow::register_tensorflow, &frameworks::pytorch::register_pytorch,
                   &frameworks::mxnet::register_mxnet, &frameworks::xgboost::register_xgboost,
                   &frameworks::paddle::register_paddle, &frameworks::mpi::v2::register_mpi_v2,
                   &frameworks::mpi::v1::register_mpi_v1}) {
    if (auto s = reg(registry); !s) return s;
  }
  // Served by /convert whenever an MPIJob module is enabled; the CRD uses it only when it serves
  // both versions.
  return frameworks::mpi::conversion::register_mpi_conversion(registry);
}

}  // namespace unitrain::operator_cmd
