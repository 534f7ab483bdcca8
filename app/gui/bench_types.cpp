#include "bench_types.h"

namespace deltafin::gui {

QJsonObject BenchResult::toJson() const {
  return QJsonObject{{"arm", arm},
                     {"model", model},
                     {"backend", backend},
                     {"when", when.toString(Qt::ISODate)},
                     {"prompt_tokens", promptTokens},
                     {"new_tokens", newTokens},
                     {"repeats", repeats},
                     {"prefill_tokens_per_second", prefillTokensPerSecond},
                     {"decode_tokens_per_second", decodeTokensPerSecond},
                     {"first_token_seconds", firstTokenSeconds},
                     {"ram_hit_rate", ramHitRate},
                     {"disk_read_rate", diskReadRate},
                     {"net_fetch_rate", netFetchRate},
                     {"expert_bytes", static_cast<double>(expertBytes)}};
}

BenchResult BenchResult::fromJson(const QJsonObject& o) {
  BenchResult r;
  r.arm = o.value("arm").toString();
  r.model = o.value("model").toString();
  r.backend = o.value("backend").toString();
  r.when = QDateTime::fromString(o.value("when").toString(), Qt::ISODate);
  r.promptTokens = o.value("prompt_tokens").toInt();
  r.newTokens = o.value("new_tokens").toInt();
  r.repeats = o.value("repeats").toInt();
  r.prefillTokensPerSecond = o.value("prefill_tokens_per_second").toDouble();
  r.decodeTokensPerSecond = o.value("decode_tokens_per_second").toDouble();
  r.firstTokenSeconds = o.value("first_token_seconds").toDouble();
  r.ramHitRate = o.value("ram_hit_rate").toDouble();
  r.diskReadRate = o.value("disk_read_rate").toDouble();
  r.netFetchRate = o.value("net_fetch_rate").toDouble();
  r.expertBytes = static_cast<quint64>(o.value("expert_bytes").toDouble());
  return r;
}

}  // namespace deltafin::gui
