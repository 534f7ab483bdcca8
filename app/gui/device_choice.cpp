#include "device_choice.h"

#include <QCoreApplication>

#include "deltafin/backend.h"

namespace deltafin::gui {
bool cudaDeviceUsable(QString* why, QString* gpuName) {
  const CudaProbe p = probe_cuda();
  switch (p.status) {
    case CudaProbe::Status::NotBuilt:
      if (why) *why = QCoreApplication::translate("DeviceChoice", "this build has no CUDA support");
      return false;
    case CudaProbe::Status::NoDevice:
      if (why)
        *why = QCoreApplication::translate("DeviceChoice", "no usable NVIDIA GPU: %1")
                   .arg(QString::fromStdString(p.reason));
      return false;
    case CudaProbe::Status::Usable:
      break;
  }
  if (gpuName) *gpuName = QString::fromStdString(p.gpu_name);
  return true;
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
  // A usable GPU in a CUDA build: the engine runs the K3 session there (and falls back to the
  // CPU, saying why, if the session cannot start).
  c.name = QStringLiteral("CUDA");
  return c;
}

}  // namespace deltafin::gui
