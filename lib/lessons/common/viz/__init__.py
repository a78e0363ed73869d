"""Figures shared by every notebook: the lab's style (``style``), shared charts
(``charts``: trace timelines, cost curves, bars, memory bars, loss curves) and the
widgets' common pieces (``controls``) and HTML tables, notes and
answers (``tables``). Each strategy's own figures live beside it
(``lessons.lNN_<name>.figures``). Imports plotly; the core never imports this package.
"""

from .charts import (MEMORY_PARTS, bars, cost_curves, loss_curves, measured_vs_predicted,
                     memory_bars, timeline)
from .tables import answer, note, table
from .style import (ALGORITHM_COLORS, COMM_OP_COLORS, CONTRIBUTION_SCALE, EMPTY_COLOR,
                    FALLBACK_COLORS, KIND_COLORS, NEUTRAL_COLOR, RANK_COLORS, TEMPLATE,
                    VARIANT_COLORS, rank_color)

__all__ = ["answer", "note", "table", "MEMORY_PARTS", "bars", "cost_curves", "loss_curves", "measured_vs_predicted",
           "memory_bars", "timeline", "ALGORITHM_COLORS", "COMM_OP_COLORS", "CONTRIBUTION_SCALE",
           "EMPTY_COLOR", "FALLBACK_COLORS", "KIND_COLORS", "NEUTRAL_COLOR", "RANK_COLORS",
           "TEMPLATE", "VARIANT_COLORS", "rank_color"]
