#!/usr/bin/env bash
# Installs Debian's chromium for the browser test (examples/http-browser), when it is missing.
# Playwright's own browser download needs the internet; Debian's package only needs apt.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: no chromium and no apt-get; install Chromium and set CHROMIUM_PATH" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "--- installing chromium (apt-get) for the browser test"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
