"""The knowledge graph: entities and relations extracted from chunks, their communities, kept current."""
