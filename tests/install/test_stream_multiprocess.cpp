// One stream install used by several processes at once: `deltafin serve`, a second engine
// (`deltafin run`), `deltafin cache evict --all` in a loop, and a source in this process that
// checks every expert it is handed byte for byte. Every answer must equal the answer of a fresh
// full install of the same fixture, and no hole may ever be served.
//
// Runs DELTAFIN_STREAM_STRESS_SECONDS (default 8) seconds; the 2-minute run is
// `DELTAFIN_STREAM_STRESS_SECONDS=120 ctest -R test_stream_multiprocess`.
#include "runtime/k3_model.h"

#include <QtTest/QtTest>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>

#include "install/setup.h"
#include "model/checkpoint.h"
#include "model/k3_config.h"
#include "serve/serve_test_support.h"
#include "store/stream_expert_source.h"
#include "stream/stream_layout.h"
#include "support/test_support.h"
#include "test_hub.h"

extern char** environ;

using namespace deltafin;
using namespace deltafin::test;

namespace {

struct Quiet : InstallObserver {};

struct Spawned {
  int code = -1;
  std::string out, err;
};

// fork/exec without Qt, so that several threads can run children at once; stderr goes to a file.
Spawned spawn_and_wait(const std::vector<std::string>& argv, const std::string& err_file) {
  Spawned r;
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return r;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    r.err = "cannot start " + argv[0];
    return r;
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    r.out.append(buf, static_cast<size_t>(n));
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err_file);
  return r;
}

// The completion's text; empty with `error` set when the server did not answer with one.
std::string completion(int port, const std::string& prompt, std::string& error) {
  HttpReply r =
      post_json(port, "/v1/completions", {{"model", "k3"}, {"prompt", prompt}, {"max_tokens", 6}, {"temperature", 0}});
  auto j = r.json();
  if (r.status != 200 || !j.is_object() || !j.contains("choices") || !j["choices"][0].contains("text")) {
    error = "HTTP " + std::to_string(r.status) + ": " + r.body;
    return {};
  }
  error.clear();
  return j["choices"][0]["text"].get<std::string>();
}

}  // namespace

class TestStreamMultiprocess : public QObject {
  Q_OBJECT

