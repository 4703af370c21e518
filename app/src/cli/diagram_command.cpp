#include "cli/diagram_command.h"

#include <cmath>
#include <memory>
#include <ostream>

#include "cli/cli.h"
#include "model_core/diagram_check.h"
#include "spec/spec_json.h"
#include "spec/tensor_network.h"
#include "spec/validation.h"
#if TENSORSCOPE_WITH_GUI
#include <QApplication>
#include <QFileInfo>

#include "diagram_view/diagram_export.h"
#endif

namespace tensorscope::app {
namespace {

const char* kUsage =
    "tensorscope diagram (--spec S.json | --preset NAME) --format svg|pdf|png|dot|tikz --out FILE\n"
    "                    [--dpi N] [--seq N] [--theme light|dark] [--sizes] [--no-title]\n"
    "       tensorscope diagram (--spec S.json | --preset NAME) --check [--batch B] [--seq N] [--seed S]\n"
    "                    [--positions rotary|rotary_interleaved]";

/// Reads the spec named by --spec or --preset; prints the problems and returns false if unusable.
bool loadSpec(const std::optional<std::string>& path, const std::optional<std::string>& preset,
              spec::AttentionSpec& out, std::ostream& err) {
  if (preset) {
    try {
      out = spec::makeSpecPreset(*preset);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    return true;
  }
  std::vector<spec::Issue> issues;
  try {
    out = spec::readSpecFile(*path);
    issues = spec::validate(out);
  } catch (const spec::SpecError& e) {
    issues = e.issues();
  }
  if (issues.empty()) return true;
  err << *path << ": invalid spec\n" << spec::formatIssues(issues) << "\n";
  return false;
}



int check(const spec::AttentionSpec& s, Args& args, std::int64_t seq, const std::string& what, std::ostream& out,
          std::ostream& err) {
  const auto batch = args.takeInt("--batch", 1, 64).value_or(2);
  const auto seed = args.takeInt("--seed", 0, (1LL << 62)).value_or(0);
  // The layer in a model with rotary positions (contract §9): its queries and keys turned, the
  // turns drawn on the diagram.
  const std::string positions = args.takeOption("--positions").value_or("");
  if (!positions.empty() && positions != "rotary" && positions != "rotary_interleaved")
    throw UsageError("unknown --positions '" + positions + "' (rotary or rotary_interleaved)\nusage: " +
                     std::string(kUsage));
  args.positionals(0, 0, kUsage);
  const auto r = model_core::checkDiagram(s, batch, seq, static_cast<std::uint64_t>(seed), positions);
  std::ostream& to = r.ok ? out : err;
  to << "diagram check " << what << ": " << (r.ok ? "ok" : "FAILED") << "\n";
  if (std::isfinite(r.max_abs_diff_y) || std::isfinite(r.max_abs_diff_maps))  // both infinite: nothing was compared
    to << "  max |y_diagram - y_module|       = " << r.max_abs_diff_y << "\n"
       << "  max |maps_diagram - maps_module| = " << r.max_abs_diff_maps << "\n";
  if (!r.message.empty()) to << "  " << r.message << "\n";
  return r.ok ? kExitOk : kExitFailure;
}

}  // namespace

int runDiagramCommand(Args& args, std::ostream& out, std::ostream& err) {
  const auto specPath = args.takeOption("--spec");
  const auto preset = args.takeOption("--preset");
  const bool checkOnly = args.takeFlag("--check");
  const auto seqOption = args.takeInt("--seq", 1, 4096);
  if (specPath.has_value() == preset.has_value())
    throw UsageError("diagram needs exactly one of --spec and --preset\nusage: " + std::string(kUsage));

  spec::AttentionSpec s;
  if (!loadSpec(specPath, preset, s, err)) return kExitFailure;
  const std::int64_t seq = seqOption.value_or(s.sizes.seq_len);
  const std::string what = preset ? *preset : *specPath;
  if (checkOnly) return check(s, args, seq, what, out, err);

#if !TENSORSCOPE_WITH_GUI
  err << "tensorscope: this is a headless build (TENSORSCOPE_BUILD_GUI=OFF): diagrams can be checked with --check "
         "but not drawn; build with the GUI (Qt, Graphviz) to export them\n";
  return kExitFailure;
#else
  const auto formatText = args.takeOption("--format");
  const auto outPath = args.takeOption("--out");
  const auto dpi = args.takeInt("--dpi", 10, 2400);
  const auto themeText = args.takeOption("--theme");
  const bool sizes = args.takeFlag("--sizes");
  const bool noTitle = args.takeFlag("--no-title");
  args.positionals(0, 0, kUsage);
  if (!formatText || !outPath) throw UsageError("diagram needs --format and --out (or --check)\nusage: " + std::string(kUsage));
  const auto format = diagram_view::parseExportFormat(*formatText);
  if (!format) throw UsageError("unknown --format '" + *formatText + "' (svg, pdf, png, dot, tikz)");
  if (dpi && *format != diagram_view::ExportFormat::Png) throw UsageError("--dpi applies to --format png only");
  diagram_view::ExportOptions options;
  if (themeText) {
    const auto theme = diagram_view::parseTheme(*themeText);
    if (!theme) throw UsageError("unknown --theme '" + *themeText + "' (light, dark)");
    options.diagram.theme = *theme;
  }
  options.diagram.show_sizes = sizes;
  options.diagram.show_title = !noTitle;
  options.dpi = static_cast<double>(dpi.value_or(300));

  const auto network = spec::buildTensorNetwork(s, seq);
  const bool rendered = *format == diagram_view::ExportFormat::Svg || *format == diagram_view::ExportFormat::Pdf ||
                        *format == diagram_view::ExportFormat::Png;
  const auto app = rendered ? ensureOffscreenApplication() : nullptr;
  const QString path = QString::fromStdString(*outPath);
  diagram_view::exportDiagram(network, *format, path, options);
  out << "wrote " << *outPath << " (" << *formatText << ", " << network.nodes.size() << " tensors, "
      << network.boxes.size() << " box" << (network.boxes.size() == 1 ? "" : "es") << ", "
      << QFileInfo(path).size() << " bytes)\n";
  return kExitOk;
#endif
}

#if TENSORSCOPE_WITH_GUI
std::shared_ptr<void> ensureOffscreenApplication() {
  if (QCoreApplication::instance()) return nullptr;
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  static int argc = 1;
  static char name[] = "tensorscope";
  static char* argv[] = {name, nullptr};
  return std::make_shared<QApplication>(argc, argv);
}
#endif

}  // namespace tensorscope::app
