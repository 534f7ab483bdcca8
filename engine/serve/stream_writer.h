#pragma once
// The wire form of one streamed answer, per API: what goes out before the first delta, for each
// delta, at the end, and on an error. OpenAI chat and completions send `data:` chunks and
// `[DONE]`; the Anthropic Messages and OpenAI Responses APIs send typed events.
#include <memory>
#include <string>

#include "serve/api_error.h"
#include "serve/job_queue.h"
#include "serve/openai_format.h"

namespace deltafin::serve {

class StreamWriter {
 public:
  virtual ~StreamWriter() = default;
  virtual std::string begin() = 0;
  virtual std::string delta(const Delta& d) = 0;
  virtual std::string end(const JobResult& r) = 0;
  virtual std::string error(const ApiError& e) = 0;
};

std::unique_ptr<StreamWriter> make_chat_stream_writer(const ResponseMeta& meta, bool include_usage);
std::unique_ptr<StreamWriter> make_completion_stream_writer(const ResponseMeta& meta, bool include_usage);

// An SSE event with a name (`event: NAME`), as the Anthropic and Responses streams use.
std::string sse_named_event(const std::string& name, const nlohmann::json& data);

}  // namespace deltafin::serve
