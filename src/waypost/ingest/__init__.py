"""Ingestion: loaders turn files into documents, the chunker cuts them, the pipeline stores them."""

from waypost.ingest.chunker import Chunker
from waypost.ingest.loaders import LoadFailure, load_path
from waypost.ingest.pipeline import Ingestor, IngestReport

__all__ = ["Chunker", "IngestReport", "Ingestor", "LoadFailure", "load_path"]
