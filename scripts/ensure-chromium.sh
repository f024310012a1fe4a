#!/usr/bin/env bash
# Headless Chromium for the report's browser test, from Debian (a test tool's own browser
# download does not work on machines without general internet access).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  apt_get="apt-get"
elif command -v sudo >/dev/null 2>&1; then
  apt_get="sudo apt-get"
else
  echo "chromium is missing and this user cannot install it: apt-get install chromium" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$apt_get update -qq
$apt_get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
