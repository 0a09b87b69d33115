"""After retrieval: the evidence graph (document, section, chunk) and passage assembly."""
