//===- ScheduleSvg.cpp - a schedule as a Gantt chart ----------------------===//

#include "runtime/schedules/ScheduleSvg.h"

#include "runtime/schedules/ActionMessages.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <sstream>

namespace pp::runtime {
namespace {

constexpr double kLeft = 80, kTop = 48, kRowHeight = 30, kBoxHeight = 24;
/// The lane under a rank's compute boxes where its data-parallel
/// collectives and activation copies are drawn, when the step has any.
constexpr double kLaneHeight = 14, kLegendStep = 130;
/// Chart width for the whole step, unless the shortest box would be
/// narrower than kMinBox; never wider than kMaxWidth.
constexpr double kWidth = 960, kMinBox = 30, kMaxWidth = 2400;

struct Style {
  ActionKind kind;
  const char *colour;
  const char *legend;
};
constexpr Style kStyles[] = {
    {ActionKind::Forward, "#4e79a7", "F forward"},
    {ActionKind::Backward, "#e15759", "B backward"},
    {ActionKind::BackwardInput, "#f28e2b", "I input gradient"},
    {ActionKind::BackwardWeight, "#59a14f", "W weight gradient"},
    {ActionKind::Eval, "#76b7b2", "E eval"},
    {ActionKind::Optimizer, "#9c755f", "O optimizer"},
    {ActionKind::ReduceGradients, "#b07aa1", "reduce gradients"},
    {ActionKind::GatherParameters, "#edc948", "gather parameters"},
    {ActionKind::ReleaseParameters, "#555555", "release parameters"},
    {ActionKind::OffloadActivations, "#ff9da7", "offload activations"},
    {ActionKind::ReloadActivations, "#86bcb6", "reload activations"},
};

/// Whether `kind` is drawn in the lane under the compute boxes: the
/// actions of the rank's communication and copy streams.
bool inLane(ActionKind kind) { return isDataParallel(kind) || isOffload(kind); }

const char *colourOf(ActionKind kind) {
  for (const Style &style : kStyles)
    if (style.kind == kind)
      return style.colour;
  return "#bab0ac";
}

std::string escaped(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// `seconds` with a unit that keeps 3 significant digits readable.
std::string duration(double seconds) {
  char text[32];
  if (seconds >= 1 || seconds == 0)
    std::snprintf(text, sizeof text, "%.3g s", seconds);
  else if (seconds >= 1e-3)
    std::snprintf(text, sizeof text, "%.3g ms", seconds * 1e3);
  else
    std::snprintf(text, sizeof text, "%.3g us", seconds * 1e6);
  return text;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

/// Whether `action` is drawn as a box in its rank's row: compute actions,
/// and the optimizer when it takes time.
bool drawn(const SimulatedAction &action) {
  return isCompute(action.action.kind) ||
         (action.action.kind == ActionKind::Optimizer &&
          action.end > action.start);
}

/// The box of `action` (its rank's row at `y`, from `x`, `w` wide), with
/// its tooltip and, when it fits, its label.
void drawBox(std::ostringstream &svg, const SimulatedAction &action,
             double first, double x, double y, double w, double height) {
  std::string label = formatAction(action.action);
  svg << "<g><title>rank " << action.rank << ": "
      << describeAction(action.action) << ", " << duration(action.start - first)
      << " to " << duration(action.end - first) << "</title>"
      << "<rect class=\"action "
      << (inLane(action.action.kind)
              ? std::string(actionKindName(action.action.kind))
              : label.substr(0, 1))
      << "\" x=\"" << number(x) << "\" y=\"" << number(y) << "\" width=\""
      << number(w) << "\" height=\"" << number(height) << "\" fill=\""
      << colourOf(action.action.kind) << "\" stroke=\"white\"/>";
  if (w >= 7.0 * label.size() && height >= kBoxHeight)
    svg << "<text x=\"" << number(x + w / 2) << "\" y=\""
        << number(y + height / 2 + 4)
        << "\" text-anchor=\"middle\" fill=\"white\">" << label << "</text>";
  svg << "</g>\n";
}

} // namespace

std::string renderScheduleSvg(const SimulatedStep &step,
                              const PipelineLayout &layout,
                              const std::string &title) {
  double first = 0, shortest = 0;
  bool any = false;
  for (const SimulatedAction &action : step.actions) {
    first = any ? std::min(first, action.start) : action.start;
    any = true;
    double seconds = action.end - action.start;
    if (drawn(action) && seconds > 0 && (shortest == 0 || seconds < shortest))
      shortest = seconds;
  }
  double scale = step.stepSeconds > 0 ? kWidth / step.stepSeconds : 1;
  if (shortest > 0)
    scale = std::max(scale, kMinBox / shortest);
  if (step.stepSeconds > 0)
    scale = std::min(scale, kMaxWidth / step.stepSeconds);
  double chartWidth = step.stepSeconds * scale;
  // The legend: every compute kind, and the lane's kinds the step has.
  std::vector<const Style *> legends;
  for (const Style &style : kStyles)
    if (!inLane(style.kind) ||
        std::any_of(step.actions.begin(), step.actions.end(),
                    [&](const SimulatedAction &action) {
                      return action.action.kind == style.kind;
                    }))
      legends.push_back(&style);
  bool lane =
      std::any_of(legends.begin(), legends.end(),
                  [](const Style *style) { return inLane(style->kind); });
  double rowHeight = kRowHeight + (lane ? kLaneHeight : 0);
  double width = kLeft + chartWidth + 20;
  if (lane)
    width = std::max(width, 10 + legends.size() * kLegendStep);
  double legendTop = kTop + layout.ranks * rowHeight + 28;
  double height = legendTop + 40;

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
      << number(std::max(width, 720.0)) << "\" height=\"" << number(height)
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">"
      << escaped(title) << "</text>\n"
      << "<text x=\"10\" y=\"38\">predicted bubble "
      << number(100 * step.bubbleFraction) << "%, step "
      << duration(step.stepSeconds) << ", " << layout.ranks
      << (layout.ranks == 1 ? " rank, " : " ranks, ") << layout.microbatches
      << " microbatches</text>\n";
  for (int64_t rank = 0; rank < layout.ranks; ++rank) {
    double y = kTop + rank * rowHeight;
    double bottom = y + rowHeight - kRowHeight + kBoxHeight + 2;
    svg << "<text x=\"10\" y=\"" << number(y + kBoxHeight / 2 + 4) << "\">rank "
        << rank << "</text>\n"
        << "<line x1=\"" << number(kLeft) << "\" y1=\"" << number(bottom)
        << "\" x2=\"" << number(kLeft + chartWidth) << "\" y2=\""
        << number(bottom) << "\" stroke=\"#dddddd\"/>\n";
  }
  for (const SimulatedAction &action : step.actions) {
    bool collective = inLane(action.action.kind);
    if (!drawn(action) && !collective)
      continue;
    double x = kLeft + (action.start - first) * scale;
    // A release takes no time: a tick.
    double w = std::max((action.end - action.start) * scale,
                        collective ? 2.0 : 1.0);
    double y = kTop + action.rank * rowHeight;
    if (collective)
      drawBox(svg, action, first, x, y + kBoxHeight + 2, w, kLaneHeight - 4);
    else
      drawBox(svg, action, first, x, y, w, kBoxHeight);
  }
  double x = 10;
  for (const Style *legend : legends) {
    const Style &style = *legend;
    svg << "<rect class=\"legend\" x=\"" << number(x) << "\" y=\""
        << number(legendTop) << "\" width=\"14\" height=\"14\" fill=\""
        << style.colour << "\"/><text x=\"" << number(x + 18) << "\" y=\""
        << number(legendTop + 12) << "\">" << style.legend << "</text>\n";
    x += kLegendStep;
  }
  svg << "</svg>\n";
  return svg.str();
}

} // namespace pp::runtime
