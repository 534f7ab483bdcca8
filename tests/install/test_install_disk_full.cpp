// A download that fills the disk: it stops with a clear message naming the space needed,
// leaves nothing corrupt, and after space is freed resumes and verifies.
//
// The full disk is real: a 4 MiB tmpfs mounted over a temporary folder (needs root, as in the
// project's containers). Where mounting is not allowed the test is skipped, saying so.
#include <QtTest/QtTest>

#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "install/disk_space.h"
#include "install/file_download.h"
#include "install/hub_client.h"
#include "support/test_support.h"
#include "test_hub.h"

namespace fs = std::filesystem;
using namespace deltafin;
using namespace deltafin::test;

namespace {

struct TmpfsMount {
  std::string dir;
  bool mounted = false;
  explicit TmpfsMount(const std::string& d, const char* size) : dir(d) {
    fs::create_directories(dir);
    mounted = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, size) == 0;
  }
  ~TmpfsMount() {
    if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
  }
};

uint64_t free_bytes(const std::string& dir) {
  struct statvfs s {};
  ::statvfs(dir.c_str(), &s);
  return uint64_t(s.f_bavail) * s.f_frsize;
}

}  // namespace

class TestInstallDiskFull : public QObject {
  Q_OBJECT

 private slots:
  void aFullDiskStopsCleanlyAndTheDownloadResumesOnceSpaceIsFree() {
    TmpfsMount mnt(temp_dir("diskfull") + "/mnt", "size=4m");
    if (!mnt.mounted) QSKIP("cannot mount a tmpfs here (needs root): the disk-full test did not run");

    std::string bytes(3u << 20, '\0');
    std::mt19937 rng(11);
    for (auto& c : bytes) c = static_cast<char>(rng());
    TestHub hub;
    hub.add_bytes("org/big", "main", "weights.safetensors", bytes);
    HubOptions ho;
    ho.base_url = hub.url();
    ho.stall_timeout_s = 2;
    HubClient client(ho);
    HubFile file;
    for (const auto& f : client.list_files("org/big", "main"))
      if (f.path == "weights.safetensors") file = f;
    QCOMPARE(file.size, uint64_t(bytes.size()));

    // Leave about half the file's size free.
    const std::string filler = mnt.dir + "/filler";
    {
      std::ofstream out(filler, std::ios::binary);
      std::string chunk(64 * 1024, 'x');
      while (free_bytes(mnt.dir) > (3u << 20) / 2 + chunk.size())
        out.write(chunk.data(), std::streamsize(chunk.size())), out.flush();
    }
    const uint64_t free_before = free_bytes(mnt.dir);
    QVERIFY(free_before < file.size);

    FetchTuning t;
    t.parts = 2;
    t.min_part_bytes = 1 << 20;
    t.backoff_initial_s = 0.01;
    t.checkpoint_interval_s = 0.01;
    const std::string dest = mnt.dir + "/weights.safetensors";
    std::atomic<uint64_t> progress{0};
    std::string error, todo;
    try {
      download_file(
          client, "org/big", "main", file, dest, t, progress, [](FileState, const std::string&) {}, nullptr);
    } catch (const Error& e) {
      error = e.what_failed();
      todo = e.what_to_do();
    }
    QVERIFY2(!error.empty(), "a download larger than the free space succeeded");
    QVERIFY2(error.find("is full") != std::string::npos, error.c_str());
    QVERIFY2(error.find("still to write") != std::string::npos, error.c_str());
    QVERIFY2(todo.find("free at least") != std::string::npos && todo.find("resumes") != std::string::npos,
             todo.c_str());

    // Nothing corrupt: no file at the destination, and the kept state claims only the Hub's bytes.
    QVERIFY(!fs::exists(dest));
    QVERIFY(fs::exists(dest + ".partial"));
    const std::string partial = read_file(dest + ".partial");
    const auto state = nlohmann::json::parse(read_file(dest + ".partial.json"));
    uint64_t kept = 0;
    for (const auto& p : state["parts"]) {
      const uint64_t b = p[0].get<uint64_t>(), done = p[2].get<uint64_t>();
      QVERIFY(partial.compare(b, done, bytes, b, done) == 0);
      kept += done;
    }
    QCOMPARE(partial_bytes(dest, file), kept);
    // The message counts from that state: what is kept, and what the resume still has to write.
    QVERIFY2(
        error.find("the " + format_bytes_exact(kept) + " downloaded and recorded so far are kept") != std::string::npos,
        error.c_str());
    QVERIFY2(error.find(format_bytes_exact(file.size - kept) + " of it still to write") != std::string::npos,
             error.c_str());
    qInfo("%s", error.c_str());

    // Space freed: the same call resumes where the state says and verifies the whole file.
    fs::remove(filler);
    std::string resumed;
    std::atomic<uint64_t> progress2{0};
    download_file(
        client, "org/big", "main", file, dest, t, progress2,
        [&](FileState s, const std::string& d) {
          if (s == FileState::Downloading) resumed = d;
        },
        nullptr);
    QVERIFY(read_file(dest) == bytes);
    QVERIFY(!fs::exists(dest + ".partial") && !fs::exists(dest + ".partial.json"));
    if (kept) QVERIFY2(resumed.find("resuming at " + std::to_string(kept)) != std::string::npos, resumed.c_str());
    qInfo("tmpfs of 4 MiB, %llu bytes free for a %llu-byte file: stopped with %llu bytes kept, resumed and verified",
          static_cast<unsigned long long>(free_before), static_cast<unsigned long long>(file.size),
          static_cast<unsigned long long>(kept));
  }
};

QTEST_GUILESS_MAIN(TestInstallDiskFull)
#include "test_install_disk_full.moc"
