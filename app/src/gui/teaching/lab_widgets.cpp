/// The labs' shared widget pieces (lab_widgets.h): labels, the controls column's end, the layout.
#include "gui/teaching/lab_widgets.h"

#include <QFont>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>
#include <QWidget>

namespace tensorscope::app::lab_widgets {

namespace {

constexpr const char* kErrorStyle = "color: #d9534f; font-weight: 600;";

QLabel* errorLabel(QWidget* parent) {
  auto* label = wrapped(QString(), parent);
  label->setStyleSheet(QString::fromLatin1(kErrorStyle));
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  label->hide();
  return label;
}

}  // namespace

QLabel* wrapped(const QString& text, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  label->setWordWrap(true);
  return label;
}

QLabel* finishControls(QWidget* controls, QVBoxLayout* left, const QString& about) {
  QLabel* error = errorLabel(controls);
  left->addWidget(error);
  auto* note = wrapped(about, controls);
  {
    QFont f = note->font();
    f.setItalic(true);
    note->setFont(f);
  }
  left->addWidget(note);
  left->addStretch(1);
  controls->setMinimumWidth(250);
  controls->setMaximumWidth(330);
  return error;
}

void placeSideBySide(QWidget* lab, QWidget* controls, QWidget* results) {
  auto* top = new QHBoxLayout(lab);
  top->addWidget(controls);
  top->addWidget(results, 1);
}

}  // namespace tensorscope::app::lab_widgets
