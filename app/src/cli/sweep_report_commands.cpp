/// `sweep status` (the trials' states, with Slurm's queue) and `sweep report` (tables and figure).
#include "cli/sweep_commands.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <ostream>

#include "cli/cli.h"
#include "cli/diagram_command.h"
#include "cli/sweep_text.h"
#include "files/atomic_file.h"
#include "model_core/run_config.h"
#include "model_core/sweep.h"
#include "sweeps/slurm_client.h"
#if TENSORSCOPE_WITH_GUI
#include <QBuffer>
#include <QImage>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgRenderer>
#endif

namespace tensorscope::app {
namespace {

namespace fs = std::filesystem;
using model_core::TrialState;
using sweep_text::fixed;
using sweep_text::kUsage;
using sweep_text::pad;

/// Writes the figure as SVG, PNG or PDF. PNG and PDF are rendered into memory and written like the
/// SVG (files::writeFileAtomically): a full disk or any write error throws, naming the file, and
/// leaves the previous figure as it was (QPainter::end() does not report a failed write to a file).
void writeFigure(const std::string& svg, const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".svg") {
    files::writeFileAtomically(path, svg);
    return;
  }
  if (ext != ".png" && ext != ".pdf") throw UsageError("--figure takes FILE.svg, FILE.png or FILE.pdf; got '" + path + "'");
#if TENSORSCOPE_WITH_GUI
  const auto app = ensureOffscreenApplication();
  QSvgRenderer renderer(QByteArray::fromStdString(svg));
  if (!renderer.isValid()) throw std::runtime_error("the report figure is not valid SVG (a bug; please report it)");
  const QSize size = renderer.defaultSize();
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  bool ok = false;
  if (ext == ".png") {
    QImage image(size * 2, QImage::Format_ARGB32);
    image.fill(Qt::white);
    QPainter p(&image);
    renderer.render(&p);
    p.end();
    ok = image.save(&buffer, "PNG");
  } else {
    QPdfWriter pdf(&buffer);
    pdf.setPageSize(QPageSize(QSizeF(size.width() * 0.75, size.height() * 0.75), QPageSize::Point));
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    pdf.setResolution(96);
    QPainter p(&pdf);
    renderer.render(&p, QRectF(0, 0, pdf.width(), pdf.height()));
    ok = p.end();
  }
  buffer.close();
  if (!ok || bytes.isEmpty()) throw std::runtime_error("cannot render the figure " + path + " (" + ext.substr(1) + ")");
  files::writeFileAtomically(path, std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
#else
  throw UsageError("this headless build writes figures as SVG; PNG and PDF need the explorer's build (Qt)");
#endif
}

}  // namespace

int sweepStatusCommand(Args& args, std::ostream& out) {
  const bool json = args.takeFlag("--json");
  const auto pos = args.positionals(1, 1, kUsage);
  const auto plan = model_core::readSweepPlan(pos[0]);
  const auto report = model_core::buildReport(plan);
  if (json) {
    out << model_core::formatReport(report, "json");
    return kExitOk;
  }
  std::string note;
  const auto jobs = model_core::readSlurmJobs(plan.dir);
  const auto queued = sweeps::slurmStates(jobs, note);
  std::map<std::string, int> counts;
  out << "sweep '" << plan.sweep.name << "' (" << model_core::displayText(plan.dir) << "): " << plan.trials.size() << " trials, metric "
      << report.metric << " on " << report.split << "\n";
  std::size_t w = 8;
  for (const auto& t : plan.trials) w = std::max(w, t.name.size() + 2);
  out << pad("trial", w) << pad("state", 13) << pad("step", 14) << report.metric << "\n";
  for (const auto& [t, st] : report.trials) {
    const bool ended = st.state == TrialState::Finished || st.state == TrialState::Failed || st.state == TrialState::Diverged;
    const bool inSlurm = !ended && queued.count(t.index);
    const std::string state = inSlurm && st.state != TrialState::Running ? "queued" : model_core::trialStateName(st.state);
    ++counts[state];
    out << pad(t.name, w) << pad(state, 13)
        << pad(std::to_string(st.step) + "/" + std::to_string(t.config.train.steps), 14);
    if (st.result && st.result->final_metric) out << fixed(*st.result->final_metric, 4);
    else if (!st.damaged.empty()) out << "result.json is damaged (see below)";
    else if (st.result && st.state == TrialState::Failed) out << model_core::displayText(st.result->message).substr(0, 80);
    else if (inSlurm) out << "slurm " << queued.at(t.index);
    else out << "-";
    out << "\n";
  }
  std::string sum;
  for (const auto& [k, n] : counts) sum += (sum.empty() ? "" : ", ") + std::to_string(n) + " " + k;
  out << sum << "\n";
  if (!jobs.empty()) {
    out << "Slurm jobs:";
    for (const auto& j : jobs) out << " " << j.id << " (" << j.indices.size() << " trials)";
    out << "\n";
  }
  if (!note.empty()) out << "(" << model_core::displayText(note) << ")\n";
  for (const auto& [t, st] : report.trials)
    if (!st.damaged.empty()) out << "trial " << t.name << ": " << st.damaged << "\n";
  return kExitOk;
}

int sweepReportCommand(Args& args, std::ostream& out, std::ostream& err) {
  const auto format = args.takeOption("--format");
  const auto file = args.takeOption("--out");
  const auto figure = args.takeOption("--figure");
  const auto x = args.takeOption("--x");
  const auto pos = args.positionals(1, 1, kUsage);
  const auto plan = model_core::readSweepPlan(pos[0]);
  const auto report = model_core::buildReport(plan);
  for (const auto& [t, st] : report.trials)  // reported as failed; said here too, for csv, LaTeX and figures
    if (!st.damaged.empty()) err << "tensorscope: trial " << t.name << ": " << st.damaged << "\n";
  const std::string text = model_core::formatReport(report, format.value_or("md"));
  if (file) {
    files::writeFileAtomically(*file, text);
    out << "wrote " << *file << "\n";
  } else {
    out << text;
  }
  if (figure) {
    writeFigure(model_core::reportFigureSvg(plan, report, x.value_or("parameters")), *figure);
    out << "wrote " << *figure << "\n";
  }
  return kExitOk;
}

}  // namespace tensorscope::app
