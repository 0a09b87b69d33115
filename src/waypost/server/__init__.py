"""``waypost serve``: the HTTP API (tenants, API keys, ingestion jobs, streamed answers), the playground and MCP."""
