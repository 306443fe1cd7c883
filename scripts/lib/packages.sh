# Sourced by the scripts that need Debian packages: ensure_packages NAME PACKAGE... installs the
# missing ones (apt-get update first; root, or sudo) and says so, prefixed by NAME.
ensure_packages() {
  local name=$1
  shift
  local missing=() p sudo=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "$name: all $# packages are installed"
    return
  fi
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "$name: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  echo "$name: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# ensure_locale NAME LOCALE: generates LOCALE (e.g. de_DE.UTF-8) unless the system has it, so a server
# started afterwards can speak it (lc_messages). Needs the locales package, root or sudo.
ensure_locale() {
  local name=$1 wanted=$2 sudo=""
  local short=${wanted/UTF-8/utf8}
  locale -a 2>/dev/null | grep -qx "$short" && return
  ensure_packages "$name" locales
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "$name: generating the $wanted locale"
  $sudo sed -i "s/^# *$wanted UTF-8/$wanted UTF-8/" /etc/locale.gen
  grep -qx "$wanted UTF-8" /etc/locale.gen || echo "$wanted UTF-8" | $sudo tee -a /etc/locale.gen >/dev/null
  $sudo locale-gen >/dev/null
}
