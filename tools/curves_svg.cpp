// The SVG picture of `tandem train`'s curves: two panels (loss, accuracy) over epochs,
// drawn as polylines with axes, ticks and a legend. Hand-written SVG (a few dozen
// elements) so the picture needs no plotting library at run time.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "train.h"

namespace tandem::tools {

namespace {

struct Series {
  std::string name, color;
  std::vector<double> y;
};

/// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `n` ticks over span.
double nice_step(double span, int n) {
  const double raw = span / n, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / mag;
  return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

std::string num(double v) {
  char buf[32];
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::snprintf(buf, sizeof buf, "%g", std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}


/// Values beyond this magnitude are drawn like nan/inf (a marker, not a point): they
/// would squash the rest of the curve, and their differences overflow.
constexpr double kOffScale = 1e100;

bool drawable(double v) { return std::isfinite(v) && std::abs(v) <= kOffScale; }

/// One panel at (x0, y0) of size w x h: title, legend row (above the plot area, so it never
/// covers a curve), axes with ticks, and one line per series. Non-finite values break the
/// line (a gap) and get a red cross at the top edge labelled with the value.
void panel(std::ostringstream& os, double x0, double y0, double w, double h, const std::string& title,
           const std::string& ylabel, const std::vector<int64_t>& epochs, const std::vector<Series>& series) {
  const double l = x0 + 60, r = x0 + w - 15, t = y0 + 52, b = y0 + h - 45;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : series)
    for (double v : s.y)
      if (drawable(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi - lo < 1e-9 * std::max(1.0, std::abs(hi))) {
    // One value (or all equal): a range around it, wide enough to exist in doubles.
    const double pad = std::max(0.5, 0.1 * std::abs(hi));
    lo -= pad, hi += pad;
  }
  // A margin, so that extreme points sit inside the frame rather than on it.
  const double margin = 0.04 * (hi - lo);
  lo -= margin, hi += margin;
  const double step = nice_step(hi - lo, 5);
  lo = std::floor(lo / step) * step;
  hi = std::ceil(hi / step) * step;
  // One epoch (or none) gets a range around it, so its point sits mid-panel.
  double e0 = epochs.empty() ? 1 : static_cast<double>(epochs.front());
  double e1 = epochs.empty() ? 1 : static_cast<double>(epochs.back());
  if (e1 <= e0) e0 -= 1, e1 = e0 + 2;
  auto X = [&](double e) { return l + (e - e0) / (e1 - e0) * (r - l); };
  auto Y = [&](double v) { return b - (v - lo) / (hi - lo) * (b - t); };
  os << "<text x=\"" << (l + r) / 2 << "\" y=\"" << y0 + 18 << "\" text-anchor=\"middle\" font-size=\"14\">"
     << xml_escape(title) << "</text>\n";
  double lx = l;
  for (const auto& s : series) {
    os << "<line x1=\"" << lx << "\" x2=\"" << lx + 20 << "\" y1=\"" << y0 + 34 << "\" y2=\"" << y0 + 34
       << "\" stroke=\"" << s.color << "\" stroke-width=\"2\"/><text x=\"" << lx + 25 << "\" y=\"" << y0 + 38
       << "\" font-size=\"11\">" << xml_escape(s.name) << "</text>\n";
    lx += 40 + 6.5 * static_cast<double>(s.name.size());
  }
  os << "<rect x=\"" << l << "\" y=\"" << t << "\" width=\"" << r - l << "\" height=\"" << b - t
     << "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (int i = 0; i <= 20; ++i) {
    const double v = lo + i * step;
    if (v > hi + step / 2) break;
    os << "<line x1=\"" << l << "\" x2=\"" << r << "\" y1=\"" << Y(v) << "\" y2=\"" << Y(v)
       << "\" stroke=\"#ddd\"/><text x=\"" << l - 6 << "\" y=\"" << Y(v) + 4
       << "\" text-anchor=\"end\" font-size=\"11\">" << num(v) << "</text>\n";
  }
  const double estep = std::max(1.0, nice_step(e1 - e0, 6));
  for (double e = std::ceil(e0 / estep) * estep; e <= e1 + 1e-9; e += estep)
    if (e >= 1)
      os << "<text x=\"" << X(e) << "\" y=\"" << b + 16 << "\" text-anchor=\"middle\" font-size=\"11\">" << num(e)
         << "</text>\n";
  os << "<text x=\"" << (l + r) / 2 << "\" y=\"" << b + 34 << "\" text-anchor=\"middle\" font-size=\"12\">epoch</text>\n";
  os << "<text transform=\"translate(" << x0 + 16 << "," << (t + b) / 2
     << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << xml_escape(ylabel) << "</text>\n";
  for (size_t si = 0; si < series.size(); ++si) {
    const Series& s = series[si];
    const size_t n = std::min(s.y.size(), epochs.size());
    // Runs of drawable points, one polyline each: a nan/inf leaves a gap.
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j < n && drawable(s.y[j])) ++j;
      if (j - i >= 2) {
        os << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"2\" points=\"";
        for (size_t k = i; k < j; ++k) os << X(static_cast<double>(epochs[k])) << "," << Y(s.y[k]) << " ";
        os << "\"/>\n";
      }
      i = j == i ? i + 1 : j;
    }
    for (size_t i = 0; i < n; ++i) {
      const double x = X(static_cast<double>(epochs[i]));
      if (drawable(s.y[i])) {
        os << "<circle cx=\"" << x << "\" cy=\"" << Y(s.y[i]) << "\" r=\"" << (n == 1 ? 5 : 3) << "\" fill=\""
           << s.color << "\"/>\n";
      } else {
        // The label of each series on its own row; anchored inwards at the panel's edges.
        const char* anchor = x < l + 50 ? "start" : x > r - 50 ? "end" : "middle";
        os << "<path d=\"M" << x - 5 << "," << t + 3 << " l10,10 m0,-10 l-10,10\" stroke=\"#d00\" stroke-width=\"2\"/>"
           << "<text x=\"" << x << "\" y=\"" << t + 26 + 12 * static_cast<double>(si) << "\" text-anchor=\"" << anchor
           << "\" font-size=\"10\" fill=\"#d00\">" << xml_escape(s.name) << " " << num(s.y[i]) << "</text>\n";
      }
    }
  }
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string r;
  for (char ch : s) {
    if (ch == '<') r += "&lt;";
    else if (ch == '>') r += "&gt;";
    else if (ch == '&') r += "&amp;";
    else if (ch == '"') r += "&quot;";
    else r += ch;
  }
  return r;
}

std::string curves_svg(const std::vector<EpochMetrics>& history, const std::string& title) {
  std::vector<int64_t> epochs;
  Series train{"train loss", "#1f77b4", {}}, test{"test loss", "#d62728", {}}, acc{"test accuracy", "#2ca02c", {}};
  for (const auto& m : history) {
    epochs.push_back(m.epoch);
    train.y.push_back(m.train_loss);
    test.y.push_back(m.test_loss);
    acc.y.push_back(100 * m.test_accuracy);
  }
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"400\" viewBox=\"0 0 900 400\" "
        "font-family=\"sans-serif\">\n<rect width=\"900\" height=\"400\" fill=\"white\"/>\n";
  os << "<text x=\"450\" y=\"20\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">" << xml_escape(title)
     << "</text>\n";
  panel(os, 0, 30, 450, 370, "cross-entropy loss", "loss", epochs, {train, test});
  panel(os, 450, 30, 450, 370, "test accuracy", "accuracy (%)", epochs, {acc});
  os << "</svg>\n";
  return os.str();
}

}  // namespace tandem::tools
