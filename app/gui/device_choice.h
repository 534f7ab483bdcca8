#pragma once
// Which device computes, for the device asked for in Settings, and why it is not the GPU when
// it is not. The answer depends on the build (CUDA compiled in or not), the machine (a usable
// NVIDIA GPU or not) and on what the K3 runtime can run on.
#include <QString>

namespace deltafin::gui {

struct DeviceChoice {
  QString name;    // "CPU" or "CUDA"
  QString reason;  // why not the GPU; empty when nothing needs explaining
};

// True when this build has CUDA and a GPU can be used; otherwise *why says what is missing.
bool cudaDeviceUsable(QString* why = nullptr, QString* gpuName = nullptr);
// requested: "auto", "cpu" or "cuda".
DeviceChoice resolveDevice(const QString& requested);

}  // namespace deltafin::gui
