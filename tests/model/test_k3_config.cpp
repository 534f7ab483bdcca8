// config.json of the K3 family: every dimension read, anything unsupported refused by name.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "model/k3_config.h"
#include "support/test_support.h"

using namespace deltafin;
using nlohmann::json;

namespace {

json read_json(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return json::parse(ss.str());
}

void expect_refused(const json& j, const std::string& needle) {
  try {
    K3Config::parse(j.dump(), "config.json");
    QFAIL(qPrintable(QString::fromStdString("accepted; expected refusal naming " + needle)));
  } catch (const Error& e) {
    QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
  }
}

}  // namespace

class TestK3Config : public QObject {
  Q_OBJECT
 private slots:
  void readsTinyFixture() {
    auto c = K3Config::load(test::fixtures_dir() + "/k3-tiny/config.json");
    QCOMPARE(c.hidden, 64);
    QCOMPARE(c.layers, 9);
    QCOMPARE(c.vocab, 1024);
    QCOMPARE(c.experts, 16);
    QCOMPARE(c.top_k, 4);
    QCOMPARE(c.latent, 32);
    QCOMPARE(c.attn_res_block, 3);
    QVERIFY(c.is_mla[3] && c.is_mla[7] && c.is_mla[8] && !c.is_mla[0]);
    QCOMPARE(c.eos_token_id, int64_t(770));
    QVERIFY(!claims_k3_release(c));
  }

  void acceptsRealK3Config() {
    auto c = K3Config::load(test::fixtures_dir() + "/k3-real-meta/config.json");
    QVERIFY(claims_k3_release(c));
    QCOMPARE(c.experts, 896);
    QCOMPARE(c.top_k, 16);
    QCOMPARE(c.vocab, 163840);
    int mla = 0;
    for (bool b : c.is_mla) mla += b;
    QCOMPARE(mla, 24);
    QCOMPARE(c.expert_bytes(), uint64_t(17547264));
    QCOMPARE(c.mla_cache_width(), 576);
  }

  void refusesWhatItCannotHonour() {
    const json base = read_json(test::fixtures_dir() + "/k3-tiny/config.json");
    auto with = [&](const std::function<void(json&)>& f) {
      json j = base;
      f(j);
      return j;
    };
    expect_refused(with([](json& j) { j["text_config"]["hidden_act"] = "gelu"; }), "text_config.hidden_act");
    expect_refused(with([](json& j) { j["text_config"]["num_experts_per_token"] = 17; }), "num_experts_per_token");
    expect_refused(with([](json& j) { j["text_config"]["quantization_config"]["format"] = "int4"; }),
                   "quantization_config.format");
    expect_refused(with([](json& j) {
                     j["text_config"]["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] = 64;
                   }),
                   "group_size");
    expect_refused(with([](json& j) { j["text_config"]["moe_router_activation_func"] = "softmax"; }),
                   "moe_router_activation_func");
    expect_refused(with([](json& j) { j["text_config"].erase("hidden_size"); }), "text_config.hidden_size is missing");
    expect_refused(with([](json& j) { j["text_config"]["hidden_size"] = "64"; }), "must be an integer");
    expect_refused(with([](json& j) {
                     j["text_config"]["linear_attn_config"]["full_attn_layers"] = {4, 8};
                   }),
                   "cover 8 of 9");
    expect_refused(with([](json& j) { j["text_config"]["linear_attn_config"]["kda_layers"].push_back(4); }), "twice");
    expect_refused(with([](json& j) { j["text_config"]["mla_use_nope"] = false; }), "mla_use_nope");
    expect_refused(with([](json& j) { j["text_config"]["num_expert_group"] = 8; }), "num_expert_group");
    expect_refused(with([](json& j) { j["model_type"] = "llama"; }), "model_type");
    expect_refused(json::array(), "not a JSON object");
  }

  void holdsTheReleaseToEveryNumber() {
    const json real = read_json(test::fixtures_dir() + "/k3-real-meta/config.json");
    json j = real;
    j["text_config"]["num_experts"] = 895;
    expect_refused(j, "text_config.num_experts");
    j = real;
    j["text_config"]["kv_lora_rank"] = 256;
    expect_refused(j, "text_config.kv_lora_rank");
    j = real;
    j["text_config"]["linear_attn_config"]["gate_lower_bound"] = -4.0;
    expect_refused(j, "gate_lower_bound");
  }
};

QTEST_GUILESS_MAIN(TestK3Config)
#include "test_k3_config.moc"
