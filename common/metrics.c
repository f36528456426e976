/* metrics.c: the metric table's rows (metrics.h), expanded from METRIC_TABLE. */
#include "metrics.h"

#define METRIC_ROW(id, name, unit, agg, pass, label) [id] = { name, unit, agg, pass, label },
const metric_row METRICS[CTR_N] = { METRIC_TABLE(METRIC_ROW) };
#undef METRIC_ROW
