#include "nn/device.h"

#include <algorithm>
#include <cctype>

namespace ringlet::nn {
namespace {

// A whole non-negative decimal number, or -1.
int ParseIndex(const std::string& text) {
  if (text.empty() || text.size() > 6) return -1;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  }
  return std::stoi(text);
}

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

constexpr char kForms[] =
    "use auto, cpu:K (K CPU devices), cpu:I,J (those CPU devices) or "
    "cuda:I[,J...] (a GPU may repeat)";

}  // namespace

std::string ToString(const Device& device) {
  return std::string(device.is_cpu() ? "cpu:" : "cuda:") +
         std::to_string(device.index);
}

std::string ToString(const std::vector<Device>& devices) {
  std::string out = "[";
  for (size_t i = 0; i < devices.size(); ++i) {
    if (i > 0) out += ", ";
    out += ToString(devices[i]);
  }
  return out + "]";
}

Device ParseDevice(const std::string& text) {
  if (text == "cpu") return Device::Cpu(0);
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const int index =
      colon == std::string::npos ? -1 : ParseIndex(text.substr(colon + 1));
  if ((kind == "cpu" || kind == "cuda") && index >= 0) {
    return kind == "cpu" ? Device::Cpu(index) : Device::Cuda(index);
  }
  throw DeviceError("'" + text + "' is not a device; use cpu:N or cuda:N");
}

std::vector<Device> ResolveDevices(const std::string& spec, int usable_gpus,
                                   int cpu_fallback) {
  std::vector<Device> devices;
  if (spec == "auto") {
    for (int i = 0; i < usable_gpus; ++i) devices.push_back(Device::Cuda(i));
    for (int i = 0; usable_gpus == 0 && i < std::max(cpu_fallback, 1); ++i) {
      devices.push_back(Device::Cpu(i));
    }
    return devices;
  }
  const size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string rest =
      colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "cpu" && rest.find(',') != std::string::npos) {
    // cpu:0,1 (or cpu:0,cpu:1): those CPU devices, each once.
    for (std::string part : Split(rest, ',')) {
      if (part.rfind("cpu:", 0) == 0) part = part.substr(4);
      const int index = ParseIndex(part);
      if (index < 0) {
        throw DeviceError("--devices=" + spec + ": '" + part +
                          "' is not a CPU device index; " + kForms);
      }
      const Device device = Device::Cpu(index);
      if (std::find(devices.begin(), devices.end(), device) != devices.end()) {
        throw DeviceError("--devices=" + spec + ": cpu:" + part +
                          " is named twice; a CPU device is one replica "
                          "(for more, name more: cpu:4 is cpu:0 to cpu:3)");
      }
      devices.push_back(device);
    }
    if (static_cast<int>(devices.size()) > kMaxCpuDevices) {
      throw DeviceError("--devices=" + spec + ": at most " +
                        std::to_string(kMaxCpuDevices) +
                        " CPU devices per process");
    }
    return devices;
  }
  if (kind == "cpu") {
    const int count = ParseIndex(rest);
    if (count < 0) {
      throw DeviceError("--devices=" + spec + ": '" + rest +
                        "' is not a whole number of CPU devices, e.g. cpu:2; " +
                        kForms);
    }
    if (count < 1) {
      throw DeviceError("--devices=" + spec +
                        ": cpu needs a count of at "
                        "least 1, e.g. cpu:2; " +
                        kForms);
    }
    if (count > kMaxCpuDevices) {
      throw DeviceError(
          "--devices=" + spec + ": at most " + std::to_string(kMaxCpuDevices) +
          " CPU devices per process (each is a thread with a whole model "
          "replica); use fewer, or more processes under mpirun");
    }
    for (int i = 0; i < count; ++i) devices.push_back(Device::Cpu(i));
    return devices;
  }
  if (kind == "cuda" && !rest.empty()) {
    for (std::string part : Split(rest, ',')) {
      // "cuda:0,1" and "cuda:0,cuda:1" alike.
      if (part.rfind("cuda:", 0) == 0) part = part.substr(5);
      const int index = ParseIndex(part);
      if (index < 0) {
        throw DeviceError("--devices=" + spec + ": '" + part +
                          "' is not a GPU index; " + kForms);
      }
      if (index >= usable_gpus) {
        throw DeviceError(
            "--devices=" + spec + ": cuda:" + std::to_string(index) +
            " does not exist; this machine has " + std::to_string(usable_gpus) +
            " usable GPU" + (usable_gpus == 1 ? "" : "s") +
            (usable_gpus == 0 ? "; use --devices=cpu:2 or --devices=auto"
                              : ""));
      }
      // A GPU may repeat: several replicas share it.
      devices.push_back(Device::Cuda(index));
    }
    return devices;
  }
  throw DeviceError("--devices=" + spec + " is not understood; " + kForms);
}

}  // namespace ringlet::nn
