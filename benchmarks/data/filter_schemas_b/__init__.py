"""Second held-out filter-extraction benchmark: three seeded schemas (stays, laptops, books) and frozen queries."""
