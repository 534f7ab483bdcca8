#include "device_choice.h"

#include <QCoreApplication>

#include "deltafin/build_info.h"

#ifdef DELTAFIN_GUI_CUDA_PROBE
#include <string>

#include "cuda/cuda_kernels.h"
#endif

namespace deltafin::gui {
bool cudaDeviceUsable(QString* why, QString* gpuName) {
  if (!build_info::cuda) {
    if (why) *why = QCoreApplication::translate("DeviceChoice", "this build has no CUDA support");
    return false;
  }
#ifdef DELTAFIN_GUI_CUDA_PROBE
  try {
    std::string reason;
    if (!cuda::device_available(&reason)) {
      if (why) *why = QCoreApplication::translate("DeviceChoice", "no usable NVIDIA GPU: %1").arg(QString::fromStdString(reason));
      return false;
    }
    if (gpuName) *gpuName = QString::fromStdString(cuda::device_info().name);
    return true;
  } catch (const std::exception& e) {
    if (why) *why = QCoreApplication::translate("DeviceChoice", "no usable NVIDIA GPU: %1").arg(QString::fromUtf8(e.what()));
    return false;
  }
#else
  if (why) *why = QCoreApplication::translate("DeviceChoice", "this build has no CUDA support");
  return false;
#endif
}

DeviceChoice resolveDevice(const QString& requested) {
  DeviceChoice c{QStringLiteral("CPU"), QString()};
  if (requested == QLatin1String("cpu")) {
    c.reason = QCoreApplication::translate("DeviceChoice", "CPU chosen in Settings");
    return c;
  }
  QString why, gpu;
  if (!cudaDeviceUsable(&why, &gpu)) {
    c.reason = why;
    return c;
  }
  // The CUDA kernels exist (kernels/cuda), but the K3 runtime does not run its passes on them yet.
  c.reason = QCoreApplication::translate("DeviceChoice", "the K3 runtime computes on the CPU in this version; %1 is not used yet").arg(gpu);
  return c;
}

}  // namespace deltafin::gui
