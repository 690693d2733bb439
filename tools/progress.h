#pragma once
// Progress display of `tandem train`: a redrawn bar on a terminal, or plain lines (for
// logs and pipes), or nothing.
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace tandem::tools {

enum class ProgressMode { kBar, kLines, kNone };

/// Progress of one epoch of `total` examples. kBar redraws one line with '\r' at most
/// every 100 ms: "epoch 1/5 [=====>    ]  23040/60000  41.2k samples/s  loss 0.5123
/// ETA 0:03". kLines prints that text (without the bar) at every quarter of the epoch.
class ProgressBar {
 public:
  ProgressBar(std::ostream& out, ProgressMode mode, std::string label, int64_t total);
  /// `done` examples processed so far, running mean loss `loss`.
  void update(int64_t done, double loss);
  /// Ends the bar's line (idempotent).
  void finish();

 private:
  std::string text(int64_t done, double loss, bool with_bar) const;
  std::ostream& out_;
  ProgressMode mode_;
  std::string label_;
  int64_t total_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int next_quarter_ = 1;
  bool drawn_ = false, finished_ = false;
};

/// "m:ss" (or "h:mm:ss") of a duration in seconds.
std::string format_duration(double seconds);

}  // namespace tandem::tools
