// Checkpoint catalog across shards, the real K3 index, and refusal of weights that do not fit the config.
#include <zlib.h>

#include <QElapsedTimer>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "base/error.h"
#include "model/checkpoint.h"
#include "model/safetensors_writer.h"
#include "runtime/k3_model.h"
#include "support/test_support.h"
#include "synth/k3_synth.h"

using namespace deltafin;
namespace fs = std::filesystem;

namespace {

std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw Error("cannot open " + path);
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, n);
  gzclose(f);
  return out;
}

// Rewrites one shard of `dir`, letting `edit` drop (return false) or alter a tensor.
using Edit =
    std::function<bool(const std::string& name, DType& dt, std::vector<int64_t>& shape, std::vector<uint8_t>& bytes)>;
void rewrite_shard(const std::string& dir, const std::string& shard, const Edit& edit) {
  auto t = test::load_tensors(dir + "/" + shard);
  SafetensorsWriter w;
  for (const auto& ti : t.header.tensors) {
    DType dt = ti.dtype;
    std::vector<int64_t> shape = ti.shape;
    const uint8_t* p = t.bytes.data() + t.header.data_start + ti.begin;
    std::vector<uint8_t> bytes(p, p + ti.nbytes());
    if (edit(ti.name, dt, shape, bytes)) w.add_bytes(ti.name, dt, shape, bytes);
  }
  w.write(dir + "/" + shard);
}

std::string shard_of(const std::string& dir, const std::string& tensor) {
  auto ck = Checkpoint::open(dir);
  return ck->shard_names()[ck->find(tensor)->shard];
}

void expect_load_error(const std::string& dir, const std::string& needle) {
  try {
    K3Model::load(dir);
    QFAIL(qPrintable(QString::fromStdString("loaded; expected an error naming " + needle)));
  } catch (const Error& e) {
    QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
  }
}

std::string fresh_synth(const std::string& tag) {
  const std::string dir = test::temp_dir(tag);
  write_k3_synth(synth_preset("tiny-alt"), dir);
  return dir;
}

}  // namespace

class TestCheckpoint : public QObject {
  Q_OBJECT
 private slots:
  void catalogsTinyFixture() {
    auto ck = Checkpoint::open(test::fixtures_dir() + "/k3-tiny");
    QCOMPARE(ck->shard_names().size(), size_t(3));
    const CatalogEntry* e = ck->find("language_model.lm_head.weight");
    QVERIFY(e);
    QCOMPARE(ck->shard_names()[e->shard], std::string("model-00003-of-000003.safetensors"));
    QVERIFY(ck->find("vision_tower.patch_embed.proj.weight"));  // present, and never bound by the runtime
    QVERIFY(!ck->find("language_model.model.layers.99.mlp.gate_proj.weight"));
  }

  void realIndexCatalogsQuickly() {
    const std::string text = gunzip(test::fixtures_dir() + "/k3-real-meta/model.safetensors.index.json.gz");
    QElapsedTimer timer;
    timer.start();
    auto idx = CheckpointIndex::parse(text, "real index");
    qInfo("parsed %zu tensors over %zu shards in %lld ms", idx.tensor_shard.size(), idx.shards.size(),
          static_cast<long long>(timer.elapsed()));
    QCOMPARE(idx.tensor_shard.size(), size_t(497220));
    QCOMPARE(idx.shards.size(), size_t(96));
    QCOMPARE(idx.total_size, uint64_t(1560860324864ull));
    QCOMPARE(idx.shards.front(), std::string("model-00001-of-000096.safetensors"));
    // Text layer L lives in shard L+1; the head in shard 94.
    QCOMPARE(idx.shards[idx.tensor_shard.at("language_model.model.layers.5.input_layernorm.weight")],
             std::string("model-00006-of-000096.safetensors"));
    QCOMPARE(idx.shards[idx.tensor_shard.at("language_model.lm_head.weight")],
             std::string("model-00094-of-000096.safetensors"));
    int experts = 0;
    for (const auto& [name, shard] : idx.tensor_shard)
      if (name.find(".experts.") != std::string::npos && name.ends_with("w1.weight_packed")) ++experts;
    QCOMPARE(experts, 92 * 896);
  }

  void refusesUnsafeShardNames() {
    try {
      CheckpointIndex::parse(R"({"weight_map":{"a":"../../etc/passwd"}})", "idx");
      QFAIL("accepted a path outside the folder");
    } catch (const Error& e) {
      QVERIFY(std::string(e.what()).find("unsafe") != std::string::npos);
    }
  }

  void synthRefusesMoreActiveExpertsThanExpertsBeforeWriting() {
    K3SynthSpec spec = synth_preset("slice-2l");
    apply_synth_override(spec, "experts=2");  // top_k stays 16
    const std::string dir = test::temp_dir("synth-topk") + "/model";
    try {
      write_k3_synth(spec, dir);
      QFAIL("16 active experts of 2 were accepted");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("top_k 16") != std::string::npos, e.what());
    }
    QVERIFY(!std::filesystem::exists(dir));  // nothing written
  }

  void missingTensorIsNamed() {
    const std::string dir = fresh_synth("missing");
    const std::string victim = "language_model.model.layers.2.block_sparse_moe.routed_expert_norm.weight";
    rewrite_shard(
        dir, shard_of(dir, victim),
        [&](const std::string& n, DType&, std::vector<int64_t>&, std::vector<uint8_t>&) { return n != victim; });
    expect_load_error(dir, victim);
  }

  void wrongShapeIsNamed() {
    const std::string dir = fresh_synth("shape");
    const std::string victim = "language_model.model.layers.1.self_attn.f_a_proj.weight";
    rewrite_shard(dir, shard_of(dir, victim),
                  [&](const std::string& n, DType&, std::vector<int64_t>& shape, std::vector<uint8_t>&) {
                    if (n == victim) std::swap(shape[0], shape[1]);
                    return true;
                  });
    expect_load_error(dir, victim);
  }

  void wrongExpertDtypeIsNamed() {
    const std::string dir = fresh_synth("dtype");
    const std::string victim = "language_model.model.layers.3.block_sparse_moe.experts.5.w2.weight_packed";
    rewrite_shard(dir, shard_of(dir, victim),
                  [&](const std::string& n, DType& dt, std::vector<int64_t>& shape, std::vector<uint8_t>&) {
                    if (n == victim) {
                      dt = DType::I8;
                    }
                    return true;
                  });
    expect_load_error(dir, victim);
  }

  void nanScaleIsRefusedWhenUsed() {
    const std::string dir = fresh_synth("nan");
    // Poison every expert's scales in one layer: whatever the router picks hits a 255.
    auto ck = Checkpoint::open(dir);
    const std::string shard = shard_of(dir, "language_model.model.layers.2.block_sparse_moe.experts.0.w1.weight_scale");
    ck.reset();
    rewrite_shard(dir, shard, [&](const std::string& n, DType&, std::vector<int64_t>&, std::vector<uint8_t>& bytes) {
      if (n.find("layers.2.block_sparse_moe.experts.") != std::string::npos && n.ends_with("w2.weight_scale"))
        bytes[0] = 255;
      return true;
    });
    auto model = K3Model::load(dir);
    K3Session s(*model);
    std::vector<float> logits;
    const int32_t ids[2] = {600, 65};
    try {
      s.stage(ids, logits);
      QFAIL("ran with a NaN scale");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("NaN scale") != std::string::npos, e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"
