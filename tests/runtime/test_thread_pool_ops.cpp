// The pool's hand-over (workers that poll, then sleep) covers every index exactly once, call after
// call, with and without polling, with threads that come late for a call; the grouped matmuls give the bits of one
// matmul per matrix.
#include <cstdlib>
#include <cstring>
#include <random>

#include "base/thread_pool.h"
#include "runtime/ops.h"
#include "support/test_support.h"

using namespace deltafin;
using deltafin::test::random_floats;

namespace {

std::vector<uint16_t> random_bf16(size_t n, std::mt19937& rng) {
  std::vector<uint16_t> v(n);
  const std::vector<float> f = random_floats(n, rng);
  for (size_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, &f[i], 4);
    v[i] = uint16_t(b >> 16);
  }
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// Each index of [0, n) visited once per call, over many calls in a row.
void check_cover(ThreadPool& pool, int calls) {
  std::mt19937 rng(7);
  std::vector<int> hits;
  for (int c = 0; c < calls; ++c) {
    const size_t n = 1 + rng() % 700, grain = 1 + rng() % 20;
    hits.assign(n, 0);
    pool.parallel_for(
        n,
        [&](size_t b, size_t e) {
          for (size_t i = b; i < e; ++i) ++hits[i];
        },
        grain);
    for (size_t i = 0; i < n; ++i)
      if (hits[i] != 1)
        QFAIL(qPrintable(QString("call %1: index %2 of %3 visited %4 times").arg(c).arg(i).arg(n).arg(hits[i])));
  }
}

}  // namespace

class TestThreadPoolOps : public QObject {
  Q_OBJECT

 private slots:
  void everyIndexOnceWhilePolling() {
    ::setenv("DELTAFIN_POOL_SPIN_US", "200", 1);  // pools do not poll by default
    for (int threads : {2, 3, 5, 9}) {
      ThreadPool pool(threads);
      check_cover(pool, 3000);
    }
    ::unsetenv("DELTAFIN_POOL_SPIN_US");
  }

  void everyIndexOnceInManyChunks() {
    ::setenv("DELTAFIN_POOL_CHUNKS", "4", 1);
    ::setenv("DELTAFIN_POOL_SPIN_US", "200", 1);
    for (int threads : {2, 3, 7}) {
      ThreadPool pool(threads);
      check_cover(pool, 2000);
    }
    ::unsetenv("DELTAFIN_POOL_SPIN_US");
    ::unsetenv("DELTAFIN_POOL_CHUNKS");
  }

