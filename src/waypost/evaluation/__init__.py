"""Evaluation on BEIR-layout datasets: loading, metrics and the runner behind ``waypost eval``."""
