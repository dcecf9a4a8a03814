#!/usr/bin/env bash
# Installs the Debian packages named that are not installed yet (apt-get update first, then
# apt-get install); nothing when every one is there.
#     scripts/apt_install.sh WHO PACKAGE...     WHO names the caller in the message ("setup: installing ...")
set -euo pipefail
who=${1:?usage: apt_install.sh WHO PACKAGE...}
shift
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "$who: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
