"""LLM providers behind one protocol, a persistent cache, tolerant structured output and cost accounting.

Every LLM-backed step has an LLM-free default: the provider ``none`` is the default everywhere.
"""

from waypost.llm.base import Completion, LLMError, LLMProvider, Message
from waypost.llm.factory import make_llm

__all__ = ["Completion", "LLMError", "LLMProvider", "Message", "make_llm"]
