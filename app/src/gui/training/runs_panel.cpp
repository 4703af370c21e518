#include "gui/training/runs_panel.h"

#include <QHBoxLayout>
#include <QListWidget>
#include <QPushButton>
#include <QStyle>
#include <QVBoxLayout>

namespace tensorscope::app {

RunsPanel::RunsPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  list_ = new QListWidget;
  list_->setToolTip("Select a run to edit and train it; tick runs to overlay their curves");
  // A long status (why a design is invalid, who trains a run elsewhere) wraps within the dock;
  // every item's tooltip holds it whole.
  list_->setWordWrap(true);
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  list_->setResizeMode(QListView::Adjust);
  layout->addWidget(list_);
  auto* row = new QHBoxLayout;
  auto* add = new QPushButton("New");
  auto* dup = new QPushButton("Duplicate");
  auto* del = new QPushButton("Remove");
  auto* open = new QPushButton("Open run…");
  add->setToolTip("A new run with the default MHSA design");
  dup->setToolTip("A copy of the selected design, to change one thing and compare");
  del->setToolTip("Remove the selected run from the session (its run directory stays on disk)");
  open->setToolTip("Add a run directory written by `tensorscope train` and show its curves");
  for (auto* b : {add, dup, del, open}) row->addWidget(b);
  layout->addLayout(row);
  connect(add, &QPushButton::clicked, this, &RunsPanel::newRunRequested);
  connect(dup, &QPushButton::clicked, this, &RunsPanel::duplicateRequested);
  connect(del, &QPushButton::clicked, this, [this] { Q_EMIT removeRequested(currentRun()); });
  connect(open, &QPushButton::clicked, this, &RunsPanel::openRunDirectoryRequested);
  connect(list_, &QListWidget::currentRowChanged, this, [this](int row) {
    if (!updating_ && row >= 0) Q_EMIT currentChanged(row);
  });
  connect(list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
    if (!updating_) Q_EMIT overlayChanged(list_->row(item), item->checkState() == Qt::Checked);
  });
}

void RunsPanel::setRuns(const QStringList& names, const QStringList& statuses, const QList<bool>& overlaid, int current,
                        const QStringList& problems, const QStringList& costs) {
  updating_ = true;
  list_->clear();
  for (int i = 0; i < names.size(); ++i) {
    auto* item = new QListWidgetItem(names[i] + "\n" + statuses.value(i), list_);
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(overlaid.value(i, true) ? Qt::Checked : Qt::Unchecked);
    item->setToolTip(names[i] + ": " + statuses.value(i) + (costs.value(i).isEmpty() ? QString() : "\n" + costs.value(i)));
    if (const QString why = problems.value(i); !why.isEmpty()) {
      item->setIcon(style()->standardIcon(QStyle::SP_MessageBoxWarning));
      item->setForeground(QColor(0xb2, 0x18, 0x2b));
      item->setToolTip("This design is invalid and cannot train until it is fixed in the Design dock:\n" + why);
    }
  }
  list_->setCurrentRow(current);
  updating_ = false;
}

int RunsPanel::currentRun() const { return list_->currentRow(); }

}  // namespace tensorscope::app
