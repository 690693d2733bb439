#include "progress.h"

#include <cstdio>
#include <ostream>

namespace tandem::tools {

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return "?";
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

ProgressBar::ProgressBar(std::ostream& out, ProgressMode mode, std::string label, int64_t total)
    : out_(out), mode_(mode), label_(std::move(label)), total_(total), start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

std::string ProgressBar::text(int64_t done, double loss, bool with_bar) const {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : -1;
  std::string bar;
  if (with_bar) {
    constexpr int kWidth = 24;
    const int filled = total_ > 0 ? static_cast<int>(kWidth * done / total_) : kWidth;
    bar = " [" + std::string(static_cast<size_t>(filled), '=') + (filled < kWidth ? ">" : "") +
          std::string(static_cast<size_t>(std::max(0, kWidth - filled - 1)), ' ') + "]";
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, " %6lld/%lld  %7.0f samples/s  loss %.4f  ETA %s", static_cast<long long>(done),
                static_cast<long long>(total_), rate, loss, format_duration(eta).c_str());
  return label_ + bar + buf;
}

void ProgressBar::update(int64_t done, double loss) {
  if (mode_ == ProgressMode::kNone || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (mode_ == ProgressMode::kBar) {
    if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    out_ << '\r' << text(done, loss, true) << "\x1b[K" << std::flush;  // ESC[K: clear the rest of the line
    drawn_ = true;
  } else {
    if (total_ <= 0 || done * 4 < next_quarter_ * total_) return;
    while (next_quarter_ <= 4 && done * 4 >= next_quarter_ * total_) ++next_quarter_;
    out_ << text(done, loss, false) << '\n' << std::flush;
  }
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  if (mode_ == ProgressMode::kBar && drawn_) out_ << '\n' << std::flush;
}

}  // namespace tandem::tools
