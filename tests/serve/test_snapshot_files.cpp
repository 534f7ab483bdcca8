// The snapshot store's files: owner-only, and a store that cleans up only what it wrote.
#include "runtime/k3_model.h"

#include <QtTest/QtTest>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "serve/snapshot_store.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace deltafin;
using namespace deltafin::serve;

class TestSnapshotFiles : public QObject {
  Q_OBJECT

 private slots:
  // Snapshots hold conversation state: readable by their owner only, whatever the umask.
  void snapshotsAreOwnerOnly() {
    const std::string dir = test::temp_dir("snapmode");
    const mode_t old = ::umask(022);
    save_one(dir);
    ::umask(old);
    int snapshots = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".dfsnap") continue;
      ++snapshots;
      struct stat st {};
      QCOMPARE(::stat(e.path().c_str(), &st), 0);
      QVERIFY2((st.st_mode & 0777) == 0600, qPrintable("snapshot mode is 0" + QString::number(st.st_mode & 0777, 8)));
    }
    QCOMPARE(snapshots, 1);
  }

  // The store cleans up only what it wrote: its own interrupted writes, not every *.tmp.
  void onlyTheStoresOwnTemporariesAreRemoved() {
    const std::string dir = test::temp_dir("snaptmp");
    // Files that are not the store's: a user's notes, another program's temporary.
    std::ofstream(dir + "/notes.tmp") << "mine";
    std::ofstream(dir + "/download.iso.tmp") << "mine too";
    std::ofstream(dir + "/0123456789abcdef-12.dfsnap.tmp") << "an interrupted snapshot write";
    save_one(dir);
    QVERIFY2(fs::exists(dir + "/notes.tmp"), "the store deleted a file it did not write");
    QVERIFY(fs::exists(dir + "/download.iso.tmp"));
    QVERIFY2(!fs::exists(dir + "/0123456789abcdef-12.dfsnap.tmp"), "the store left its own interrupted write");
  }

 private:
  // A store opened on dir (which cleans up) that saves one state of k3-tiny.
  static void save_one(const std::string& dir) {
    auto model = K3Model::load(test::fixtures_dir() + "/k3-tiny");
    K3Session s(*model);
    std::vector<int32_t> ids(12);
    for (int i = 0; i < 12; ++i) ids[static_cast<size_t>(i)] = 20 + i;
    s.prefill(ids);
    SnapshotStore store(dir, 7, uint64_t(1) << 40);
    store.save(ids, s.save_state());
  }
};

QTEST_GUILESS_MAIN(TestSnapshotFiles)
#include "test_snapshot_files.moc"
