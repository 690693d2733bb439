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
  std::snprintf(buf, sizeof buf, "%g", std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

std::string escape(const std::string& s) {
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

/// One panel at (x0, y0) of size w x h.
void panel(std::ostringstream& os, double x0, double y0, double w, double h, const std::string& title,
           const std::string& ylabel, const std::vector<int64_t>& epochs, const std::vector<Series>& series) {
  const double l = x0 + 60, r = x0 + w - 15, t = y0 + 30, b = y0 + h - 45;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : series)
    for (double v : s.y)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi - lo < 1e-9) lo -= 0.5, hi += 0.5;
  const double step = nice_step(hi - lo, 5);
  lo = std::floor(lo / step) * step;
  hi = std::ceil(hi / step) * step;
  const double e0 = epochs.empty() ? 0 : static_cast<double>(epochs.front());
  const double e1 = epochs.empty() ? 1 : std::max(e0 + 1, static_cast<double>(epochs.back()));
  auto X = [&](double e) { return l + (e - e0) / (e1 - e0) * (r - l); };
  auto Y = [&](double v) { return b - (v - lo) / (hi - lo) * (b - t); };
  os << "<text x=\"" << (l + r) / 2 << "\" y=\"" << y0 + 18 << "\" text-anchor=\"middle\" font-size=\"14\">"
     << escape(title) << "</text>\n";
  os << "<rect x=\"" << l << "\" y=\"" << t << "\" width=\"" << r - l << "\" height=\"" << b - t
     << "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (double v = lo; v <= hi + step / 2; v += step) {
    os << "<line x1=\"" << l << "\" x2=\"" << r << "\" y1=\"" << Y(v) << "\" y2=\"" << Y(v)
       << "\" stroke=\"#ddd\"/><text x=\"" << l - 6 << "\" y=\"" << Y(v) + 4
       << "\" text-anchor=\"end\" font-size=\"11\">" << num(v) << "</text>\n";
  }
  const double estep = std::max(1.0, nice_step(e1 - e0, 6));
  for (double e = std::ceil(e0 / estep) * estep; e <= e1 + 1e-9; e += estep)
    os << "<text x=\"" << X(e) << "\" y=\"" << b + 16 << "\" text-anchor=\"middle\" font-size=\"11\">" << num(e)
       << "</text>\n";
  os << "<text x=\"" << (l + r) / 2 << "\" y=\"" << b + 34 << "\" text-anchor=\"middle\" font-size=\"12\">epoch</text>\n";
  os << "<text transform=\"translate(" << x0 + 16 << "," << (t + b) / 2
     << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << escape(ylabel) << "</text>\n";
  double ly = t + 14;
  for (const auto& s : series) {
    os << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"2\" points=\"";
    for (size_t i = 0; i < s.y.size() && i < epochs.size(); ++i)
      os << X(static_cast<double>(epochs[i])) << "," << Y(s.y[i]) << " ";
    os << "\"/>\n";
    for (size_t i = 0; i < s.y.size() && i < epochs.size(); ++i)
      os << "<circle cx=\"" << X(static_cast<double>(epochs[i])) << "\" cy=\"" << Y(s.y[i]) << "\" r=\"3\" fill=\""
         << s.color << "\"/>\n";
    os << "<line x1=\"" << r - 110 << "\" x2=\"" << r - 90 << "\" y1=\"" << ly << "\" y2=\"" << ly << "\" stroke=\""
       << s.color << "\" stroke-width=\"2\"/><text x=\"" << r - 85 << "\" y=\"" << ly + 4 << "\" font-size=\"11\">"
       << escape(s.name) << "</text>\n";
    ly += 16;
  }
}

}  // namespace

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
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"380\" viewBox=\"0 0 900 380\" "
        "font-family=\"sans-serif\">\n<rect width=\"900\" height=\"380\" fill=\"white\"/>\n";
  os << "<text x=\"450\" y=\"20\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">" << escape(title)
     << "</text>\n";
  panel(os, 0, 30, 450, 350, "cross-entropy loss", "loss", epochs, {train, test});
  panel(os, 450, 30, 450, 350, "test accuracy", "accuracy (%)", epochs, {acc});
  os << "</svg>\n";
  return os.str();
}

}  // namespace tandem::tools
