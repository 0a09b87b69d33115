"""Language: identification, normalization and per-language analyzers, shared by every stage."""

from waypost.text.analyzers import Analyzer, Analyzers, analyzers, normalize
from waypost.text.language import UNDETERMINED, LanguageDetector, detector

__all__ = ["UNDETERMINED", "Analyzer", "Analyzers", "LanguageDetector", "analyzers", "detector", "normalize"]
