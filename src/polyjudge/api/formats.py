"""The input formats commands offer, each list kept once, next to the reader that reads it.

Light on purpose (no scipy): command modules read these when click builds their options.
"""

from __future__ import annotations

from polyjudge.metaeval.readers import FORMATS as SCORE_FORMATS
from polyjudge.metaeval.readers import SEGMENT_FORMATS as SEGMENT_SCORE_FORMATS
from polyjudge.metaeval.spans.readers import SPAN_FORMATS

__all__ = ["SCORE_FORMATS", "SEGMENT_SCORE_FORMATS", "SPAN_FORMATS"]