  void everyIndexOnceWhenSleeping() {
    // With no polling every hand-over goes through the condition variables; pauses between calls
    // let the workers fall asleep with polling on too.
    ::setenv("DELTAFIN_POOL_SPIN_US", "0", 1);
    {
      ThreadPool pool(4);
      check_cover(pool, 1000);
    }
    ::setenv("DELTAFIN_POOL_SPIN_US", "50", 1);
    ThreadPool pool(3);
    ::unsetenv("DELTAFIN_POOL_SPIN_US");
    for (int i = 0; i < 5; ++i) {
      check_cover(pool, 20);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  void everyIndexOnceWithLateThreads() {
    // More threads than this machine's cores, chunks that stall now and then, calls back to back:
    // threads that wake late for a call, or stall in a chunk, still cover each index of each call
    // once (the hand-over a faster pool must keep when it stops waiting for every thread).
    for (const char* spin : {"0", "20"}) {
      ::setenv("DELTAFIN_POOL_SPIN_US", spin, 1);
      ThreadPool pool(9);
      std::mt19937 rng(11);
      std::vector<int> hits;
      for (int c = 0; c < 3000; ++c) {
        const size_t n = 1 + rng() % 300;
        const unsigned stall = rng() % 7;
        hits.assign(n, 0);
        pool.parallel_for(n, [&](size_t b, size_t e) {
          if (b % 7 == stall) std::this_thread::sleep_for(std::chrono::microseconds(50));
          for (size_t i = b; i < e; ++i) ++hits[i];
        });
        for (size_t i = 0; i < n; ++i)
          if (hits[i] != 1)
            QFAIL(qPrintable(QString("call %1: index %2 of %3 visited %4 times").arg(c).arg(i).arg(n).arg(hits[i])));
      }
    }
    ::unsetenv("DELTAFIN_POOL_SPIN_US");
  }

  void statsCountTheCallsThatGoOut() {
    // Calls of one chunk run on the caller alone and are not counted; calls that go out to the
    // workers are (their waits are timings, which no test asserts).
    ThreadPool pool(3);
    const ThreadPool::Stats before = pool.stats();
    std::vector<int> v(100, 0);
    for (int c = 0; c < 40; ++c)
      pool.parallel_for(v.size(), [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) ++v[i];
      });
    for (int c = 0; c < 10; ++c)
      pool.parallel_for(
          5, [&](size_t b, size_t e) { v[b] += int(e - b); }, 8);
    const ThreadPool::Stats d = pool.stats() - before;
    QCOMPARE(d.calls, uint64_t(40));
    QCOMPARE(v[50], 40);
  }

  void groupEqualsOneMatmulPerMatrix() {
    std::mt19937 rng(3);
    const int64_t cols = 96;
    const int64_t rows[] = {1100, 37, 64, 513};
    std::vector<std::vector<uint16_t>> w;
    std::vector<Mat> m;
    for (int64_t r : rows) w.push_back(random_bf16(size_t(r * cols), rng));
    for (size_t i = 0; i < w.size(); ++i) m.push_back(Mat{w[i].data(), DType::BF16, rows[i], cols});
    for (int threads : {1, 2, 3}) {
      ThreadPool::set_global_threads(threads);
      for (int T : {1, 5}) {
        const std::vector<float> x = random_floats(size_t(T * cols), rng);
        std::vector<std::vector<float>> one(4), grouped(4);
        for (int i = 0; i < 4; ++i) {
          one[size_t(i)].resize(size_t(T * rows[i]));
          grouped[size_t(i)].assign(size_t(T * rows[i]), -1.f);
          matmul(m[size_t(i)], x.data(), T, one[size_t(i)].data());
        }
        matmul_group({{&m[0], grouped[0].data()},
                      {&m[1], grouped[1].data()},
                      {&m[2], grouped[2].data()},
                      {&m[3], grouped[3].data()}},
                     x.data(), T);
        for (int i = 0; i < 4; ++i)
          QVERIFY2(same_bits(one[size_t(i)], grouped[size_t(i)]),
                   qPrintable(QString("matrix %1, T %2, %3 threads").arg(i).arg(T).arg(threads)));
      }
    }
    ThreadPool::set_global_threads(0);
  }

  // Several experts' products in one spread (rows end to end, 200 + 136 + 200: ranges cross from
  // one product to the next) give each product's bits of one matmul_mxfp4 each.
  void mxfp4ManyEqualsOneMatmulEach() {
    std::mt19937 rng(9);
    const int64_t cols = 64;
    const int64_t rows[3] = {200, 136, 200};
    std::vector<std::vector<uint8_t>> packed(3), scale(3);
    for (int p = 0; p < 3; ++p) {
      packed[size_t(p)].resize(size_t(rows[p] * cols / 2));
      scale[size_t(p)].resize(size_t(rows[p] * cols / 32));
      for (auto& b : packed[size_t(p)]) b = uint8_t(rng());
      for (auto& b : scale[size_t(p)]) b = uint8_t(118 + rng() % 16);
    }
    for (int threads : {1, 2, 3}) {
      ThreadPool::set_global_threads(threads);
      const int T[3] = {1, 3, 2};
      std::vector<std::vector<double>> x(3), want(3), got(3);
      std::vector<Mxfp4Product> group;
      for (int p = 0; p < 3; ++p) {
        for (int i = 0; i < T[p] * cols; ++i) x[size_t(p)].push_back(double(random_floats(1, rng)[0]) / 3.0);
        want[size_t(p)].assign(size_t(T[p] * rows[p]), 0.0);
        got[size_t(p)].assign(size_t(T[p] * rows[p]), -1.0);
        matmul_mxfp4(packed[size_t(p)].data(), scale[size_t(p)].data(), rows[p], cols, x[size_t(p)].data(), T[p],
                     want[size_t(p)].data());
        group.push_back({packed[size_t(p)].data(), scale[size_t(p)].data(), rows[p], cols, x[size_t(p)].data(), T[p],
                         got[size_t(p)].data()});
      }
      matmul_mxfp4_many(group);
      for (int p = 0; p < 3; ++p)
        QVERIFY2(
            std::memcmp(want[size_t(p)].data(), got[size_t(p)].data(), want[size_t(p)].size() * sizeof(double)) == 0,
            qPrintable(QString("product %1, %2 threads").arg(p).arg(threads)));
    }
    ThreadPool::set_global_threads(0);
  }

  // op_totals counts each matrix call's weight bytes once, dense and MXFP4 apart, with its time.
  void opTotalsCountEveryMatrixByte() {
    std::mt19937 rng(4);
    const int64_t rows = 300, cols = 64;
    const std::vector<uint16_t> w = random_bf16(size_t(rows * cols), rng);
    const Mat m{w.data(), DType::BF16, rows, cols};
    std::vector<uint8_t> packed(size_t(rows * cols / 2), 0x35), scale(size_t(rows * cols / 32), 120);
    std::vector<double> x(static_cast<size_t>(cols), 0.5), y(static_cast<size_t>(rows)), y2(static_cast<size_t>(rows));
    const OpTotals before = op_totals();
    matmul(m, x.data(), 1, y.data());
    matmul_group({{&m, y.data()}, {&m, y2.data()}}, x.data(), 1);
    matmul_mxfp4(packed.data(), scale.data(), rows, cols, x.data(), 1, y.data());
    const OpTotals d = op_totals() - before;
    QCOMPARE(d.dense_bytes, uint64_t(3 * rows * cols * 2));
    QCOMPARE(d.mxfp4_bytes, uint64_t(rows * cols / 2 + rows * cols / 32));
    QVERIFY(d.dense_seconds > 0 && d.mxfp4_seconds > 0);
  }

  // The fp64 activation spreads over the pool from 4096 elements: the same bits as one thread.
  void situGluSpreadEqualsOneThread() {
    std::mt19937 rng(3);
    const int64_t n = 20000;
    std::vector<double> g(static_cast<size_t>(n)), u(static_cast<size_t>(n));
    for (auto* v : {&g, &u})
      for (auto& e : *v) e = double(random_floats(1, rng)[0]) * 4.0;
    ThreadPool::set_global_threads(1);
    std::vector<double> one(static_cast<size_t>(n));
    situ_glu(g.data(), u.data(), n, 1.5, 2.5, one.data());
    ThreadPool::set_global_threads(3);
    std::vector<double> many(size_t(n), -1.0);
    situ_glu(g.data(), u.data(), n, 1.5, 2.5, many.data());
    QVERIFY(std::memcmp(one.data(), many.data(), size_t(n) * sizeof(double)) == 0);
    ThreadPool::set_global_threads(0);
  }
};

QTEST_GUILESS_MAIN(TestThreadPoolOps)
#include "test_thread_pool_ops.moc"
