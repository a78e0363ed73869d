"""Where the numbers of notebook 03's prose come from (see lessons.common.prose)."""
from lessons.common.prose import cited, computed, given, shared  # noqa: F401

NUMBERS = [
]
