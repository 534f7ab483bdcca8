#include "install/text_progress.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "install/disk_space.h"

namespace deltafin {

TextProgress::TextProgress(std::FILE* out, bool json, bool quiet)
    : out_(out), json_(json), quiet_(quiet), tty_(::isatty(::fileno(out)) != 0) {}

void TextProgress::clear_bar() {
  if (bar_shown_) {
    std::fputs("\r\033[K", out_);
    bar_shown_ = false;
  }
}

void TextProgress::on_message(const std::string& text) {
  if (json_) {
    std::fprintf(out_, "%s\n", nlohmann::json{{"event", "message"}, {"text", text}}.dump().c_str());
  } else if (!quiet_) {
    clear_bar();
    std::fprintf(out_, "%s\n", text.c_str());
  }
  std::fflush(out_);
}

void TextProgress::on_progress(const InstallProgress& p) {
  if (json_) {
    std::fprintf(out_, "%s\n",
                 nlohmann::json{{"event", "progress"},
                                {"bytes_done", p.bytes_done},
                                {"bytes_total", p.bytes_total},
                                {"bytes_per_second", p.bytes_per_second},
                                {"eta_seconds", p.eta_seconds},
                                {"files_done", p.files_done},
                                {"files_total", p.files_total},
                                {"current", p.current}}
                     .dump()
                     .c_str());
    std::fflush(out_);
    return;
  }
  if (quiet_) return;
  const double frac = p.bytes_total ? std::min(1.0, double(p.bytes_done) / double(p.bytes_total)) : 0.0;
  const int width = 28, fill = static_cast<int>(frac * width);
  std::string bar(static_cast<size_t>(fill), '#');
  bar.resize(width, '.');
  char line[512];
  std::snprintf(line, sizeof line, "[%s] %5.1f%%  %s / %s  %s/s  ETA %s  %d/%d files", bar.c_str(), frac * 100,
                format_bytes(p.bytes_done).c_str(), format_bytes(p.bytes_total).c_str(),
                format_bytes(uint64_t(p.bytes_per_second)).c_str(), format_duration(p.eta_seconds).c_str(),
                p.files_done, p.files_total);
  if (tty_) {
    std::fprintf(out_, "\r\033[K%s", line);
    bar_shown_ = true;
  } else {
    // Logs get a line every few seconds, not a redraw storm.
    auto now = std::chrono::steady_clock::now();
    if (now - last_plain_ < std::chrono::seconds(5)) return;
    last_plain_ = now;
    std::fprintf(out_, "%s\n", line);
  }
  std::fflush(out_);
}

void TextProgress::on_file(const std::string& repo, const std::string& path, FileState state,
                           const std::string& detail) {
  if (json_) {
    std::fprintf(
        out_, "%s\n",
        nlohmann::json{
            {"event", "file"}, {"repo", repo}, {"path", path}, {"state", file_state_name(state)}, {"detail", detail}}
            .dump()
            .c_str());
    std::fflush(out_);
    return;
  }
  if (quiet_ || state == FileState::Downloading || state == FileState::Verifying || state == FileState::Queued) return;
  clear_bar();
  std::fprintf(out_, "%-9s %s/%s%s%s\n", file_state_name(state), repo.c_str(), path.c_str(), detail.empty() ? "" : ": ",
               detail.c_str());
  std::fflush(out_);
}

void TextProgress::on_error(const std::string& what_failed, const std::string& what_to_do) {
  if (json_) {
    std::fprintf(
        out_, "%s\n",
        nlohmann::json{{"event", "error"}, {"what_failed", what_failed}, {"what_to_do", what_to_do}}.dump().c_str());
  } else {
    clear_bar();
  }
  std::fflush(out_);
}

void TextProgress::on_finished(bool ok) {
  if (json_) std::fprintf(out_, "%s\n", nlohmann::json{{"event", "finished"}, {"ok", ok}}.dump().c_str());
  else if (bar_shown_) {
    std::fputs("\n", out_);
    bar_shown_ = false;
  }
  std::fflush(out_);
}

}  // namespace deltafin
