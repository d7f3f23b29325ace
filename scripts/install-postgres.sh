#!/usr/bin/env bash
# Installs Debian's PostgreSQL server binaries for the durable-run tests (test/dbos), when they are
# missing. The tests start a throwaway cluster of their own; nothing is started here.
set -euo pipefail
for version in 15 16 17; do
  if [ -x "/usr/lib/postgresql/$version/bin/initdb" ]; then exit 0; fi
done
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-postgres: no PostgreSQL server binaries and no apt-get; install PostgreSQL 15+" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "--- installing postgresql (apt-get) for the durable-run tests"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
