// `deltafin serve --api-key-file` and DELTAFIN_API_KEY: the key is required, and it is not in the
// process listing.
#include <QtTest/QtTest>

#include <cstdlib>
#include <fstream>

#include "serve_test_support.h"
#include "support/test_support.h"

using namespace deltafin::test;

class TestServeApiKeyFile : public QObject {
  Q_OBJECT

 private slots:
  void theKeyComesFromTheFileAndStaysOutOfTheProcessListing() {
    const std::string key = "sk-file-only-7f3a9c";
    const std::string file = temp_dir("key") + "/api.key";
    std::ofstream(file) << key << "\n";
    ServerProcess server(
        {"--model-root", fixtures_dir() + "/k3-tiny", "--draft", "off", "--no-snapshots", "--api-key-file", file});
    QVERIFY2(server.ok(), server.output().c_str());
    QVERIFY(server.output().find("API key required") != std::string::npos);
    QCOMPARE(http_request(server.port(), "GET", "/v1/models").status, 401);
    QCOMPARE(http_request(server.port(), "GET", "/v1/models", {}, {"Authorization: Bearer " + key}).status, 200);
    QCOMPARE(http_request(server.port(), "GET", "/v1/models", {}, {"Authorization: Bearer " + key + "x"}).status, 401);
    const std::string cmdline = read_file("/proc/" + std::to_string(server.pid()) + "/cmdline");
    QVERIFY(!cmdline.empty());
    QVERIFY2(cmdline.find(key) == std::string::npos, "the key is visible in the process listing");
  }

  // DELTAFIN_API_KEY: required like --api-key, and (the point of it) not in the process listing.
  void theKeyFromTheEnvironmentIsRequiredAndNotListed() {
    const std::string key = "sk-env-only-41d2";
    ::setenv("DELTAFIN_API_KEY", key.c_str(), 1);
    ServerProcess server({"--model-root", fixtures_dir() + "/k3-tiny", "--draft", "off", "--no-snapshots"});
    ::unsetenv("DELTAFIN_API_KEY");
    QVERIFY2(server.ok(), server.output().c_str());
    QCOMPARE(http_request(server.port(), "GET", "/v1/models").status, 401);
    QCOMPARE(http_request(server.port(), "GET", "/v1/models", {}, {"Authorization: Bearer " + key}).status, 200);
    const std::string cmdline = read_file("/proc/" + std::to_string(server.pid()) + "/cmdline");
    QVERIFY(!cmdline.empty());
    QVERIFY2(cmdline.find(key) == std::string::npos, "the key is visible in the process listing");
  }

  // An option given on the command line wins over the environment: DELTAFIN_API_KEY exported in
  // the shell (for clients, say) does not stop a server started with --api-key-file.
  void theFileWinsOverTheEnvironment() {
    const std::string file = temp_dir("key") + "/api.key";
    std::ofstream(file) << "sk-from-file-5e1b\n";
    ::setenv("DELTAFIN_API_KEY", "sk-from-env-0c7d", 1);
    ServerProcess server(
        {"--model-root", fixtures_dir() + "/k3-tiny", "--draft", "off", "--no-snapshots", "--api-key-file", file});
    ::unsetenv("DELTAFIN_API_KEY");
    QVERIFY2(server.ok(), server.output().c_str());
    QCOMPARE(http_request(server.port(), "GET", "/v1/models", {}, {"Authorization: Bearer sk-from-file-5e1b"}).status,
             200);
    QCOMPARE(http_request(server.port(), "GET", "/v1/models", {}, {"Authorization: Bearer sk-from-env-0c7d"}).status,
             401);
  }

  void bothKeyOptionsAreRefused() {
    const std::string file = temp_dir("key") + "/api.key";
    std::ofstream(file) << "sk-a\n";
    RunResult r = run_process({bin_dir() + "/deltafin", "serve", "--model-root", fixtures_dir() + "/k3-tiny", "--port",
                               "0", "--api-key", "sk-b", "--api-key-file", file});
    QVERIFY(r.code != 0);
    QVERIFY2(r.err.find("excludes") != std::string::npos, r.err.c_str());
  }

  void anEmptyKeyFileIsRefused() {
    const std::string file = temp_dir("key") + "/empty.key";
    std::ofstream(file) << "\n";
    RunResult r = run_process({bin_dir() + "/deltafin", "serve", "--model-root", fixtures_dir() + "/k3-tiny", "--port",
                               "0", "--api-key-file", file});
    QVERIFY(r.code != 0);
    QVERIFY2(r.err.find("is empty") != std::string::npos, r.err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestServeApiKeyFile)
#include "test_serve_api_key_file.moc"
