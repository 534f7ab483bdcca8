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
  QString why;
  if (!cudaDeviceUsable(&why)) {
    c.reason = why;
    return c;
  }
  // A usable GPU in a CUDA build: the engine worker runs the K3 session there (and falls back to
  // the CPU, saying why, if the session cannot start).
  c.name = QStringLiteral("CUDA");
  return c;
}

}  // namespace deltafin::gui