 private slots:
  void serveRunAndEvictShareOneStreamInstall() {
    const std::string k3 = fixtures_dir() + "/k3-tiny";
    const K3Config cfg = K3Config::load(k3 + "/config.json");
    const uint64_t eb = cfg.expert_bytes();
    TestHub hub;
    hub.add_repo("moonshotai/Kimi-K3", "main", k3);
    hub.add_repo("Inferact/Kimi-K3-DSpark", "main", fixtures_dir() + "/dspark-tiny");
    auto install = [&](SetupOptions::Mode mode, uint64_t cap) {
      SetupOptions s;
      s.mode = mode;
      s.model_root = temp_dir(mode == SetupOptions::Mode::Stream ? "stream" : "full");
      s.hub.base_url = hub.url();
      s.revision = "main";
      s.cache_cap = cap;
      s.space_margin = 0;
      s.tuning.backoff_initial_s = 0.01;
      Quiet q;
      run_setup(s, q, nullptr);
      return s.model_root;
    };
    const std::string full = install(SetupOptions::Mode::Full, 0);
    // A cap of one layer's experts and a few more: every pass evicts.
    const std::string stream = install(SetupOptions::Mode::Stream, uint64_t(cfg.experts) * eb + 4 * eb);
    const std::string bin = bin_dir() + "/deltafin";
    const std::vector<std::string> prompts = {"The capital of France", "Once upon a time", "1 2 3 4"};
    const std::string errs = temp_dir("stderr");

    // References from the full install.
    std::map<std::string, std::string> want_serve, want_run;
    {
      ServerProcess ref(
          {"--model-root", full, "--draft", "off", "--memo-entries", "0", "--no-snapshots", "--model-id", "k3"});
      QVERIFY2(ref.ok(), ref.output().c_str());
      for (const auto& p : prompts) {
        std::string err;
        want_serve[p] = completion(ref.port(), p, err);
        QVERIFY2(err.empty(), err.c_str());
        qInfo("reference: '%s' -> '%s'", p.c_str(), want_serve[p].c_str());
      }
    }
    for (const auto& p : prompts) {
      Spawned r = spawn_and_wait({bin, "run", "--model-root", full, "--prompt", p, "--max-new", "6", "--draft", "off"},
                                 errs + "/ref");
      QVERIFY2(r.code == 0, r.err.c_str());
      want_run[p] = r.out;
      QVERIFY(!r.out.empty());
    }

    ServerProcess server({"--model-root", stream, "--draft", "off", "--memo-entries", "0", "--state-cache-mb", "0",
                          "--no-snapshots", "--model-id", "k3"});
    QVERIFY2(server.ok(), server.output().c_str());

    const char* env = std::getenv("DELTAFIN_STREAM_STRESS_SECONDS");
    const int seconds = env && *env ? std::atoi(env) : 8;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    auto running = [&] { return std::chrono::steady_clock::now() < deadline; };
    std::mutex mu;
    std::vector<std::string> failures;
    auto fail = [&](const std::string& what) {
      std::lock_guard<std::mutex> g(mu);
      if (failures.size() < 20) failures.push_back(what);
    };
    std::atomic<int> answers{0}, runs{0}, evicts{0}, evicts_freeing{0}, probes{0};

    std::thread client([&] {
      for (size_t i = 0; running(); ++i) {
        const std::string& p = prompts[i % prompts.size()];
        std::string err;
        const std::string got = completion(server.port(), p, err);
        if (!err.empty()) fail("serve failed on '" + p + "': " + err);
        else if (got != want_serve[p])
          fail("serve answered '" + got + "' to '" + p + "', the full install '" + want_serve[p] + "'");
        ++answers;
      }
    });
    std::thread evictor([&] {
      while (running()) {
        Spawned r = spawn_and_wait({bin, "cache", "evict", "--all", "--model-root", stream}, errs + "/evict");
        if (r.code != 0) fail("cache evict --all failed: " + r.err);
        else if (r.out.rfind("evicted 0 B", 0) != 0) ++evicts_freeing;
        ++evicts;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    std::thread second([&] {
      for (size_t i = 0; running(); ++i) {
        const std::string& p = prompts[(i + 1) % prompts.size()];
        Spawned r = spawn_and_wait(
            {bin, "run", "--model-root", stream, "--prompt", p, "--max-new", "6", "--draft", "off"}, errs + "/run");
        if (r.code != 0) fail("run failed: " + r.err);
        else if (r.out != want_run[p])
          fail("run printed '" + r.out + "' for '" + p + "', the full install '" + want_run[p] + "'");
        ++runs;
      }
    });
    // A third engine in this process: every expert it is handed must be the fixture's bytes.
    uint64_t holes_caught = 0;
    std::thread prober([&] {
      try {
        auto ck = Checkpoint::open(stream);
        auto ref = Checkpoint::open(full);
        auto loc = expert_locations(*ck, cfg.layers, cfg.experts);
        StreamCacheOptions o;
        o.tuning.backoff_initial_s = 0.01;
        StreamExpertSource src(*ck, loc, stream, o);
        std::vector<int> layers;
        for (int l = 0; l < cfg.layers; ++l)
          if (!loc[static_cast<size_t>(l)].empty()) layers.push_back(l);
        std::mt19937 rng(7);
        while (running()) {
          const int l = layers[rng() % layers.size()];
          std::vector<int> want;
          while (want.size() < 4) {
            const int e = static_cast<int>(rng() % static_cast<unsigned>(cfg.experts));
            if (std::find(want.begin(), want.end(), e) == want.end()) want.push_back(e);
          }
          auto batch = src.request(l, want);
          for (size_t k = 0; k < want.size(); ++k) {
            auto [i, v] = batch->next();
            const ExpertLocation& L = loc[static_cast<size_t>(l)][static_cast<size_t>(want[static_cast<size_t>(i)])];
            const uint8_t* orig = ref->mapping(L.shard).data();
            const uint8_t* parts[6] = {v.w1_packed, v.w1_scale, v.w2_packed, v.w2_scale, v.w3_packed, v.w3_scale};
            for (int p = 0; p < 6; ++p)
              if (std::memcmp(parts[p], orig + L.part_offset[p], L.part_bytes[p]) != 0)
                fail("layer " + std::to_string(l) + " expert " + std::to_string(want[static_cast<size_t>(i)]) +
                     " part " + std::to_string(p) + " was served with bytes that are not the checkpoint's");
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(2));  // computing with them
          ++probes;
        }
        holes_caught = src.holes_caught();
      } catch (const std::exception& e) {
        fail(std::string("the probing engine failed: ") + e.what());
      }
    });
    for (std::thread* t : {&client, &evictor, &second, &prober}) t->join();

    qInfo(
        "%d s: %d server answers, %d second-engine runs, %d evictions (%d of them freed bytes), %d probes of 4 experts",
        seconds, answers.load(), runs.load(), evicts.load(), evicts_freeing.load(), probes.load());
    for (const auto& f : failures) qWarning("%s", f.c_str());
    QVERIFY2(failures.empty(), failures.empty() ? "" : failures.front().c_str());
    QCOMPARE(holes_caught, uint64_t(0));  // the shared table never called a hole present
    QVERIFY(answers > 0 && runs > 0 && probes > 0);
    QVERIFY2(evicts_freeing > 0, "no eviction found anything to evict: the loop did not exercise the cache");
    QVERIFY(server.running());
  }
};

QTEST_GUILESS_MAIN(TestStreamMultiprocess)
#include "test_stream_multiprocess.moc"
