#pragma once
// QCustomPlot's public header uses Qt's `signals` and `foreach` keywords, which QT_NO_KEYWORDS
// (needed because LibTorch uses `slots` as an identifier) switches off. Map them for this header only.
#define signals Q_SIGNALS
#define foreach Q_FOREACH
#include <qcustomplot.h>
#undef foreach
#undef signals
