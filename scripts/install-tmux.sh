#!/usr/bin/env bash
# Installs Debian's tmux for the chat test (test/chat-terminal.test.ts), when it is missing: the test
# drives `agent-core chat` through a real pseudo-terminal, a tmux pane.
set -euo pipefail
if command -v tmux >/dev/null 2>&1; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-tmux: no tmux and no apt-get; install tmux" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "--- installing tmux (apt-get) for the chat terminal test"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq tmux >/dev/null
