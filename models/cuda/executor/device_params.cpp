#include "models/cuda/executor/device_params.hpp"

#include <stdexcept>

namespace ibt::gpu {

DeviceParams::DeviceParams(const std::vector<models::Param*>& params, MathPrecision precision, cudaStream_t stream)
    : precision_(precision) {
  for (models::Param* p : params) {
    DeviceParamInfo info;
    info.name = p->name;
    info.shape = p->value.shape;
    info.decay = p->decay;
    info.offset = total_;
    info.count = p->value.data.size();
    total_ += info.count;
    index_[p] = info_.size();
    info_.push_back(std::move(info));
  }
  std::vector<float> host(total_);
  for (std::size_t i = 0; i < params.size(); ++i)
    std::copy(params[i]->value.data.begin(), params[i]->value.data.end(), host.begin() + info_[i].offset);
  master_.upload(host.data(), host.size(), stream);
  grad_.resize(total_, stream);
  m_.resize(total_, stream);
  v_.resize(total_, stream);
  grad_.zero(stream);
  m_.zero(stream);
  v_.zero(stream);
  if (precision_ == MathPrecision::bf16) {
    operand_storage_.resize(total_, stream);
    operand_ = operand_storage_.get();
  } else {
    operand_fp32_.resize(total_, stream);
    operand_ = operand_fp32_.get();
  }
  to_operand(master_.get(), operand_, static_cast<std::int64_t>(total_), precision_ == MathPrecision::bf16, stream);
  check_cuda(cudaStreamSynchronize(stream), "uploading the parameters");
}

std::size_t DeviceParams::index_of(const models::Param* p) const {
  auto it = index_.find(p);
  if (it == index_.end()) throw std::logic_error("DeviceParams: parameter " + p->name + " is not on the device");
  return it->second;
}

void DeviceParams::adamw(std::int64_t t, const AdamWParams& config, cudaStream_t stream) {
  const std::size_t bytes = operand_bytes(precision_);
  for (const DeviceParamInfo& p : info_)
    adamw_step(master_.get() + p.offset, grad_.get() + p.offset, m_.get() + p.offset, v_.get() + p.offset,
               static_cast<std::int64_t>(p.count), t, config, p.decay,
               static_cast<unsigned char*>(operand_) + p.offset * bytes, precision_ == MathPrecision::bf16, stream);
}

std::vector<double> DeviceParams::sum_squares_each(bool grads, cudaStream_t stream) {
  DeviceBuffer<double> sums(info_.size(), stream);
  sums.zero(stream);
  for (std::size_t i = 0; i < info_.size(); ++i)
    gpu::sum_squares((grads ? grad_.get() : master_.get()) + info_[i].offset, static_cast<std::int64_t>(info_[i].count),
                     sums.get() + i, stream);
  return sums.download(stream);
}

}  // namespace ibt::gpu
