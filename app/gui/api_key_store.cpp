#include "api_key_store.h"

#include <QCryptographicHash>
#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>
#include <QTimer>

#include <fcntl.h>
#include <unistd.h>

#ifdef DELTAFIN_HAVE_QTKEYCHAIN
#include <qt6keychain/keychain.h>
#endif

namespace deltafin::gui {

namespace {
constexpr const char* kService = "deltafin-studio";

#ifdef DELTAFIN_HAVE_QTKEYCHAIN
// Runs a keychain job to its end; returns its error, and a keychain that does not answer in a
// few seconds counts as none.
QKeychain::Error runJob(QKeychain::Job& job) {
  job.setAutoDelete(false);
  bool done = false;
  QEventLoop loop;
  QObject::connect(&job, &QKeychain::Job::finished, &loop, [&] {
    done = true;
    loop.quit();
  });
  QTimer::singleShot(5000, &loop, &QEventLoop::quit);
  job.start();
  if (!done) loop.exec();
  return done ? job.error() : QKeychain::NoBackendAvailable;
}
#endif
}  // namespace

ApiKeyStore::ApiKeyStore(const QString& settingsFile) {
  QString dir;
  if (settingsFile.isEmpty()) {
    dir = QStandardPaths::writableLocation(QStandardPaths::AppConfigLocation);
    account_ = QStringLiteral("remote-api-key");
  } else {
    dir = QFileInfo(settingsFile).absolutePath();
    // One entry per settings file, so tests never touch the app's own key.
    account_ = QStringLiteral("remote-api-key:") +
               QString::fromLatin1(QCryptographicHash::hash(QFileInfo(settingsFile).absoluteFilePath().toUtf8(),
                                                            QCryptographicHash::Sha256)
                                       .toHex()
                                       .left(16));
  }
  fallback_ = dir + (settingsFile.isEmpty() ? QStringLiteral("/remote-api-key")
                                            : "/" + QFileInfo(settingsFile).completeBaseName() + ".api-key");
}

bool ApiKeyStore::keychainRead(QString& key) {
#ifdef DELTAFIN_HAVE_QTKEYCHAIN
  QKeychain::ReadPasswordJob job(QString::fromLatin1(kService));
  job.setKey(account_);
  const QKeychain::Error e = runJob(job);
  if (e == QKeychain::NoError) {
    key = job.textData();
    return true;
  }
  if (e == QKeychain::EntryNotFound) {
    key.clear();
    return true;
  }
#else
  (void)key;
#endif
  return false;
}

bool ApiKeyStore::keychainWrite(const QString& key) {
#ifdef DELTAFIN_HAVE_QTKEYCHAIN
  if (key.isEmpty()) {
    QKeychain::DeletePasswordJob job(QString::fromLatin1(kService));
    job.setKey(account_);
    const QKeychain::Error e = runJob(job);
    return e == QKeychain::NoError || e == QKeychain::EntryNotFound;
  }
  QKeychain::WritePasswordJob job(QString::fromLatin1(kService));
  job.setKey(account_);
  job.setTextData(key);
  return runJob(job) == QKeychain::NoError;
#else
  (void)key;
  return false;
#endif
}

QString ApiKeyStore::read() {
  QString key;
  // The file first: it exists only where the keychain failed when the key was saved.
  QFile f(fallback_);
  if (f.open(QIODevice::ReadOnly)) {
    inKeychain_ = false;
    where_ = fallback_;
    return QString::fromUtf8(f.readAll()).trimmed();
  }
  if (keychainRead(key)) {
    inKeychain_ = true;
    where_ = QObject::tr("the system keychain");
    return key;
  }
  inKeychain_ = false;
  where_ = fallback_;
  return {};
}

void ApiKeyStore::write(const QString& key) {
  if (keychainWrite(key)) {
    QFile::remove(fallback_);
    inKeychain_ = true;
    where_ = QObject::tr("the system keychain");
    return;
  }
  inKeychain_ = false;
  where_ = fallback_;
  if (key.isEmpty()) {
    QFile::remove(fallback_);
    return;
  }
  QDir().mkpath(QFileInfo(fallback_).absolutePath());
  // Created owner-only before a byte of the key is written, then renamed into place.
  const QByteArray tmp = QFile::encodeName(fallback_ + QStringLiteral(".new"));
  ::unlink(tmp.constData());
  const int fd = ::open(tmp.constData(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const QByteArray bytes = key.toUtf8();
  const bool ok = ::write(fd, bytes.constData(), static_cast<size_t>(bytes.size())) == bytes.size() && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.constData(), QFile::encodeName(fallback_).constData()) != 0) ::unlink(tmp.constData());
}

}  // namespace deltafin::gui
