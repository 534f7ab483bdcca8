#include "runtime/speculative_stats.h"

#include <nlohmann/json.hpp>

namespace deltafin {

std::string generate_stats_json(const GenerateStats& st, const std::string& draft_note) {
  nlohmann::ordered_json passes = nlohmann::ordered_json::object();
  for (size_t T = 1; T < st.pass_count.size(); ++T)
    if (st.pass_count[T] > 0)
      passes[std::to_string(T)] = {{"count", st.pass_count[T]},
                                   {"seconds", st.pass_seconds[T]},
                                   {"seconds_per_pass", st.pass_seconds[T] / st.pass_count[T]}};
  nlohmann::ordered_json j = {{"drafter", st.drafter},
                              {"draft_note", draft_note},
                              {"proposed", st.proposed},
                              {"accepted", st.accepted},
                              {"acceptance", st.acceptance_rate()},
                              {"verify_passes", st.verify_passes},
                              {"plain_passes", st.plain_passes},
                              {"passes_by_rows", passes},
                              {"draft_seconds", st.draft_seconds},
                              {"draft_fallback", st.draft_fallback},
                              {"prompt_tokens", st.prompt_tokens},
                              {"new_tokens", st.new_tokens},
                              {"prefill_seconds", st.prefill_seconds},
                              {"decode_seconds", st.decode_seconds},
                              {"decode_tokens_per_second", st.decode_tokens_per_second()}};
  return j.dump();
}

}  // namespace deltafin
