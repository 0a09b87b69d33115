#!/usr/bin/env bash
# PostgreSQL 15 from Debian 12 and pgvector 0.8.0 built from Debian trixie's source package (bookworm has no
# pgvector package). Tests and benchmarks start throwaway clusters from these binaries on 127.0.0.1 only.
set -euo pipefail
PG_BIN=/usr/lib/postgresql/15/bin
PGVECTOR_URL=http://deb.debian.org/debian/pool/main/p/pgvector/pgvector_0.8.0.orig.tar.gz
PGVECTOR_SHA256=867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0

if [ ! -x "$PG_BIN/postgres" ] || [ ! -x "$PG_BIN/pg_config" ]; then
    apt-get update -q
    apt-get install -y -q postgresql-15 postgresql-server-dev-15
fi
if [ -f "$("$PG_BIN/pg_config" --sharedir)/extension/vector--0.8.0.sql" ]; then
    exit 0
fi
# a machine may have the server without its headers, which building pgvector needs
if [ ! -f "$("$PG_BIN/pg_config" --includedir-server)/postgres.h" ]; then
    apt-get update -q
    apt-get install -y -q postgresql-server-dev-15
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsSL -o "$work/pgvector.tar.gz" "$PGVECTOR_URL"
echo "$PGVECTOR_SHA256  $work/pgvector.tar.gz" | sha256sum -c --quiet -
tar -xzf "$work/pgvector.tar.gz" -C "$work"
make -s -C "$work/pgvector-0.8.0" PG_CONFIG="$PG_BIN/pg_config" OPTFLAGS="" >/dev/null
make -s -C "$work/pgvector-0.8.0" PG_CONFIG="$PG_BIN/pg_config" install >/dev/null
echo "pgvector 0.8.0 installed into PostgreSQL 15"
